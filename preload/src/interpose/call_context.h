// What the calling thread is doing right now, shared by the driver and runtime wrappers:
// whether it is inside a driver wrapper (nested hooked calls pass straight through), and which
// runtime API, if any, it is inside, so that the driver record names the API the application
// called and the call is recorded once, not twice.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "cuda_abi.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

// Which record a call produces; a runtime call adopts the first driver record of its category.
enum class Category : uint8_t { None, Copy, Memset, Launch, HostFunc, Sync, MemoryOp, Stream, Capture };

union AnyRecord {
  trace::RecordHeader h;
  trace::CopyRecord copy;
  trace::LaunchRecord launch;
  trace::HostFuncEnqueueRecord host_func;
  trace::SyncRecord sync;
  trace::MemoryOpRecord memory;
  trace::StreamCreateRecord stream;
  trace::CaptureRecord capture;
};

struct ThreadCallState {
  uint32_t driver_depth;   // > 0 inside a driver wrapper
  uint32_t runtime_depth;  // > 0 inside a runtime wrapper
  trace::Api runtime_api;
  Category runtime_category;
  bool driver_reached;     // a hooked driver entry point ran during the runtime call
  bool pending_valid;      // `pending` holds the driver's record, finished by the runtime wrapper
  AnyRecord pending;
  // Where the application called the outermost wrapper: the key of the call-site cache
  // (stack_capture.cpp), set by AW_NOTE_CALLER at the top of every exported wrapper.
  const void* caller_ra;
  const void* caller_frame;
};
extern AW_TLS ThreadCallState tl_call_state;
inline ThreadCallState& thread_state() noexcept { return tl_call_state; }

// First statement of every exported wrapper: remember the application's call site (outermost only).
#define AW_NOTE_CALLER()                                                                 \
  do {                                                                                   \
    ::asyncwatch::calls::ThreadCallState& aw_st_ = ::asyncwatch::calls::thread_state();  \
    if (aw_st_.driver_depth == 0 && aw_st_.runtime_depth == 0) {                         \
      aw_st_.caller_ra = __builtin_return_address(0);                                    \
      aw_st_.caller_frame = __builtin_frame_address(0);                                  \
    }                                                                                    \
  } while (0)

// False when nothing should be recorded (paused, disabled, tracing failed or closed).
bool recording() noexcept;
// The control API: pause (false) or resume (true) recording; returns 1 if it was recording, else 0.
int set_recording(bool on) noexcept;

// Records a finished driver-level call: kept pending inside a runtime call (the runtime
// wrapper completes and writes it), else stack-annotated per policy and written.
void emit(AnyRecord& r, Category c) noexcept;
// Writes a record whose stack policy was already applied.
void write(AnyRecord& r) noexcept;
// Applies the stack policy (capture the call site when wanted) to a finished record.
void apply_stack_policy(AnyRecord& r, Category c) noexcept;

trace::StreamKind stream_kind(cuda::CUstream s, bool per_thread_entry) noexcept;

// Stream capture: a count of captures begun through hooked entry points and not ended; only
// when it is non-zero does a copy/launch ask the driver whether its stream is capturing.
void capture_begun() noexcept;
void capture_ended() noexcept;
bool any_capture_active() noexcept;
bool stream_is_capturing(cuda::CUstream s) noexcept;

// After a successful copy/memset: record an event behind it and query it at once. Sets
// kFlagEvidenceChecked and, when the stream had already drained, kFlagCompletedAtReturn.
void completion_evidence(cuda::CUstream s, bool per_thread_entry, uint32_t* flags) noexcept;

// Kernel name of a CUfunction/CUkernel, interned as a StringRecord; *first = first launch of
// this function in the process.
uint32_t kernel_name_id(cuda::CUfunction f, bool* first) noexcept;

// DeviceInfoRecord once per trace, after a call into the driver succeeded.
void note_driver_ready() noexcept;

// Frees the calling thread's name cache and destroys its evidence events (thread_exit hook).
void release_thread() noexcept;

// Host functions: the wrapper handed to the driver in place of the user's function.
struct HostFuncContext {
  cuda::CUhostFn user_fn;
  cuda::CUstreamCallback user_callback;
  void* user_data;
  uint64_t callback_id;
};
uint64_t next_callback_id() noexcept;
void host_fn_trampoline(void* ctx) noexcept;
void stream_callback_trampoline(cuda::CUstream s, cuda::CUresult status, void* ctx) noexcept;

// RAII for the driver wrappers: marks the thread as inside a driver wrapper.
class DriverScope {
 public:
  DriverScope() noexcept { ++thread_state().driver_depth; }
  ~DriverScope() { --thread_state().driver_depth; }
};

// Timestamps of a driver wrapper. Inside a traced runtime call the runtime wrapper's own start
// and end become the record's times (write_adopted), so the driver wrapper reads no clock: one
// record per call costs two clock reads, not four.
struct DriverClock {
  bool nested;
  DriverClock() noexcept : nested(thread_state().runtime_depth > 0) {}
  uint64_t now() const noexcept { return AW_LIKELY(!nested) ? now_ns() : 0; }
};

// Should this driver wrapper record? (not nested in another driver wrapper, recording on)
inline bool should_record() noexcept { return thread_state().driver_depth == 0 && recording(); }

}  // namespace asyncwatch::calls
