// CLOCK_MONOTONIC nanoseconds computed from the TSC (docs/interception.md, "Times"): every
// recorded call reads the clock twice, and on the H200 host clock_gettime costs 36.5 ns against
// rdtsc's 20.2 ns (docs/performance.md). The values keep CLOCK_MONOTONIC's meaning: the
// trace's file thread calibrates the conversion against clock_gettime in the background and
// re-calibrates it every second (NTP slews CLOCK_MONOTONIC's rate), the way the kernel's vDSO
// converts, without its seqlock spin and clock-mode checks. Until the first calibration, and where
// the TSC is not trustworthy (clocksource not tsc, no invariant TSC, ASYNCWATCH_CLOCK=monotonic),
// read() is clock_gettime.
//
// Publication: two slots and a publication count `seq` (0: not calibrated). The writer fills slot
// (seq + 1) & 1, which no reader of the current count uses, then bumps seq; a reader takes slot
// seq & 1 and takes it again when seq moved meanwhile (once a second at most, and never while
// the writer prepares a slot: readers never wait for it).
//
// Monotonic on one thread across an update: the new conversion equals the old one at a crossing
// tick `base_tsc` and only its slope changes. A reader that used the old slot after the writer
// took its tick must never get more than one that uses the new slot later; the crossing is the
// writer's tick when the slope grows (new >= old after it) and kFutureCrossingNs after it when the
// slope shrinks (new >= old before it); the writer publishes nothing when it was descheduled for
// half that time between its tick and its publication.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace asyncwatch::tsc_clock {

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
inline uint64_t read_tsc() noexcept { return __rdtsc(); }
#else
inline uint64_t read_tsc() noexcept { return 0; }  // never calibrated: read() stays clock_gettime
#endif

// ns = base_ns + ((tsc - base_tsc) * mult) >> 32, the difference signed (a slot whose crossing is
// ahead converts earlier ticks too).
struct Slot {
  std::atomic<uint64_t> base_tsc{0};
  std::atomic<uint64_t> base_ns{0};
  std::atomic<uint64_t> mult{0};  // ns per tick, times 2^32
};
struct alignas(64) State {
  std::atomic<uint64_t> seq{0};
  Slot slot[2];
};

inline uint64_t convert(uint64_t tsc, uint64_t base_tsc, uint64_t base_ns, uint64_t mult) noexcept {
  __int128 d = static_cast<__int128>(static_cast<int64_t>(tsc - base_tsc)) * static_cast<int64_t>(mult);
  return base_ns + static_cast<uint64_t>(static_cast<int64_t>(d >> 32));
}

inline uint64_t read(const State& s) noexcept {
  uint64_t n = s.seq.load(std::memory_order_acquire);
  if (n == 0) return monotonic_ns();
  for (;;) {
    // The slot's fields at displacements from one address (`s.slot[n & 1]` has GCC compute one
    // address per field: two instructions more on every read).
    const Slot& sl = *reinterpret_cast<const Slot*>(reinterpret_cast<const char*>(&s) + offsetof(State, slot) +
                                                    (n & 1) * sizeof(Slot));
    // Acquire loads (plain moves on x86-64), no fence (TSan does not model fences): a value from a
    // rewrite of this slot, stored with release after the count moved, makes the count's re-read see it.
    uint64_t bt = sl.base_tsc.load(std::memory_order_acquire);
    uint64_t bn = sl.base_ns.load(std::memory_order_acquire);
    uint64_t m = sl.mult.load(std::memory_order_acquire);
    uint64_t t = read_tsc();
    uint64_t n2 = s.seq.load(std::memory_order_relaxed);
    if (__builtin_expect(n2 == n, 1)) return convert(t, bt, bn, m);
    n = n2;  // a publication during this read: the slot may be the one being rewritten
  }
}

// The process's clock (common.h now_ns()).
extern State g_state;

// Whether this machine's TSC may stand for CLOCK_MONOTONIC: invariant TSC (CPUID) and the
// kernel's clocksource is tsc. Opens a file in /sys: the file thread calls it, in its own
// descriptor table.
bool trustworthy() noexcept;

constexpr uint64_t kFutureCrossingNs = 2'000'000;  // see the header comment
constexpr uint64_t kStepNs = 1'000'000;            // an error above this re-bases (a step) instead of slewing
constexpr uint64_t kMaxSlewPpm = 1000;             // the slope stays within this of the measured rate

// Calibrates a State against a monotonic source (the process's: the file thread; tests: their own
// state and a skewed source). Used by one thread at a time.
class Calibrator {
 public:
  using Source = uint64_t (*)();
  explicit Calibrator(State* s, Source mono = &monotonic_ns) noexcept : s_(s), mono_(mono) {}
  // Takes the first (tsc, ns) pair; nothing is published yet.
  void begin() noexcept;
  // Takes a pair; when at least min_interval_ns passed since the last, publishes a conversion that
  // meets the source again `period_ns` from now (the first publication starts read()'s use of the
  // TSC). Returns whether it published.
  bool update(uint64_t period_ns, uint64_t min_interval_ns) noexcept;
  // |source - converted| at the last update, before it published (what the previous slope missed).
  int64_t last_error_ns() const noexcept { return last_error_; }
  uint64_t updates() const noexcept { return updates_; }
  // Updates not published because the writer was descheduled too long (see update()).
  uint64_t skipped() const noexcept { return skipped_; }
  // Tests: called between the writer's tick and its publication (a writer descheduled there).
  void delay_before_publishing(void (*f)()) noexcept { delay_ = f; }

 private:
  bool pair(uint64_t* tsc, uint64_t* ns) noexcept;
  State* s_;
  Source mono_;
  uint64_t prev_tsc_ = 0, prev_ns_ = 0;
  int64_t last_error_ = 0;
  uint64_t updates_ = 0;
  uint64_t skipped_ = 0;
  void (*delay_)() = nullptr;
};

// The process's calibration schedule, run by the trace's file thread: start() once (decides
// whether the TSC is used; may_open_files: the thread has a descriptor table of its own), then
// tick() whenever it wakes; tick() returns the ns until it wants to run again (0: never). First
// publication 20 ms after start() (no busy-wait: clock_gettime until then), the next 200 ms later,
// then every second.
void start(bool may_open_files) noexcept;
uint64_t tick() noexcept;

}  // namespace asyncwatch::tsc_clock
