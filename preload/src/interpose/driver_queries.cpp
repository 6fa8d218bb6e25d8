#include "driver_queries.h"

#include <string>

#include "thread_exit.h"
#include "thread_state.h"
#include "trace/thread_buffer.h"

namespace asyncwatch::calls {

std::atomic<int> g_active_captures{0};
std::atomic<uint32_t> g_device_info_generation{0};

namespace {

using namespace asyncwatch::trace;
using namespace asyncwatch::cuda;

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

DriverHelper<CtxGetCurrentFn> h_ctx_get_current{"cuCtxGetCurrent"};
DriverHelper<EventCreateFn> h_event_create{"cuEventCreate"};
DriverHelper<EventRecordFn> h_event_record{"cuEventRecord"};
DriverHelper<EventRecordFn> h_event_record_ptsz{"cuEventRecord_ptsz"};
DriverHelper<EventQueryFn> h_event_query{"cuEventQuery"};
DriverHelper<EventDestroyFn> h_event_destroy{"cuEventDestroy_v2"};
DriverHelper<StreamIsCapturingFn> h_stream_is_capturing{"cuStreamIsCapturing"};

// Destroys a slot's event if this process created it (not a forked child's copy of the parent's).
void release_event(EvidenceEvent& e) noexcept {
  if (e.event && e.generation == trace_writer::generation()) {
    if (auto destroy = h_event_destroy.get()) destroy(e.event);
  }
  e = EvidenceEvent{};
}

}  // namespace

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

void release_evidence_events() noexcept {
  for (auto& e : tl_evidence) release_event(e);
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

}  // namespace asyncwatch::calls
