// Call-site stacks: raw return addresses (Boost.Stacktrace's unwinder), interned so that each
// unique stack is written once as a StackRecord and every call carries only its id.
#pragma once

#include <cstdint>

namespace asyncwatch::stacks {

// Captures the calling thread's stack (frames inside libasyncwatch dropped) and returns its id
// in the current trace, writing a StackRecord the first time. 0 when nothing could be captured.
//
// DWARF unwinding costs ~0.3-0.5 us per frame, far above the per-call budget, so the result is
// cached per thread under a call-site key: `caller_ra` (where the application called our
// exported function) and the depth of `caller_frame` below the thread's stack top. The same
// call site at the same stack depth is usually the same stack, but not always: a statically
// linked runtime calls the driver from one place for every application call site. So each
// cache entry also keeps where on the stack the first return addresses of its stack were found,
// and a hit must find the same values there (a few loads); otherwise the stack is unwound.
// One verified hit in kVerifyEvery is unwound in full anyway and counted if it differs.
// With caller_ra == nullptr the stack is always unwound.
uint32_t capture_call_site(const void* caller_ra, const void* caller_frame) noexcept;

// Whether `ra` (a call's return address) lies in the traced program's own executable code: a
// synchronization made from anywhere else (a framework, a library, ctypes) gets a stack whatever
// it waited (interpose/stack_policy.h, wants_stack). A few loads once the program's range is known.
bool called_from_program(const void* ra) noexcept;

// With Python frames (ASYNCWATCH_PYTHON, on by default): when the calling thread runs Python, the
// stack is the native one plus its Python frames (python_frames.h: no GIL, no interpreter call, no
// allocation on a hit), interned as one StackRecord with python_depth > 0; each code object is
// written once per trace as a PyCodeRecord. Nothing but one load and compare without Python.

// At trace open (lifecycle.cpp): finds the interpreter and writes the PythonInfo record when the
// process has one (nothing otherwise).
void python_trace_opened() noexcept;
// pthread_atfork child handler: a search cut by fork starts again (the child's trace re-interns
// everything: ids are per trace).
void python_after_fork_child() noexcept;

// The library constructor (lifecycle.cpp) hands over the process's argv: it lies at the top of the
// main thread's stack, above every frame, which is what the call-site key's depth needs. Taken
// from there rather than from glibc's __libc_stack_end, which would make ld.so a dependency of ours
// and put it ahead of the application's libraries in the global scope (docs/performance.md).
void set_main_stack_top(const void* argv) noexcept;

// Statistics for tests and benchmarks.
struct CacheStats {
  uint64_t hits, unwinds, mismatches;
  // Stacks given borrowed Python frames by a walk, by a confirmation of the thread's last walk
  // (python_frames::confirm_borrowed), by a waiting lender's last read taken again unread beyond
  // the confirmations' budget (kReuseNs); borrowed walks refused by the rate limit.
  uint64_t borrowed, borrow_confirmed, borrow_reused, borrow_limited;
};
CacheStats cache_stats() noexcept;

// Interning alone (tests): id of these frames, writing a StackRecord if new.
uint32_t intern(const uint64_t* frames, uint32_t depth) noexcept;

// Frees the calling thread's caches (thread_exit hook; set up by lifecycle.cpp).
void release_thread() noexcept;

// pthread_atfork handlers (lifecycle.cpp): the forking thread holds the interning lock across
// fork(), so the child never inherits it held by another thread (a deadlock at the child's first
// new stack) nor the table of stacks half updated.
void lock_for_fork() noexcept;
void unlock_after_fork() noexcept;

}  // namespace asyncwatch::stacks
