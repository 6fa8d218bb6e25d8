// The start routine of each thread the program created, as its pthread_create call named it: the
// one fact that tells a thread Python created (its start routine is the interpreter's) from one a
// native library created and that may call into Python later (PyTorch's autograd engine threads,
// any native pool): stack_capture.cpp lends the latter another thread's Python line after their own
// frames (docs/python-frames.md, "Borrowed frames").
#pragma once

#include <pthread.h>

#include <cstdint>

namespace asyncwatch::thread_starts {

// pthread_create (process_slots.cpp), after the thread started: `thread` runs `fn`. Any thread, no
// lock, no allocation: one store into a fixed table (an older thread's entry may be overwritten).
void note_created(pthread_t thread, void* (*fn)(void*)) noexcept;

// The calling thread's start routine, or 0 when not known: the main thread, a thread created
// before the library was loaded or not through pthread_create, or one whose entry was overwritten
// (then the caller treats it as it did before this table existed).
uint64_t start_routine_of_self() noexcept;

}  // namespace asyncwatch::thread_starts
