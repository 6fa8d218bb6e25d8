// The TSC clock (preload/src/tsc_clock.h): conversion, tracking of the source, monotonicity
// across updates. Each test uses its own State and Calibrator, updated far more often than the
// process's (every second), with a source that slews; the errors are printed, and the bounds
// asserted are generous (a loaded VM deschedules any thread for milliseconds).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "config.h"
#include "tsc_clock.h"

namespace {

using namespace asyncwatch;
using namespace asyncwatch::tsc_clock;

bool have_tsc() { return read_tsc() != 0; }

TEST(TscClock, ConvertsEarlierTicksToo) {
  const uint64_t mult = 1ull << 31;  // 0.5 ns per tick
  EXPECT_EQ(convert(1000, 1000, 5000, mult), 5000u);
  EXPECT_EQ(convert(1200, 1000, 5000, mult), 5100u);
  EXPECT_EQ(convert(800, 1000, 5000, mult), 4900u);  // a crossing ahead: earlier ticks convert below it
  // A day of a 5 GHz TSC at 0.2 ns per tick: no overflow (128-bit product); mult's 32-bit fraction
  // is short by 0.2 of 2^-32 ns per tick (2.3e-10: 20 us a day, 0.23 ns in a calibration period).
  const uint64_t day = 86400ull * 5'000'000'000ull;
  EXPECT_NEAR(static_cast<double>(convert(day, 0, 0, (1ull << 32) / 5)), static_cast<double>(day / 5), 20200.0);
}

TEST(TscClock, NotCalibratedIsClockGettime) {
  State s;
  uint64_t a = monotonic_ns();
  uint64_t v = read(s);
  uint64_t b = monotonic_ns();
  EXPECT_LE(a, v);
  EXPECT_LE(v, b);
}

TEST(Config, Clock) {
  Config c = parse_config(
      [](const char* n) -> const char* { return std::string(n) == "ASYNCWATCH_CLOCK" ? "monotonic" : nullptr; },
      [](const std::string&) { ADD_FAILURE(); });
  EXPECT_FALSE(c.tsc_clock);
  c = parse_config([](const char*) -> const char* { return nullptr; }, [](const std::string&) { ADD_FAILURE(); });
  EXPECT_TRUE(c.tsc_clock);
  static int warned;
  warned = 0;
  c = parse_config([](const char* n) -> const char* { return std::string(n) == "ASYNCWATCH_CLOCK" ? "hpet" : nullptr; },
                   [](const std::string& w) { warned += w.find("ASYNCWATCH_CLOCK") != std::string::npos; });
  EXPECT_TRUE(c.tsc_clock);
  EXPECT_EQ(warned, 1);
}

// A source that slews like NTP at its limit, +-500 ppm, alternating every 5 ms (a triangle wave of
// 2.5 us around CLOCK_MONOTONIC); strictly increasing.
std::atomic<uint64_t> g_t0{0};
uint64_t slewed_ns() {
  const uint64_t t = monotonic_ns() - g_t0.load(std::memory_order_relaxed);
  const uint64_t phase = 5'000'000, k = t / phase, r = t % phase;
  const uint64_t off = (k % 2 == 0) ? r / 2000 : phase / 2000 - r / 2000;
  return g_t0.load(std::memory_order_relaxed) + t + off;
}

// |value - source| for a value read between two source reads: 0 inside, else the distance.
uint64_t outside(uint64_t a, uint64_t v, uint64_t b) { return v < a ? a - v : v > b ? v - b : 0; }

TEST(TscClock, TracksTheSourceOverManyUpdates) {
  if (!have_tsc()) GTEST_SKIP() << "no TSC";
  State s;
  Calibrator cal(&s);
  cal.begin();
  uint64_t worst = 0, worst_after_first = 0, samples = 0, max_error = 0;
  const uint64_t period = 10'000'000;  // 10 ms: 100 updates a second
  std::this_thread::sleep_for(std::chrono::nanoseconds(period));
  ASSERT_TRUE(cal.update(period, period / 2));
  for (int u = 0; u < 100; ++u) {
    const uint64_t due = monotonic_ns() + period;
    while (monotonic_ns() < due) {
      for (int i = 0; i < 100; ++i) {
        uint64_t a = monotonic_ns(), v = read(s), b = monotonic_ns();
        uint64_t e = outside(a, v, b);
        worst = std::max(worst, e);
        if (u > 0) worst_after_first = std::max(worst_after_first, e);
        ++samples;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    cal.update(period, period / 2);
    uint64_t le = static_cast<uint64_t>(std::abs(cal.last_error_ns()));
    max_error = std::max(max_error, le);
  }
  std::printf(
      "tsc_clock: %llu updates, %llu samples: worst |now - CLOCK_MONOTONIC| %llu ns (%llu ns after the first "
      "period), worst error found by an update %llu ns\n",
      static_cast<unsigned long long>(cal.updates()), static_cast<unsigned long long>(samples),
      static_cast<unsigned long long>(worst), static_cast<unsigned long long>(worst_after_first),
      static_cast<unsigned long long>(max_error));
  EXPECT_GE(cal.updates(), 50u);
  EXPECT_LT(worst, 1'000'000u);  // generous: the documented bound is measured, not this
}

// The writer spins 200 us between its tick and its publication, so that readers read the old
// slot well after the tick: a slope that shrinks with its crossing at the tick would step back
// (hundreds of ns with these slews; the crossing 2 ms ahead is what prevents it).
TEST(TscClock, MonotonicOnEachThreadUnderConcurrentUpdates) {
  if (!have_tsc()) GTEST_SKIP() << "no TSC";
  g_t0 = monotonic_ns();
  State s;
  Calibrator cal(&s, &slewed_ns);
  cal.delay_before_publishing([] {
    const uint64_t until = monotonic_ns() + 200'000;
    while (monotonic_ns() < until) {}
  });
  cal.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(cal.update(1'000'000, 100'000));
  std::atomic<bool> stop{false};
  constexpr int kReaders = 2;
  std::vector<uint64_t> back(kReaders, 0), worst_back(kReaders, 0), reads(kReaders, 0), off(kReaders, 0);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      uint64_t prev = read(s);
      while (!stop.load(std::memory_order_relaxed)) {
        uint64_t a = slewed_ns(), v = read(s), b = slewed_ns();
        if (v < prev) {
          ++back[r];
          worst_back[r] = std::max(worst_back[r], prev - v);
        }
        off[r] = std::max(off[r], outside(a, v, b));
        prev = v;
        ++reads[r];
      }
    });
  }
  const uint64_t end = monotonic_ns() + 500'000'000;
  while (monotonic_ns() < end) {
    cal.update(1'000'000, 100'000);  // 1 ms periods, at most 10,000 updates a second
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  stop = true;
  for (auto& t : readers) t.join();
  uint64_t total_back = 0, total_reads = 0, worst_off = 0;
  for (int r = 0; r < kReaders; ++r) {
    total_back += back[r];
    total_reads += reads[r];
    worst_off = std::max(worst_off, off[r]);
  }
  std::printf(
      "tsc_clock: %llu updates (%llu skipped), %llu reads on %d threads, %llu steps back, worst |now - source| "
      "%llu ns\n",
      static_cast<unsigned long long>(cal.updates()), static_cast<unsigned long long>(cal.skipped()),
      static_cast<unsigned long long>(total_reads), kReaders, static_cast<unsigned long long>(total_back),
      static_cast<unsigned long long>(worst_off));
  EXPECT_GE(cal.updates(), 100u);
  EXPECT_EQ(total_back, 0u) << "worst step back " << *std::max_element(worst_back.begin(), worst_back.end()) << " ns";
  EXPECT_LT(worst_off, 1'000'000u);
}

}  // namespace
