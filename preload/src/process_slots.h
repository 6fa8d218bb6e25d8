// The program's threads and processes come before the library's own thread (process_slots.cpp).
#pragma once

namespace asyncwatch::process_slots {

// After a call of the program's that failed with EAGAIN (a thread or process not started): ends
// the trace's file thread, so that its slot is the program's, and says so (stderr, the trace).
// True when the caller should try again. errno is kept.
bool give_back() noexcept;

}  // namespace asyncwatch::process_slots
