#include "call_context.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "capture_range.h"
#include "config.h"
#include "thread_exit.h"
#include "real_functions.h"
#include "stacks/stack_capture.h"
#include "trace/thread_buffer.h"
#include "signal_hooks.h"
#include "traced_call.h"

namespace asyncwatch::calls {

AW_TLS_SHARED ThreadLocals tl_locals;
AW_TLS_SHARED NameCacheEntry* tl_kernel_names;
std::atomic<int> g_active_captures{0};
std::atomic<uint32_t> g_device_info_generation{0};

namespace {

using namespace asyncwatch::trace;
using namespace asyncwatch::cuda;

std::atomic<uint64_t> g_next_callback_id{1};

inline bool doubtful_side(uint8_t k) noexcept { return calls::doubtful_side(static_cast<MemoryKind>(k)); }

// The call site of the thread's current call, into `h`.
}  // namespace

__attribute__((noinline)) void capture_stack(CallHead& h) noexcept {
  const ThreadCallState& st = thread_state();
  uint32_t id = stacks::capture_call_site(st.caller.ra, st.caller.frame);
  if (id) {
    h.stack_id = id;
    h.flags |= kFlagStackCaptured;
  }
}

namespace {

// Per-thread cache of the evidence event of each context.
struct EvidenceEvent {
  CUcontext ctx;
  CUevent event;
  uint32_t generation;
};
constexpr int kEvidenceSlots = 4;
AW_TLS EvidenceEvent tl_evidence[kEvidenceSlots];

using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using EventCreateFn = CUresult (*)(CUevent*, unsigned);
using EventRecordFn = CUresult (*)(CUevent, CUstream);
using EventQueryFn = CUresult (*)(CUevent);
using EventDestroyFn = CUresult (*)(CUevent);
using StreamIsCapturingFn = CUresult (*)(CUstream, int*);
using FuncGetNameFn = CUresult (*)(const char**, void*);

template <class Fn>
struct Helper {
  const char* name;
  std::atomic<Fn> fn{nullptr};
  std::atomic<bool> looked{false};
  Fn get() noexcept {
    Fn f = fn.load(std::memory_order_acquire);
    if (f || looked.load(std::memory_order_acquire)) return f;
    f = reinterpret_cast<Fn>(real::driver_helper(name));
    if (f) fn.store(f, std::memory_order_release);
    // Only give up once the driver is known; before that the lookup may succeed later.
    return f;
  }
};
Helper<CtxGetCurrentFn> h_ctx_get_current{"cuCtxGetCurrent"};
Helper<EventCreateFn> h_event_create{"cuEventCreate"};
Helper<EventRecordFn> h_event_record{"cuEventRecord"};
Helper<EventRecordFn> h_event_record_ptsz{"cuEventRecord_ptsz"};
Helper<EventQueryFn> h_event_query{"cuEventQuery"};
Helper<EventDestroyFn> h_event_destroy{"cuEventDestroy_v2"};
Helper<StreamIsCapturingFn> h_stream_is_capturing{"cuStreamIsCapturing"};
Helper<FuncGetNameFn> h_func_get_name{"cuFuncGetName"};
Helper<FuncGetNameFn> h_kernel_get_name{"cuKernelGetName"};

// Kernel names: per-thread direct-mapped cache (call_context.h), global map on a miss.

struct NameTable {
  std::mutex mutex;
  uint32_t generation = 0;
  uint32_t next_id = 1;
  std::unordered_map<void*, uint32_t> by_function;
  std::unordered_map<std::string, uint32_t> by_text;
  std::unordered_map<void*, bool> launched_before;  // survives a new trace: process-wide "first"
};
NameTable& names() {
  static NameTable* t = new NameTable;  // leaked: used during exit
  return *t;
}

}  // namespace

int set_recording(bool on) noexcept { return capture::set_recording(on); }

bool recording() noexcept {
  // Paused (by the application, or outside the capture range): not recorded, and not lost either.
  if (AW_UNLIKELY(capture::paused())) {
    // A capture range's trace is opened by the first call all the same (after the call would be
    // better, as for a recorded first call, but no record is written here to open it then).
    if (AW_UNLIKELY(capture::configured() && trace_writer::not_open_yet()) && !tracing_disabled() &&
        !thread_state().reentrant) {
      LibraryScope scope;
      if (trace_writer::accepts_calls_slow(true)) trace_writer::ensure_open();
    }
    return false;
  }
  if (AW_UNLIKELY(tracing_disabled())) return false;
  if (AW_LIKELY(trace_writer::is_active())) return true;
  // The first call (the file thread is started here), or the trace stopped: as the library's own
  // code, so that a signal handler meanwhile passes through.
  bool may_start = !thread_state().reentrant;
  LibraryScope scope;
  return trace_writer::accepts_calls_slow(may_start);
}

Nested classify_nested(ThreadCallState& st, Caller c) noexcept {
  if (st.phase == kPhaseHandler) {  // an application's handler, through our trampoline
    if (signals::handler_running(st, c.frame)) return Nested::Reentrant;
    signals::handler_left(st);
    return Nested::Application;
  }
  if (st.phase & kPhaseQuiet) return Nested::PassThrough;  // under a call already counted as lost
  if (st.phase & 1) return Nested::Lost;                   // a handler interrupted our own code
  // Inside a real function: of the runtime (phase 2 under a runtime wrapper), else of the driver.
  // Phase 2 also covers the real function of a prefilled driver wrapper called by the runtime
  // (hook_entry.h: it jumps to it in phase 2): the driver's text is the callee's then too.
  bool in_runtime = st.phase == 2 && (st.outer == kOuterRuntime || st.outer == kOuterRuntimePassive);
  // From the library the active wrapper called (or a tail call from it: the return address is then
  // ours): the library calling its own (or the driver's) entry point. A handler's call comes from
  // the application's code.
  bool from_callee = real::is_own(c.ra) || (in_runtime && runtime_hooks::text_contains(st.rt_instance, c.ra)) ||
                     real::driver_text_contains(c.ra);
  return from_callee ? Nested::PassThrough : Nested::Reentrant;
}

uint32_t begin_lost(ThreadCallState& st) noexcept {
  uint32_t saved = st.phase;
  st.phase = saved | kPhaseQuiet;
  signal_fence();
  if (!capture::paused_quiet() && !tracing_disabled() && trace_writer::lost_calls_counted()) {
    thread_buffer::note_lost(LostReason::SignalHandler);  // a handler interrupted the library's own code
    trace_writer::count_lost(1);
  }
  return saved;
}

void write(AnyRecord& r) noexcept {
  if (AW_UNLIKELY(!thread_buffer::write(&r))) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
  }
}

AnyRecord* begin_in_place_lost(uint64_t* start) noexcept {
  *start = now_ns();
  // Not written: counted like any call that passes unrecorded (not when disabled, not while paused).
  if (!capture::paused_quiet() && trace_writer::lost_calls_counted()) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
  }
  return nullptr;
}

void cancel_in_place(AnyRecord* r) noexcept {
  RecordHeader ph{static_cast<uint16_t>(RecordType::Padding), r->h.size};
  uint32_t word;
  memcpy(&word, &ph, sizeof word);
  __atomic_store_n(reinterpret_cast<uint32_t*>(r), word, __ATOMIC_RELEASE);
}

void apply_stack_policy(AnyRecord& r, Category c) noexcept {
  if (takes_stacks(c) && wants_stack(r, c, r.head.end_ns - r.head.start_ns) && !(r.head.flags & kFlagStackCaptured))
    capture_stack(r.head);
}

uint32_t stack_now() noexcept {
  const ThreadCallState& st = thread_state();
  return stacks::capture_call_site(st.caller.ra, st.caller.frame);
}

void stack_into_target(ThreadCallState& st, Category c) noexcept {
  // Only the record the runtime call published in place (a pending one is written after the
  // call: nothing of it is in the file while the call runs), and only from the driver call whose
  // record it is (adopt_target's test).
  if (st.pending_valid || c != st.runtime_category || !st.target || st.target == &st.pending ||
      !in_place_valid(st.target_generation))
    return;
  CallHead& h = st.target->head;
  if (h.flags & kFlagStackCaptured) return;
  // The runtime call's start was read before it began: the capture's time is moved out of it.
  const uint64_t t0 = now_ns();
  const uint32_t id = stack_now();
  if (!id) return;
  h.start_ns += now_ns() - t0;
  h.stack_id = id;
  __atomic_store_n(&h.flags, h.flags | kFlagStackCaptured, __ATOMIC_RELEASE);
}

AnyRecord* adopt_target(ThreadCallState& st, Category c) noexcept {
  st.driver_reached = true;
  // One record per application call: the first driver call of the runtime API's kind fills the
  // body of the runtime call's record; other driver calls made by the runtime are internal.
  if (st.pending_valid || c != st.runtime_category) return nullptr;
  st.pending_valid = true;
  return st.target;
}

StreamKind stream_kind(CUstream s, bool per_thread_entry) noexcept {
  auto v = reinterpret_cast<uintptr_t>(s);
  if (v == 0) return per_thread_entry ? StreamKind::PerThreadDefault : StreamKind::LegacyDefault;
  if (v == 1) return StreamKind::LegacyDefault;     // CU_STREAM_LEGACY / cudaStreamLegacy
  if (v == 2) return StreamKind::PerThreadDefault;  // CU_STREAM_PER_THREAD / cudaStreamPerThread
  return StreamKind::Explicit;
}

void capture_begun() noexcept { g_active_captures.fetch_add(1, std::memory_order_acq_rel); }
void capture_ended() noexcept {
  int v = g_active_captures.load();
  while (v > 0 && !g_active_captures.compare_exchange_weak(v, v - 1)) {}
}
bool stream_is_capturing_slow(CUstream s) noexcept {
  if (!any_capture_active() || thread_state().reentrant) return false;
  auto fn = h_stream_is_capturing.get();
  if (!fn) return false;
  int status = 0;
  if (fn(s, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

namespace {
// Destroys a slot's event if this process created it (not a forked child's copy of the parent's).
void release_event(EvidenceEvent& e) noexcept {
  if (e.event && e.generation == trace_writer::generation()) {
    if (auto destroy = h_event_destroy.get()) destroy(e.event);
  }
  e = EvidenceEvent{};
}
}  // namespace

void completion_evidence(CUstream s, bool per_thread_entry, uint32_t* flags) noexcept {
  // Never while any capture is active: under cudaStreamCaptureModeGlobal an event query from
  // any thread would invalidate the application's capture.
  if (any_capture_active() || thread_state().reentrant) return;
  auto get_ctx = h_ctx_get_current.get();
  auto create = h_event_create.get();
  auto record = (per_thread_entry && s == nullptr && h_event_record_ptsz.get()) ? h_event_record_ptsz.get()
                                                                                : h_event_record.get();
  auto query = h_event_query.get();
  if (!get_ctx || !create || !record || !query) return;
  CUcontext ctx = nullptr;
  if (get_ctx(&ctx) != CUDA_SUCCESS || !ctx) return;
  uint32_t gen = trace_writer::generation();
  EvidenceEvent* slot = nullptr;
  for (auto& e : tl_evidence)
    if (e.ctx == ctx && e.generation == gen) slot = &e;
  if (!slot) {
    slot = &tl_evidence[reinterpret_cast<uintptr_t>(ctx) / 64 % kEvidenceSlots];
    // Lazily, through the real driver, in the application's current context. Destroyed when the
    // slot is reused for another context and when the thread exits (release_thread), not at
    // process exit: that would race the driver's own teardown.
    release_event(*slot);
    CUevent ev = nullptr;
    if (create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return;
    *slot = EvidenceEvent{ctx, ev, gen};
    thread_exit::watch_this_thread();
  }
  if (record(slot->event, s) != CUDA_SUCCESS) {
    slot->ctx = nullptr;  // stale (context destroyed and address reused?): recreate next time
    return;
  }
  CUresult q = query(slot->event);
  if (q == CUDA_SUCCESS)
    *flags |= kFlagEvidenceChecked | kFlagCompletedAtReturn;
  else if (q == CUDA_ERROR_NOT_READY)
    *flags |= kFlagEvidenceChecked;
}

uint32_t kernel_name_id_slow(CUfunction f, bool* first) noexcept {
  *first = false;
  if (!f || thread_state().reentrant) return 0;
  uint32_t gen = trace_writer::generation();
  if (!tl_kernel_names) {
    tl_kernel_names = static_cast<NameCacheEntry*>(calloc(kNameCacheSize, sizeof(NameCacheEntry)));
    thread_exit::watch_this_thread();
  }
  NameCacheEntry* e = tl_kernel_names ? &tl_kernel_names[name_cache_slot(f)] : nullptr;
  if (e && e->fn == f && e->generation == gen) return e->id;
  uint32_t id = 0;
  try {
    std::lock_guard<std::mutex> lock(names().mutex);
    if (names().generation != gen) {
      names().by_function.clear();
      names().by_text.clear();
      names().next_id = 1;
      names().generation = gen;
    }
    auto [it_first, inserted] = names().launched_before.emplace(f, true);
    (void)it_first;
    *first = inserted;
    auto it = names().by_function.find(f);
    if (it != names().by_function.end()) {
      id = it->second;
    } else {
      const char* name = nullptr;
      auto fn_name = h_func_get_name.get();
      if (!fn_name || fn_name(&name, f) != CUDA_SUCCESS || !name) {
        // cuLaunchKernel also accepts a CUkernel cast to CUfunction.
        auto k_name = h_kernel_get_name.get();
        name = nullptr;
        if (!k_name || k_name(&name, f) != CUDA_SUCCESS) name = nullptr;
      }
      if (name) {
        std::string text(name);
        auto t = names().by_text.find(text);
        if (t != names().by_text.end()) {
          id = t->second;
        } else {
          id = names().next_id++;
          StringRecord r{};
          r.h.type = static_cast<uint16_t>(RecordType::String);
          r.string_id = id;
          r.len = static_cast<uint32_t>(std::min<size_t>(text.size(), 8192));
          thread_buffer::write2(&r, sizeof r, text.data(), r.len);
          names().by_text.emplace(std::move(text), id);
        }
      }
      names().by_function.emplace(f, id);
    }
  } catch (...) {
    return 0;
  }
  if (e) *e = NameCacheEntry{f, id, gen};
  return id;
}

uint32_t string_id(const char* text, uint32_t len) noexcept {
  if (!text || thread_state().reentrant) return 0;
  uint32_t gen = trace_writer::generation();
  try {
    std::lock_guard<std::mutex> lock(names().mutex);
    if (names().generation != gen) {
      names().by_function.clear();
      names().by_text.clear();
      names().next_id = 1;
      names().generation = gen;
    }
    std::string key(text, std::min<size_t>(len, 8192));
    auto t = names().by_text.find(key);
    if (t != names().by_text.end()) return t->second;
    uint32_t id = names().next_id++;
    StringRecord r{};
    r.h.type = static_cast<uint16_t>(RecordType::String);
    r.string_id = id;
    r.len = static_cast<uint32_t>(key.size());
    thread_buffer::write2(&r, sizeof r, key.data(), r.len);
    names().by_text.emplace(std::move(key), id);
    return id;
  } catch (...) {
    return 0;
  }
}

void note_driver_ready_slow() noexcept {
  if (AW_UNLIKELY(thread_state().reentrant)) return;
  uint32_t gen = trace_writer::generation();
  if (AW_LIKELY(g_device_info_generation.load(std::memory_order_relaxed) == gen)) return;
  if (g_device_info_generation.exchange(gen) == gen) return;
  using DriverGetVersionFn = CUresult (*)(int*);
  using CtxGetDeviceFn = CUresult (*)(CUdevice*);
  using DeviceGetNameFn = CUresult (*)(char*, int, CUdevice);
  auto get_version = reinterpret_cast<DriverGetVersionFn>(real::driver_helper("cuDriverGetVersion"));
  auto get_device = reinterpret_cast<CtxGetDeviceFn>(real::driver_helper("cuCtxGetDevice"));
  auto get_name = reinterpret_cast<DeviceGetNameFn>(real::driver_helper("cuDeviceGetName"));
  DeviceInfoRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::DeviceInfo);
  r.h.size = static_cast<uint16_t>(record_size_aligned(sizeof r));
  CUdevice dev = 0;
  if (!get_device || get_device(&dev) != CUDA_SUCCESS) {
    g_device_info_generation.store(0);  // no context yet: try again after a later call
    return;
  }
  r.device_ordinal = dev;
  if (get_version) get_version(&r.driver_version);
  if (get_name) get_name(r.name, sizeof r.name - 1, dev);
  std::string n(r.name);
  r.simulated = (n.find("asyncwatch") != std::string::npos || n.find("imulat") != std::string::npos) ? 1 : 0;
  thread_buffer::write2(&r, sizeof r, nullptr, 0);
}

uint64_t next_callback_id() noexcept { return g_next_callback_id.fetch_add(1, std::memory_order_relaxed); }

namespace {
// Not a call of the application: written when recording (also while the trace is still being
// created for the call that enqueued the function: the write waits for it), never counted as lost.
void write_run(uint64_t id, uint64_t start, uint64_t end) noexcept {
  if (capture::paused_quiet() || !trace_writer::is_active_or_opening()) return;
  HostFuncRunRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::HostFuncRun);
  r.h.size = sizeof r;
  r.callback_id = id;
  r.start_ns = start;
  r.end_ns = end;
  thread_buffer::write(&r);
}
}  // namespace

void host_fn_trampoline(void* p) noexcept {
  auto* ctx = static_cast<HostFuncContext*>(p);
  uint64_t start = now_ns();
  ctx->user_fn(ctx->user_data);
  uint64_t end = now_ns();
  ErrnoKeeper keep;
  write_run(ctx->callback_id, start, end);
  free(ctx);  // a host function enqueued outside capture runs exactly once
}

void stream_callback_trampoline(CUstream s, CUresult status, void* p) noexcept {
  auto* ctx = static_cast<HostFuncContext*>(p);
  uint64_t start = now_ns();
  ctx->user_callback(s, status, ctx->user_data);  // the status argument passes through unchanged
  uint64_t end = now_ns();
  ErrnoKeeper keep;
  write_run(ctx->callback_id, start, end);
  free(ctx);
}

void release_thread() noexcept {
  for (auto& e : tl_evidence) release_event(e);
  free(tl_kernel_names);
  tl_kernel_names = nullptr;
}

}  // namespace asyncwatch::calls

// The control API (asyncwatch/control.h).
extern "C" AW_EXPORT int asyncwatch_set_recording(int on) noexcept {
  asyncwatch::ErrnoKeeper keep;
  try {
    return asyncwatch::calls::set_recording(on != 0);
  } catch (...) {
    return -1;
  }
}
