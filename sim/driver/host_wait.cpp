#include "host_wait.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>

namespace aw_sim {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void busy_wait_until(uint64_t deadline_ns) {
  if (config().host_waits_block) return sleep_until(deadline_ns);
  while (now_ns() < deadline_ns) sched_yield();
}

std::mutex& progress_mutex() {
  static std::mutex* m = new std::mutex();  // leaked: detached workers outlive static destruction
  return *m;
}
std::condition_variable& progress_cv() {
  static std::condition_variable* cv = new std::condition_variable();
  return *cv;
}

void notify_progress() {
  { std::lock_guard<std::mutex> lock(progress_mutex()); }
  progress_cv().notify_all();
}

void block_until(const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(progress_mutex());
  while (!done()) progress_cv().wait_for(lock, std::chrono::microseconds(100));
}

void sleep_until(uint64_t deadline_ns) {
  if (now_ns() >= deadline_ns) return;  // already past: no system call
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {}
}

}  // namespace aw_sim
