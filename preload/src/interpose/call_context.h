// What the calling thread is doing right now, shared by the driver and runtime wrappers: whether
// it is in the application, in the library's own code, or inside the real function of an active
// wrapper; which runtime API, if any, it is inside (so that the driver record names the API the
// application called and the call is recorded once, not twice).
//
// Signal handlers (docs/interception.md, "Signals"): a wrapper entered while this thread is in the
// library's own code (`phase` odd) was called by a signal handler that interrupted us: the call
// passes straight through and is counted in records_lost (our state, locks and open reservation
// stay untouched). One entered while this thread is inside a real CUDA function (`phase` even) is
// either the CUDA library calling its own or the driver's entry points (the caller's return
// address lies in that library: nested, as always), or a handler (or a callback) that interrupted
// the real function: then it is recorded as a call of its own, with the thread's state saved
// around it. A handler installed through sigaction/signal runs through the library's trampoline
// (signal_hooks.cpp), which marks a thread that was in the application (`phase` 0) with
// kPhaseHandler: its CUDA calls are reentrant too (the handler may have interrupted malloc, or a
// lock of libc, that the library's bookkeeping would need).
#pragma once

#include <atomic>

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "classify/host_memory_classifier.h"
#include "common.h"
#include "config.h"
#include "cuda_abi.h"
#include "stacks/stack_capture.h"
#include "trace/site_summary.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

// Which record a call produces; a runtime call adopts the first driver record of its category.
enum class Category : uint8_t {
  None,
  Copy,
  Memset,
  Launch,
  HostFunc,
  Sync,
  MemoryOp,
  Stream,
  Capture,
  BatchCopy,
  ManagedOp,
  GraphOp
};

// The record type a call of category `c` writes (`api` tells stream destruction from creation).
inline trace::RecordType record_type(Category c, trace::Api api) noexcept {
  switch (c) {
    case Category::Copy: return trace::RecordType::Copy;
    case Category::Memset: return trace::RecordType::Memset;
    case Category::Launch:
      return api == trace::Api::cuGraphLaunch || api == trace::Api::cudaGraphLaunch ? trace::RecordType::GraphLaunch
                                                                                    : trace::RecordType::Launch;
    case Category::HostFunc: return trace::RecordType::HostFuncEnqueue;
    case Category::Sync: return trace::RecordType::Sync;
    case Category::MemoryOp: return trace::RecordType::MemoryOp;
    case Category::Stream:
      return api == trace::Api::cuStreamDestroy_v2 || api == trace::Api::cudaStreamDestroy
                 ? trace::RecordType::StreamDestroy
                 : trace::RecordType::StreamCreate;
    case Category::Capture: return trace::RecordType::Capture;
    case Category::BatchCopy: return trace::RecordType::BatchCopy;
    case Category::ManagedOp: return trace::RecordType::ManagedOp;
    case Category::GraphOp: return trace::RecordType::GraphOp;
    case Category::None: break;
  }
  return trace::RecordType::None;
}

union AnyRecord {
  trace::RecordHeader h;
  trace::CallHead head;  // every call record starts with it
  trace::CopyRecord copy;
  trace::LaunchRecord launch;
  trace::HostFuncEnqueueRecord host_func;
  trace::SyncRecord sync;
  trace::MemoryOpRecord memory;
  trace::StreamCreateRecord stream;
  trace::CaptureRecord capture;
  trace::BatchCopyRecord batch;
  trace::ManagedOpRecord managed;
  trace::GraphOpRecord graph;
  trace::GraphLaunchRecord graph_launch;
};

// Where the application called the outermost wrapper: the key of the call-site cache
// (stack_capture.cpp). Taken by the traced body of each exported wrapper (hook_entry.h).
struct Caller {
  const void* ra;
  const void* frame;
};
// The caller of a driver wrapper that its exported entry found called by the runtime inside a
// traced runtime call (hook_entry.h, `called_in_runtime`): traced_with then takes the short path
// that only fills the runtime call's record. A function taking a plain Caller gets the same call site
// and decides again (the slow way, same result).
struct InRuntimeCaller : Caller {};
// The caller of a runtime wrapper that its exported entry found called by the application (phase 0)
// with the trace recording in place: `run` then takes the short path of that case alone
// (runtime_hooks.cpp). A plain Caller decides again (the same result, the slow way).
struct AppCaller : Caller {};

// The outermost active wrapper.
enum Outer : uint8_t {
  kOuterNone = 0,
  kOuterDriver = 1,
  kOuterRuntime = 2,         // recording: the driver's record becomes the runtime call's
  kOuterRuntimePassive = 3,  // not recording (paused, stopped): nested driver wrappers pass through
};
// Set in `phase` while a call that was counted as lost passes through: nothing under it counts again.
inline constexpr uint32_t kPhaseQuiet = 1u << 31;
// `phase` while an application's signal handler runs on a thread that was in the application: set
// and restored by the signal trampoline (signal_hooks.h), even (not the library's own code).
inline constexpr uint32_t kPhaseHandler = 1u << 30;

struct ThreadCallState {
  // 0: in the application. Odd: the library's own code runs on this thread. Even (2, 4): inside
  // the real function of an active wrapper (4: a driver function called by the runtime). Each
  // change is one store, so a signal handler sees either the old or the new value.
  uint32_t phase;
  uint8_t outer;        // Outer, meaningful while phase != 0
  uint8_t rt_instance;  // the runtime instance (runtime_hooks.cpp) of a runtime outer wrapper
  Category runtime_category;
  bool driver_reached;  // a hooked driver entry point ran during the runtime call
  bool pending_valid;   // the runtime call's record body was filled by a driver wrapper
  // The runtime call's record: in place in the thread's block (published in flight), or `pending`
  // when it is written after the call (the trace was not active when the call began).
  AnyRecord* target;
  uint32_t target_generation;  // of an in-place target (never 0); 0 when the target is `pending`
  // A reentrant call (it interrupted a real function: a signal handler's, most likely): recorded
  // with nothing that may allocate or take a lock the interrupted code may hold: no driver query of
  // ours (memory classified from the pinned-range registry only, no capture check), no stack, no
  // kernel name, no completion evidence, no device info, no module map, no host-function
  // trampoline, no thread started.
  bool reentrant;
  Caller caller;
  // While phase == kPhaseHandler: the trampoline's frame, its return address (the kernel's signal
  // return) and the alternate stack the handler runs on ([lo, hi), 0/0: the thread's own stack),
  // to tell a handler still running from one left with siglongjmp (signal_hooks.h).
  uintptr_t handler_frame;
  uintptr_t handler_return;
  uintptr_t handler_alt_lo, handler_alt_hi;
  // This thread's errno (its address never changes; a forked child's thread has it at the same
  // address), once a wrapper asked for it (ThreadErrnoKeeper); nullptr before (also after a clear).
  int* errno_ptr;
  AnyRecord pending;
};
// The thread's call state and its count of deferred signals, in one thread-local object: the
// wrappers reach both from one address (one load of its offset fewer on every test of the count).
struct ThreadLocals {
  ThreadCallState call;
  // Non-zero when the signal trampoline deferred a signal that arrived while this thread ran the
  // library's own code (signal_hooks.h); not in ThreadCallState, which SavedCallState clears.
  uint32_t signals_deferred;
};
// The exported driver stubs (entry_stubs.cpp) read `call`'s `phase`, `outer` and `rt_instance` by
// this assembler name.
extern AW_TLS_SHARED ThreadLocals tl_locals __asm__("aw_tl_call_state");
inline ThreadCallState& thread_state() noexcept { return tl_locals.call; }

inline void signal_fence() noexcept { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// ErrnoKeeper (common.h) for the wrappers' own work after the real call, with the thread's errno
// address kept in its state: a load instead of a call of __errno_location on every call.
class ThreadErrnoKeeper {
 public:
  explicit ThreadErrnoKeeper(ThreadCallState& st) noexcept : p_(st.errno_ptr) {
    if (AW_UNLIKELY(!p_)) p_ = st.errno_ptr = &errno;
    saved_ = *p_;
  }
  ~ThreadErrnoKeeper() { *p_ = saved_; }
  ThreadErrnoKeeper(const ThreadErrnoKeeper&) = delete;
  ThreadErrnoKeeper& operator=(const ThreadErrnoKeeper&) = delete;

 private:
  int* p_;
  int saved_;
};

// Delivers the signals counted in tl_locals.signals_deferred.
void deliver_deferred_signals() noexcept;  // signal_hooks.cpp
// Every change of `phase` from the library's own code (odd) to another value goes through here: a
// signal deferred meanwhile is delivered once the thread is out of it. Stored first, then checked:
// a signal arriving before the store is deferred and seen here, one after it runs at once.
inline void set_phase(ThreadCallState& st, uint32_t p) noexcept {
  signal_fence();
  st.phase = p;
  signal_fence();
  if (AW_UNLIKELY(tl_locals.signals_deferred) && !(p & 1)) deliver_deferred_signals();
}

// False when nothing should be recorded (paused, disabled, tracing failed or closed); a call made
// after tracing stopped on a failure is counted in records_lost here.
bool recording() noexcept;
// The control API: pause (false) or resume (true) recording; returns 1 if it was recording, else 0.
int set_recording(bool on) noexcept;

// How a wrapper entered with phase != 0 (and not the runtime -> driver fast path) proceeds.
enum class Nested : uint8_t {
  PassThrough,  // the CUDA library calling its own (or the driver's) entry point: not an application call
  Lost,         // a signal handler interrupted the library's code: pass through, counted in records_lost
  Reentrant,    // a handler (or callback) interrupted a real function or the application: a call of its own
  Application,  // a handler left with siglongjmp: the thread is in the application again (phase reset to 0)
};
Nested classify_nested(ThreadCallState& st, Caller c) noexcept;
// Counts a Lost call (unless paused or disabled) and marks the thread quiet while it passes through.
uint32_t begin_lost(ThreadCallState& st) noexcept;

// The thread's call state saved and cleared for a reentrant call, restored afterwards. `phase`
// is odd while the rest is being copied, so a handler nested in this one passes through.
class SavedCallState {
 public:
  SavedCallState() noexcept {
    ThreadCallState& st = tl_locals.call;
    uint32_t phase = st.phase;
    st.phase = 1;
    signal_fence();
    saved_ = st;
    saved_.phase = phase;
    st = ThreadCallState{};
    st.phase = 1;
    set_phase(st, 0);
  }
  ~SavedCallState() {
    ThreadCallState& st = tl_locals.call;
    st.phase = 1;
    signal_fence();
    uint32_t phase = saved_.phase;
    saved_.phase = 1;
    st = saved_;
    set_phase(st, phase);
  }
  SavedCallState(const SavedCallState&) = delete;
  SavedCallState& operator=(const SavedCallState&) = delete;

 private:
  ThreadCallState saved_;
  classify::RegistryOnlyScope no_driver_queries_;
};

// Marks the library's own code outside wrappers (thread-exit hooks, fork handlers, the control
// API) so that a signal handler's CUDA call in between passes through instead of reaching the
// state or locks being used.
class LibraryScope {
 public:
  LibraryScope() noexcept : saved_(tl_locals.call.phase) {
    tl_locals.call.phase = saved_ | 1u;
    signal_fence();
  }
  ~LibraryScope() { set_phase(tl_locals.call, saved_); }
  LibraryScope(const LibraryScope&) = delete;
  LibraryScope& operator=(const LibraryScope&) = delete;

 private:
  uint32_t saved_;
};

// Writes a finished call record (counted in records_lost when it cannot be written).
void write(AnyRecord& r) noexcept;

// The in-place write protocol (docs/trace-format.md): a call record of `type` reserved in the
// thread's block, its head filled (api, start_ns = now, kFlagInFlight; `stack_id` with
// kFlagStackCaptured when the stack was taken before the call; `caller_ra`, the application's
// return address, in end_ns until the call completes: the call site of a call still in flight
// when the process dies) and published before the real call. nullptr when it cannot be written
// (counted in records_lost when such calls count). `*start` gets the start time; `*gen` the trace
// generation the record belongs to.
// Inline: every recorded call makes it (a launch's stack_id is a constant 0).
AnyRecord* begin_in_place_lost(uint64_t* start) noexcept;  // no room: counted as lost
inline __attribute__((always_inline)) AnyRecord* begin_in_place(trace::RecordType type, trace::Api api,
                                                                const void* caller_ra, uint32_t stack_id,
                                                                uint64_t* start, uint32_t* gen) noexcept {
  const uint32_t size = trace::record_info(static_cast<uint16_t>(type)).fixed;
  // The generation the reserved bytes belong to (the one reserve_active compared with its cursors').
  char* p = thread_buffer::reserve_active(size, gen);
  if (AW_UNLIKELY(!p)) return begin_in_place_lost(start);
  // The reserved bytes are zero (fresh file space, never handed out twice): only the head's known
  // fields that are not zero are stored (a launch's stack id is a constant 0).
  auto* h = reinterpret_cast<trace::CallHead*>(p);
  h->api = static_cast<uint16_t>(api);
  h->flags = trace::kFlagInFlight | (stack_id ? uint32_t{trace::kFlagStackCaptured} : 0u);
  if (stack_id) h->stack_id = stack_id;
  h->end_ns = reinterpret_cast<uintptr_t>(caller_ra);  // until completed: the caller (trace_format.h)
  *start = now_ns();
  h->start_ns = *start;
  thread_buffer::commit(p, type, size);  // visible from here on, in flight
  return reinterpret_cast<AnyRecord*>(p);
}
// After the real call: whether the record may still be written (not if the process forked meanwhile:
// it belongs to the parent's trace).
inline bool in_place_valid(uint32_t gen) noexcept { return trace_writer::generation() == gen; }
// A published record that is not wanted after all: it becomes Padding of the same size.
void cancel_in_place(AnyRecord* r) noexcept;
// Applies the stack policy (capture the call site when wanted) to a finished record; nothing when
// its stack was taken before the call.
void apply_stack_policy(AnyRecord& r, Category c) noexcept;

// Stacks taken BEFORE the call (docs/configuration.md, ASYNCWATCH_STACKS): for the calls that the
// policy gives a stack whatever they do, so that a call still in flight when the process is killed
// has its call site, and blocked times leave the capture out (start_ns is read after it).
// By category: host-function enqueues, memory management, managed-memory operations and graph
// construction (always a stack); every synchronization only under ASYNCWATCH_STACKS=all (a stack
// costs a polling loop of cudaStreamSynchronize ~2x: docs/performance.md). Copies and memsets
// decide from their sides, classified before the call (`copy_stack_before`). Launches: never
// (their per-call budget; a launch in flight keeps its caller's return address).
inline constexpr uint32_t kStackAlwaysBefore =
    1u << static_cast<unsigned>(Category::HostFunc) | 1u << static_cast<unsigned>(Category::MemoryOp) |
    1u << static_cast<unsigned>(Category::ManagedOp) | 1u << static_cast<unsigned>(Category::GraphOp);
inline constexpr uint32_t kStackBeforeUnderAll = 1u << static_cast<unsigned>(Category::Sync);
inline __attribute__((always_inline)) bool stack_before(Category c) noexcept {
  // One bit test for the categories that never take it (a launch), whether `c` is a constant or not.
  const uint32_t bit = 1u << static_cast<unsigned>(c);
  if (AW_LIKELY(!(bit & (kStackAlwaysBefore | kStackBeforeUnderAll)))) return false;
  const StackPolicy p = config_fast().stacks;
  return (bit & kStackAlwaysBefore ? p != StackPolicy::None : p == StackPolicy::All) && !tl_locals.call.reentrant;
}
// A copy or memset whose sides are known before the call: a stack then when the default policy
// would give it one whatever the call's duration (a side that is not known to be pinned or device
// memory, every host-to-host copy), or under ASYNCWATCH_STACKS=all.
// A host side that may make a copy synchronous (and so become a finding): anything but pinned
// host memory, device memory or an array.
inline constexpr uint32_t kDoubtfulSides = 1u << static_cast<unsigned>(trace::MemoryKind::Pageable) |
                                           1u << static_cast<unsigned>(trace::MemoryKind::Unknown) |
                                           1u << static_cast<unsigned>(trace::MemoryKind::Managed);
inline bool doubtful_side(trace::MemoryKind m) noexcept { return (kDoubtfulSides >> static_cast<unsigned>(m)) & 1u; }
inline __attribute__((always_inline)) bool copy_stack_before(const Config& cfg, trace::Direction d,
                                                             trace::MemoryKind src, trace::MemoryKind dst,
                                                             bool memset) noexcept {
  // The pinned/device copy of the hot path is decided by one mask test.
  const uint32_t sides = (memset ? 0u : 1u << static_cast<unsigned>(src)) | 1u << static_cast<unsigned>(dst);
  const StackPolicy p = cfg.stacks;
  if (AW_LIKELY(!(sides & kDoubtfulSides) && d != trace::Direction::HtoH) && p != StackPolicy::All) return false;
  return p != StackPolicy::None && !tl_locals.call.reentrant;
}
// A synchronize (stream, event, device or context): the host waits for the GPU. Not a query, nor a
// stream's wait on an event.
inline bool is_wait_api(trace::Api a) noexcept {
  switch (a) {
    case trace::Api::cudaStreamSynchronize:
    case trace::Api::cudaEventSynchronize:
    case trace::Api::cudaDeviceSynchronize:
    case trace::Api::cuStreamSynchronize:
    case trace::Api::cuEventSynchronize:
    case trace::Api::cuCtxSynchronize: return true;
    default: return false;
  }
}
// Default policy (docs/configuration.md): copies and memsets get a stack when a side is not known
// to be pinned or device memory (pageable, unknown, managed; every host-to-host copy) or when the
// call blocked longer than the launch threshold; host-function enqueues always; launches and
// synchronizations when they blocked longer than the threshold; memory-management calls (allocations,
// frees, registrations: slow and synchronizing anyway, their call sites are what implicit-sync names),
// prefetches and attaches, and explicit graph construction (the origin of a graph's memcpy nodes) always.
inline __attribute__((always_inline)) bool wants_stack(const AnyRecord& r, Category c, uint64_t blocked_ns) noexcept {
  const Config& cfg = config_fast();
  if (AW_LIKELY(cfg.stacks == StackPolicy::Default)) {
    switch (c) {
      case Category::Copy:
      case Category::BatchCopy:
      case Category::Memset:
        if (blocked_ns >= cfg.launch_stack_threshold_ns) return true;
        if (r.copy.direction == static_cast<uint8_t>(trace::Direction::HtoH)) return true;
        if (c == Category::Memset) return doubtful_side(static_cast<trace::MemoryKind>(r.copy.dst_memory));
        return doubtful_side(static_cast<trace::MemoryKind>(r.copy.src_memory)) ||
               doubtful_side(static_cast<trace::MemoryKind>(r.copy.dst_memory));
      case Category::HostFunc:
      case Category::MemoryOp:
      case Category::ManagedOp:
      case Category::GraphOp: return true;
      case Category::Launch: return blocked_ns >= cfg.launch_stack_threshold_ns;
      // A sync that waited: where it was made (a hidden sync inside a framework). A
      // synchronize made from outside the program's own code (a framework's `loss.item()`, a
      // library, ctypes) whatever it waited: a hidden sync is one by contract, and a loop's short
      // waits add up (docs/findings.md, hidden-sync). The program's own syncs (a polling loop of
      // them among them) keep the threshold.
      case Category::Sync:
        return blocked_ns >= cfg.launch_stack_threshold_ns || (is_wait_api(static_cast<trace::Api>(r.head.api)) &&
                                                               !stacks::called_from_program(tl_locals.call.caller.ra));
      default: return false;
    }
  }
  return cfg.stacks == StackPolicy::All;
}

// Stream creation and capture records never had a stack (before v2 they had no stack_id field);
// a reentrant call takes none.
inline bool takes_stacks(Category c) noexcept {
  return c != Category::Stream && c != Category::Capture && AW_LIKELY(!tl_locals.call.reentrant);
}

// The call site of the thread's current call, into `h` (out of line: a stack is the rare case).
void capture_stack(trace::CallHead& h) noexcept;
// Completes it: result and end time, the stack policy, then the flags without kFlagInFlight as the
// last store (release order). Inline: the policy is decided here with the category a constant, so
// the common call (a launch that did not block, a pinned copy) takes no stack and makes no call;
// one whose stack was taken before the call keeps it.
inline __attribute__((always_inline)) void finish_in_place(AnyRecord* r, Category c, int32_t result,
                                                           uint64_t end) noexcept {
  trace::CallHead& h = r->head;
  h.result = result;
  h.end_ns = end;
  if (takes_stacks(c) && wants_stack(*r, c, end - h.start_ns) && !(h.flags & trace::kFlagStackCaptured))
    capture_stack(h);
  __atomic_store_n(&h.flags, h.flags & ~uint32_t{trace::kFlagInFlight}, __ATOMIC_RELEASE);
  site_summary::after_call(&h);  // summary mode: folded into its signature's summary
}

// The call site of the thread's current call (the outermost wrapper's caller), captured now: its
// stack id, 0 when none could be taken.
uint32_t stack_now() noexcept;
// Inside a traced runtime call (a driver wrapper before its real call): stores the stack into the
// runtime call's record when this driver call is the one whose record it is and it has none yet.
void stack_into_target(ThreadCallState& st, Category c) noexcept;
// A driver wrapper inside a runtime call: the record whose body it fills (the runtime call's, for
// the first driver call of the runtime call's category), or nullptr (the runtime's internals; also
// when the runtime call's record could not be reserved).
AnyRecord* adopt_target(ThreadCallState& st, Category c) noexcept;

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

// Kernel name of a CUfunction/CUkernel, interned as a StringRecord; *first = first launch of
// this function in the process. The per-thread cache's hit is inline (every launch asks).
struct NameCacheEntry {
  void* fn;
  uint32_t id;
  uint32_t generation;
};
inline constexpr uint32_t kNameCacheSize = 128;
inline uint32_t name_cache_slot(const void* f) noexcept {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(f) >> 4) % kNameCacheSize);
}
extern AW_TLS_SHARED NameCacheEntry* tl_kernel_names;  // kNameCacheSize entries, or nullptr
uint32_t kernel_name_id_slow(cuda::CUfunction f, bool* first) noexcept;
// Any other interned text (NVTX range names): the id of its StringRecord (written on first use),
// in the kernel names' id space; 0 when it cannot be interned. Takes the name table's lock.
uint32_t string_id(const char* text, uint32_t len) noexcept;
// The cache's hit alone (`gen`: the trace's generation): `*id` set when `f` is cached for this trace
// and the call is not reentrant; otherwise false and nothing done (kernel_name_id_slow's case).
inline bool kernel_name_cached(cuda::CUfunction f, uint32_t gen, uint32_t* id) noexcept {
  const NameCacheEntry* names = tl_kernel_names;
  if (AW_LIKELY(names && f)) {
    const NameCacheEntry& e = names[name_cache_slot(f)];
    if (AW_LIKELY(e.fn == f && e.generation == gen && !tl_locals.call.reentrant)) {
      *id = e.id;
      return true;
    }
  }
  return false;
}
inline uint32_t kernel_name_id(cuda::CUfunction f, bool* first) noexcept {
  uint32_t id;
  if (AW_LIKELY(kernel_name_cached(f, trace_writer::generation(), &id))) {
    *first = false;
    return id;
  }
  return kernel_name_id_slow(f, first);
}

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

}  // namespace asyncwatch::calls
