// What one clock read costs on this machine (docs/performance.md, "Where the nanoseconds go"):
// every recorded call reads CLOCK_MONOTONIC twice (its start and end), which callgrind counts as a
// few instructions although it is the largest fixed cost of a call on some hosts (vDSO with a TSC
// clocksource: ~20 ns; a VM's or a non-TSC clocksource: more; a syscall fallback: ~0.5 us).
// Prints ns per call of clock_gettime(CLOCK_MONOTONIC), of clock_gettime(CLOCK_MONOTONIC_COARSE)
// and of rdtsc (x86-64), best of 5 rounds, and the clocksource in use; then the library's clock
// (preload/src/tsc_clock.h, what now_ns() reads) once calibrated (tsc_now_ns; "trusted" says
// whether the library would use it here, else now_ns() is clock_gettime). Asserts nothing.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "tsc_clock.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

template <class F>
double best_ns_per_call(F&& f) {
  constexpr int kCalls = 2000000;
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    double a = now_ns();
    for (int i = 0; i < kCalls; ++i) f();
    double per = (now_ns() - a) / kCalls;
    if (per < best) best = per;
  }
  return best;
}

}  // namespace

int main() {
  volatile unsigned long sink = 0;
  timespec t;
  double mono = best_ns_per_call([&] {
    clock_gettime(CLOCK_MONOTONIC, &t);
    sink = sink + static_cast<unsigned long>(t.tv_nsec);
  });
  double coarse = best_ns_per_call([&] {
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    sink = sink + static_cast<unsigned long>(t.tv_nsec);
  });
  char source[64] = "unknown";
  if (FILE* f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
    if (fscanf(f, "%63s", source) != 1) source[0] = 0;
    fclose(f);
  }
  std::printf("clock_cost: clocksource=%s clock_gettime_monotonic_ns=%.1f clock_gettime_coarse_ns=%.1f", source, mono,
              coarse);
#if defined(__x86_64__)
  double tsc = best_ns_per_call([&] { sink = sink + __rdtsc(); });
  std::printf(" rdtsc_ns=%.1f", tsc);
  namespace tc = asyncwatch::tsc_clock;
  tc::State state;
  tc::Calibrator cal(&state);
  cal.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  cal.update(1000000000, 10000000);
  double conv = best_ns_per_call([&] { sink = sink + tc::read(state); });
  std::printf(" tsc_now_ns=%.1f trusted=%d", conv, tc::trustworthy() ? 1 : 0);
#endif
  std::printf("\n");
  return 0;
}
