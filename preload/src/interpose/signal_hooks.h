// The application's signal handlers, run through the library's trampoline (signal_hooks.cpp):
//  - a handler never runs inside the library's own code: an asynchronous signal that arrives there
//    is deferred and sent again to the thread, with its siginfo, the moment the thread leaves it
//    (thread_state.h, set_phase). So no lock or allocation of ours is ever held under a handler,
//    and no handler's CUDA call has to be counted lost;
//  - a CUDA call made from a handler that interrupted the application itself (phase 0) is known to
//    be one: the handler may have interrupted malloc or a lock of libc, so the call is recorded the
//    reentrant way (thread_state.h: no allocation, no lock, no driver query of ours).
// Synchronous signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS raised by an instruction)
// and handlers with SA_RESETHAND run at once, as before. docs/interception.md, "Signals".
#pragma once

#include "call_context.h"

namespace asyncwatch::signals {

// With st.phase == kPhaseHandler: whether the handler the trampoline marked is still running (the
// caller's frame `frame` lies below the trampoline's, on the same stack, and the trampoline's
// return address is still in place), or was left with siglongjmp.
bool handler_running(const calls::ThreadCallState& st, const void* frame) noexcept;
// The handler was left with siglongjmp: the thread is in the application again.
void handler_left(calls::ThreadCallState& st) noexcept;

// In a fork child: signals deferred in the parent's thread are the parent's (the kernel gives the
// child no pending signals); dropped.
void forget_deferred() noexcept;

// The library's constructor: looks the real sigaction/signal functions up (a handler may call
// sigaction; dlsym is not async-signal-safe).
void init() noexcept;

}  // namespace asyncwatch::signals
