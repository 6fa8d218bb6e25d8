#include "gpu_times/gpu_times.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common.h"
#include "config.h"
#include "interpose/call_context.h"
#include "interpose/real_functions.h"
#include "thread_exit.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::gpu_times {
namespace {

using namespace asyncwatch::cuda;
using namespace asyncwatch::trace;

using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using EventCreateFn = CUresult (*)(CUevent*, unsigned);
using EventRecordFn = CUresult (*)(CUevent, CUstream);
using EventFn = CUresult (*)(CUevent);
using ElapsedFn = CUresult (*)(float*, CUevent, CUevent);
using StreamCreateFn = CUresult (*)(CUstream*, unsigned);

struct Driver {
  CtxGetCurrentFn ctx_get_current;
  EventCreateFn event_create;
  EventRecordFn event_record;
  EventRecordFn event_record_ptsz;  // may be null
  EventFn event_query;
  EventFn event_synchronize;
  EventFn event_destroy;
  ElapsedFn elapsed;
  StreamCreateFn stream_create;
};
std::atomic<int> g_driver_state{0};  // 0 not looked up, 1 ready, 2 unavailable
Driver g_driver;

const Driver* driver() noexcept {
  int s = g_driver_state.load(std::memory_order_acquire);
  if (AW_LIKELY(s == 1)) return &g_driver;
  if (s == 2) return nullptr;
  Driver d{};
  d.ctx_get_current = reinterpret_cast<CtxGetCurrentFn>(real::driver_helper("cuCtxGetCurrent"));
  d.event_create = reinterpret_cast<EventCreateFn>(real::driver_helper("cuEventCreate"));
  d.event_record = reinterpret_cast<EventRecordFn>(real::driver_helper("cuEventRecord"));
  d.event_record_ptsz = reinterpret_cast<EventRecordFn>(real::driver_helper("cuEventRecord_ptsz"));
  d.event_query = reinterpret_cast<EventFn>(real::driver_helper("cuEventQuery"));
  d.event_synchronize = reinterpret_cast<EventFn>(real::driver_helper("cuEventSynchronize"));
  d.event_destroy = reinterpret_cast<EventFn>(real::driver_helper("cuEventDestroy_v2"));
  d.elapsed = reinterpret_cast<ElapsedFn>(real::driver_helper("cuEventElapsedTime_v2"));
  if (!d.elapsed) d.elapsed = reinterpret_cast<ElapsedFn>(real::driver_helper("cuEventElapsedTime"));
  d.stream_create = reinterpret_cast<StreamCreateFn>(real::driver_helper("cuStreamCreate"));
  if (!d.ctx_get_current || !d.event_create || !d.event_record || !d.event_query || !d.event_synchronize ||
      !d.event_destroy || !d.elapsed || !d.stream_create)
    return nullptr;  // the driver is not loaded yet: look again on a later call
  g_driver = d;
  g_driver_state.store(1, std::memory_order_release);
  return &g_driver;
}

constexpr uint32_t kSlots = 256;  // operations pending per thread; beyond, new ones are not timed
constexpr uint32_t kRefs = 4;     // reference events kept (a pair needs the one current when recorded)
constexpr uint32_t kDrainPerCall = 8;
constexpr uint64_t kRecalibrateNs = 1'000'000'000;

struct Slot {
  CUevent start, end;
  CUcontext ctx;
  uint64_t stream;
  uint64_t before_ns, after_ns;
  uint32_t ref, ref_serial;
  uint8_t op, stream_kind;
};
struct Ref {
  CUevent event;
  CUcontext ctx;
  uint64_t host_ns;
  uint32_t serial;
};
struct ThreadState {
  Slot* ring;           // kSlots, calloc'd on first use
  uint32_t head, tail;  // pending = [head, tail)
  uint32_t generation;  // trace generation: reset after fork
  Ref refs[kRefs];
  uint32_t current_ref;  // index into refs, valid when refs[current_ref].event
  uint32_t next_serial;
  CUstream private_stream;
  CUcontext private_ctx;
  uint64_t dropped;
};
AW_TLS ThreadState tl;
std::atomic<bool> g_atexit_registered{false};

bool usable() noexcept {
  return !calls::thread_state().reentrant && !calls::any_capture_active() && trace_writer::is_active_or_opening();
}

void write_clock(const Ref* r, uint64_t uncertainty) noexcept {
  if (!trace_writer::is_active_or_opening()) return;
  GpuClockRecord c{};
  c.h.type = static_cast<uint16_t>(RecordType::GpuClock);
  c.h.size = sizeof c;
  c.host_ns = r ? r->host_ns : 0;
  c.uncertainty_ns = uncertainty;
  c.spans_dropped = tl.dropped;
  thread_buffer::write(&c);
}

void destroy(const Driver* d, CUevent& e) noexcept {
  if (e) d->event_destroy(e);
  e = nullptr;
}

// A fresh reference for `ctx`: its own event (a pending pair keeps using the one it was recorded
// against), recorded on the private stream and synchronized.
bool calibrate(const Driver* d, CUcontext ctx) noexcept {
  if (tl.private_ctx != ctx || !tl.private_stream) {
    // One non-blocking stream per thread and context (not synchronized with the legacy default
    // stream, so the application's ordering is unchanged). A stream of a previous context is left
    // to that context's teardown.
    CUstream s = nullptr;
    if (d->stream_create(&s, 1 /* CU_STREAM_NON_BLOCKING */) != CUDA_SUCCESS) return false;
    tl.private_stream = s;
    tl.private_ctx = ctx;
  }
  uint32_t i = (tl.current_ref + 1) % kRefs;
  Ref& r = tl.refs[i];
  if (r.event && r.ctx != ctx) destroy(d, r.event);
  if (!r.event && d->event_create(&r.event, 0) != CUDA_SUCCESS) {
    r.event = nullptr;
    return false;
  }
  r.ctx = ctx;
  uint64_t t0 = now_ns();
  if (d->event_record(r.event, tl.private_stream) != CUDA_SUCCESS || d->event_synchronize(r.event) != CUDA_SUCCESS) {
    destroy(d, r.event);
    return false;
  }
  uint64_t t1 = now_ns();
  r.host_ns = t0 + (t1 - t0) / 2;
  r.serial = ++tl.next_serial;
  tl.current_ref = i;
  write_clock(&r, (t1 - t0) / 2);
  return true;
}

// The nearest nanosecond, halves away from zero (llround's rule), without libm: the library needs
// no libm, so none enters the global scope ahead of the application's own libraries
// (docs/performance.md, "The library's dependencies in the global scope").
int64_t ms_to_ns(float ms) noexcept {
  const double ns = static_cast<double>(ms) * 1e6;
  if (!(ns > -9.0e18 && ns < 9.0e18)) return 0;  // NaN, or beyond int64_t
  auto whole = static_cast<int64_t>(ns);         // toward zero
  const double rest = ns - static_cast<double>(whole);
  if (rest >= 0.5)
    ++whole;
  else if (rest <= -0.5)
    --whole;
  return whole;
}

// Resolves the oldest pending pair if it completed; false when it has not (or nothing pends).
bool resolve_one(const Driver* d, bool final_pass) noexcept {
  if (tl.head == tl.tail) return false;
  Slot& s = tl.ring[tl.head % kSlots];
  CUresult q = d->event_query(s.end);
  if (q == CUDA_ERROR_NOT_READY && !final_pass) return false;
  ++tl.head;
  const Ref& r = tl.refs[s.ref];
  float to_start = 0, length = 0;
  if (q != CUDA_SUCCESS || r.serial != s.ref_serial || !r.event ||
      d->elapsed(&to_start, r.event, s.start) != CUDA_SUCCESS || d->elapsed(&length, s.start, s.end) != CUDA_SUCCESS) {
    ++tl.dropped;
    return true;
  }
  GpuSpanRecord g{};
  g.h.type = static_cast<uint16_t>(RecordType::GpuSpan);
  g.h.size = sizeof g;
  g.op = s.op;
  g.stream_kind = s.stream_kind;
  g.stream = s.stream;
  g.host_before_ns = s.before_ns;
  g.host_after_ns = s.after_ns;
  int64_t start = static_cast<int64_t>(r.host_ns) + ms_to_ns(to_start);
  g.start_ns = start > 0 ? static_cast<uint64_t>(start) : 0;
  int64_t len = ms_to_ns(length);
  g.end_ns = g.start_ns + static_cast<uint64_t>(len > 0 ? len : 0);
  if (trace_writer::is_active_or_opening()) thread_buffer::write(&g);
  return true;
}

void drain_locked(uint32_t max, bool final_pass) noexcept {
  const Driver* d = driver();
  if (!d || !tl.ring) return;
  for (uint32_t n = 0; (max == 0 || n < max) && resolve_one(d, final_pass); ++n) {}
}

void at_process_exit() noexcept {
  calls::LibraryScope scope;
  ErrnoKeeper keep;
  drain_locked(0, false);  // what completed; the work still running at exit stays untimed
  if (tl.ring && tl.head != tl.tail) tl.dropped += tl.tail - tl.head;
  if (tl.ring) write_clock(nullptr, 0);
}

}  // namespace

uint32_t before(CUstream stream, bool per_thread_entry) noexcept {
  if (AW_LIKELY(!enabled()) || !usable()) return 0;
  const Driver* d = driver();
  if (!d) return 0;
  uint32_t gen = trace_writer::generation();
  if (AW_UNLIKELY(tl.generation != gen)) {
    // A new trace (after fork: the parent's events are not ours to use): start over.
    if (tl.ring) std::memset(static_cast<void*>(tl.ring), 0, kSlots * sizeof(Slot));
    tl.head = tl.tail = 0;
    for (auto& r : tl.refs) r = Ref{};
    tl.private_stream = nullptr;
    tl.private_ctx = nullptr;
    tl.dropped = 0;
    tl.generation = gen;
  }
  if (!tl.ring) {
    tl.ring = static_cast<Slot*>(calloc(kSlots, sizeof(Slot)));
    if (!tl.ring) return 0;
    thread_exit::watch_this_thread();
    if (!g_atexit_registered.exchange(true)) atexit(&at_process_exit);  // the main thread's, mostly
  }
  drain_locked(kDrainPerCall, false);
  if (tl.tail - tl.head >= kSlots) {
    ++tl.dropped;
    return 0;
  }
  CUcontext ctx = nullptr;
  if (d->ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) return 0;
  const Ref& cur = tl.refs[tl.current_ref];
  uint64_t now = now_ns();
  if (!cur.event || cur.ctx != ctx || now - cur.host_ns > kRecalibrateNs) {
    if (!calibrate(d, ctx)) return 0;
  }
  Slot& s = tl.ring[tl.tail % kSlots];
  if (s.ctx != ctx) {
    destroy(d, s.start);
    destroy(d, s.end);
  }
  if (!s.start && d->event_create(&s.start, 0) != CUDA_SUCCESS) s.start = nullptr;
  if (!s.end && d->event_create(&s.end, 0) != CUDA_SUCCESS) s.end = nullptr;
  if (!s.start || !s.end) return 0;
  s.ctx = ctx;
  EventRecordFn record = per_thread_entry && !stream && d->event_record_ptsz ? d->event_record_ptsz : d->event_record;
  if (record(s.start, stream) != CUDA_SUCCESS) return 0;
  s.ref = tl.current_ref;
  s.ref_serial = tl.refs[tl.current_ref].serial;
  s.before_ns = now_ns();
  return tl.tail + 1;
}

bool after(uint32_t token, CUresult result, CUstream stream, bool per_thread_entry, GpuOp op,
           uint8_t stream_kind) noexcept {
  if (!token || token != tl.tail + 1 || result != CUDA_SUCCESS) return false;
  const Driver* d = driver();
  Slot& s = tl.ring[tl.tail % kSlots];
  EventRecordFn record = per_thread_entry && !stream && d->event_record_ptsz ? d->event_record_ptsz : d->event_record;
  if (record(s.end, stream) != CUDA_SUCCESS) return false;
  s.after_ns = now_ns();
  s.stream = reinterpret_cast<uint64_t>(stream);
  s.op = static_cast<uint8_t>(op);
  s.stream_kind = stream_kind;
  ++tl.tail;
  return true;
}

void drain(uint32_t max) noexcept {
  if (AW_LIKELY(!enabled()) || !tl.ring || tl.generation != trace_writer::generation()) return;
  if (calls::thread_state().reentrant) return;
  drain_locked(max, false);
}

void release_thread() noexcept {
  if (!tl.ring) return;
  const Driver* d = driver();
  if (d && tl.generation == trace_writer::generation()) {
    drain_locked(0, false);
    tl.dropped += tl.tail - tl.head;
    write_clock(nullptr, 0);
    for (uint32_t i = 0; i < kSlots; ++i) {
      destroy(d, tl.ring[i].start);
      destroy(d, tl.ring[i].end);
    }
    for (auto& r : tl.refs) destroy(d, r.event);
  }
  free(tl.ring);
  tl = ThreadState{};
}

}  // namespace asyncwatch::gpu_times
