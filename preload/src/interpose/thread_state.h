// What the calling thread is doing right now, shared by the driver and runtime wrappers: whether
// it is in the application, in the library's own code, or inside the real function of an active
// wrapper (its phase, below); which runtime API, if any, it is inside (so that the driver record
// names the API the application called and the call is recorded once, not twice).
#pragma once

#include <cerrno>
#include <cstdint>

#include "call_record.h"
#include "classify/host_memory_classifier.h"
#include "common.h"

namespace asyncwatch::calls {

// ---- The thread's phase (ThreadCallState::phase): the one place that explains the protocol ----
//
// One 32-bit word per thread that a signal handler, a nested wrapper and the exported stubs
// (entry_stubs.cpp, in assembly) read to know what the thread is doing:
//
//   kPhaseApplication (0)        in the application: no wrapper active. A wrapper entered now is an
//                                application call (the common case, tested first everywhere).
//   odd (kPhaseLibrary, 1;       the library's own code runs on this thread (an outer wrapper
//        kPhaseLibraryInRuntime, before or after its real call, a fork handler, the control API,
//        3; any value | 1)       LibraryScope). A wrapper entered now was called by a signal
//                                handler that interrupted us: it passes straight through and is
//                                counted in records_lost (our state, locks and open reservation
//                                stay untouched); a signal is deferred until the phase is even.
//   kPhaseInReal (2)             inside the real function of the outer wrapper. A wrapper entered
//                                now is either the CUDA library calling its own or the driver's
//                                entry points (the caller's return address lies in that library:
//                                nested, as always) or a handler (or callback) that interrupted
//                                the real function: then a call of its own, the state saved around
//                                it (SavedCallState). Under a runtime wrapper, a driver wrapper
//                                called by the runtime is the runtime call's driver half.
//   kPhaseLibraryInRuntime (3)   the library's own code of such a driver wrapper (odd, as above).
//   kPhaseInRealInRuntime (4)    inside that driver wrapper's real function.
//   kPhaseQuiet (bit 31)         or-ed in while a call counted as lost passes through: nothing
//                                under it counts again.
//   kPhaseHandler (bit 30)       an application's signal handler runs on a thread that was in the
//                                application: set and restored by the signal trampoline
//                                (signal_hooks.cpp); even, so its CUDA calls are reentrant calls
//                                (the handler may have interrupted malloc, or a lock of libc, that
//                                the library's bookkeeping would need).
//
// Each change is one store, so a signal handler sees either the old or the new value; a change
// from an odd value goes through set_phase, which delivers the signals deferred meanwhile.
// docs/interception.md ("Signals") tells the same for users.
inline constexpr uint32_t kPhaseApplication = 0;
inline constexpr uint32_t kPhaseLibrary = 1;
inline constexpr uint32_t kPhaseInReal = 2;
inline constexpr uint32_t kPhaseLibraryInRuntime = 3;
inline constexpr uint32_t kPhaseInRealInRuntime = 4;
inline constexpr uint32_t kPhaseQuiet = 1u << 31;
inline constexpr uint32_t kPhaseHandler = 1u << 30;
// The library's own code (any odd phase).
inline constexpr bool in_library(uint32_t phase) noexcept { return phase & kPhaseLibrary; }

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
// The caller of a runtime wrapper that its exported entry found called by the application
// (kPhaseApplication) with the trace recording in place: `run` then takes the short path of that
// case alone (runtime_hooks.cpp). A plain Caller decides again (the same result, the slow way).
struct AppCaller : Caller {};

// The outermost active wrapper.
enum Outer : uint8_t {
  kOuterNone = 0,
  kOuterDriver = 1,
  kOuterRuntime = 2,         // recording: the driver's record becomes the runtime call's
  kOuterRuntimePassive = 3,  // not recording (paused, stopped): nested driver wrappers pass through
};

struct ThreadCallState {
  uint32_t phase;       // kPhase* (above)
  uint8_t outer;        // Outer, meaningful while phase != kPhaseApplication
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
  if (AW_UNLIKELY(tl_locals.signals_deferred) && !in_library(p)) deliver_deferred_signals();
}

// False when nothing should be recorded (paused, disabled, tracing failed or closed); a call made
// after tracing stopped on a failure is counted in records_lost here.
bool recording() noexcept;
// The control API: pause (false) or resume (true) recording; returns 1 if it was recording, else 0.
int set_recording(bool on) noexcept;

// How a wrapper entered with phase != kPhaseApplication (and not the runtime -> driver fast path)
// proceeds.
enum class Nested : uint8_t {
  PassThrough,  // the CUDA library calling its own (or the driver's) entry point: not an application call
  Lost,         // a signal handler interrupted the library's code: pass through, counted in records_lost
  Reentrant,    // a handler (or callback) interrupted a real function or the application: a call of its own
  Application,  // a handler left with siglongjmp: the thread is in the application again (phase reset)
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
    st.phase = kPhaseLibrary;
    signal_fence();
    saved_ = st;
    saved_.phase = phase;
    st = ThreadCallState{};
    st.phase = kPhaseLibrary;
    set_phase(st, kPhaseApplication);
  }
  ~SavedCallState() {
    ThreadCallState& st = tl_locals.call;
    st.phase = kPhaseLibrary;
    signal_fence();
    uint32_t phase = saved_.phase;
    saved_.phase = kPhaseLibrary;
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
    tl_locals.call.phase = saved_ | kPhaseLibrary;
    signal_fence();
  }
  ~LibraryScope() { set_phase(tl_locals.call, saved_); }
  LibraryScope(const LibraryScope&) = delete;
  LibraryScope& operator=(const LibraryScope&) = delete;

 private:
  uint32_t saved_;
};

}  // namespace asyncwatch::calls
