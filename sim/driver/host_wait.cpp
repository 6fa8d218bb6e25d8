#include "host_wait.h"

#include <ctime>

namespace aw_sim {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void busy_wait_until(uint64_t deadline_ns) {
  while (now_ns() < deadline_ns) sched_yield();
}

void sleep_until(uint64_t deadline_ns) {
  if (now_ns() >= deadline_ns) return;  // already past: no system call
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {}
}

}  // namespace aw_sim
