// How the simulator spends time. Host-side waits spin (busy loop + sched_yield), as the real runtime
// does under cudaDeviceScheduleAuto, so CPU-time measurements (the seed uses CLOCK_PROCESS_CPUTIME_ID)
// see the blocking. Stream workers sleep instead: they stand for the GPU, which costs no host CPU.
#pragma once
#include <cstdint>
#include <sched.h>

namespace aw_sim {

uint64_t now_ns();  // CLOCK_MONOTONIC

// Burn the calling thread's CPU until `deadline_ns`.
void busy_wait_until(uint64_t deadline_ns);

// Sleep (no CPU) until `deadline_ns`; returns at once if it has passed.
void sleep_until(uint64_t deadline_ns);

template <class Predicate>
void spin_until(Predicate done) {
  while (!done()) sched_yield();
}

}  // namespace aw_sim
