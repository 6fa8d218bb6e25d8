// Per-thread state the library allocates lazily (call-site and name caches, evidence events) is
// released when the thread exits, so a program that runs many short threads does not grow by it
// per thread. pthread key destructors run for threads that exit through pthread_exit or by
// returning, not for the main thread at process exit (nothing is torn down under the driver's
// own teardown).
#pragma once

namespace asyncwatch::thread_exit {

using Hook = void (*)() noexcept;

// Registers a hook run in every exiting thread that called watch_this_thread (set at load).
void add_hook(Hook h) noexcept;

// The calling thread holds something a hook releases. Cheap after the first call per thread.
void watch_this_thread() noexcept;

}  // namespace asyncwatch::thread_exit
