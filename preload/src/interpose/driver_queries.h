// What the library asks the driver itself, through the real driver functions: a stream's kind and
// whether it is capturing, the completion evidence of a copy, and the device's record once per trace.
#pragma once

#include <atomic>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "cuda_abi.h"
#include "real_functions.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

// A driver function the library calls for itself (not hooked), looked up on first use through
// real::driver_helper; before the driver is known the lookup is tried again on the next use.
template <class Fn>
struct DriverHelper {
  const char* name;
  std::atomic<Fn> fn{nullptr};
  Fn get() noexcept {
    Fn f = fn.load(std::memory_order_acquire);
    if (f) return f;
    f = reinterpret_cast<Fn>(real::driver_helper(name));
    if (f) fn.store(f, std::memory_order_release);
    return f;
  }
};

trace::StreamKind stream_kind(cuda::CUstream s, bool per_thread_entry) noexcept;

// Stream capture: a count of captures begun through hooked entry points and not ended; only
// when it is non-zero does a copy/launch ask the driver whether its stream is capturing.
void capture_begun() noexcept;
void capture_ended() noexcept;
extern std::atomic<int> g_active_captures;
inline bool any_capture_active() noexcept { return g_active_captures.load(std::memory_order_acquire) > 0; }
bool stream_is_capturing_slow(cuda::CUstream s) noexcept;
// Inline: every copy and launch asks, and almost never while a capture is active.
inline bool stream_is_capturing(cuda::CUstream s) noexcept {
  return AW_UNLIKELY(any_capture_active()) && stream_is_capturing_slow(s);
}

// After a successful copy/memset: record an event behind it and query it at once. Sets
// kFlagEvidenceChecked and, when the stream had already drained, kFlagCompletedAtReturn.
void completion_evidence(cuda::CUstream s, bool per_thread_entry, uint32_t* flags) noexcept;
// Destroys the calling thread's evidence events (release_thread).
void release_evidence_events() noexcept;

// DeviceInfoRecord once per trace, after a call into the driver succeeded.
void note_driver_ready_slow() noexcept;
extern std::atomic<uint32_t> g_device_info_generation;
// Whether the trace of generation `gen` has it (note_driver_ready has nothing to do).
inline bool device_info_written(uint32_t gen) noexcept {
  return g_device_info_generation.load(std::memory_order_relaxed) == gen;
}
// Inline: after every successful driver call, a load and a compare once the trace has it.
inline void note_driver_ready() noexcept {
  if (AW_LIKELY(device_info_written(trace_writer::generation()))) return;
  note_driver_ready_slow();
}

}  // namespace asyncwatch::calls
