// How the simulator spends time. Host-side waits spin (busy loop + sched_yield), as the real runtime
// does under cudaDeviceScheduleAuto, so CPU-time measurements (the seed uses CLOCK_PROCESS_CPUTIME_ID)
// see the blocking. Stream workers sleep instead: they stand for the GPU, which costs no host CPU.
// With ASYNCWATCH_SIM_HOST_WAIT=block (sim_config.h) the host's waits sleep too, as under
// cudaDeviceScheduleBlockingSync: the same blocking in time, no CPU burnt. The test suite runs so
// (.ci/test): a spinning wait takes a core from the tests and builds beside it on a 2-core machine;
// the tests that measure CPU time (the seed's) ask for spin.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <sched.h>

#include "sim_config.h"

namespace aw_sim {

uint64_t now_ns();  // CLOCK_MONOTONIC

// Burn the calling thread's CPU until `deadline_ns` (sleep until then when host waits block).
void busy_wait_until(uint64_t deadline_ns);

// Sleep (no CPU) until `deadline_ns`; returns at once if it has passed.
void sleep_until(uint64_t deadline_ns);

// Sleeps until `done()`: woken by the streams' progress (notify_progress), and every 100 us for
// what no progress announces (a copy gate, a module load).
void block_until(const std::function<bool()>& done);
// The streams' progress (an operation completed), and its lock and condition (stream_engine.cpp
// waits on them for its dependencies).
void notify_progress();
std::mutex& progress_mutex();
std::condition_variable& progress_cv();

template <class Predicate>
void spin_until(Predicate done) {
  if (done()) return;
  if (config().host_waits_block) return block_until(done);
  while (!done()) sched_yield();
}

}  // namespace aw_sim
