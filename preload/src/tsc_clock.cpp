#include "tsc_clock.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "config.h"
#include "cpu_features.h"

namespace asyncwatch::tsc_clock {

State g_state;

namespace {

#if defined(__x86_64__)
// The writer's reads are ordered (lfence): a pair brackets its clock_gettime tightly.
uint64_t ordered_tsc() noexcept {
  _mm_lfence();
  return __rdtsc();
}
#else
uint64_t ordered_tsc() noexcept { return 0; }
#endif

uint64_t ticks_for(uint64_t ns, uint64_t mult) noexcept {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / mult);
}

}  // namespace

bool trustworthy() noexcept {
#if defined(__x86_64__)
  // Invariant TSC: constant rate, runs in every C-/P-state.
  if (!cpu_features::get().invariant_tsc) return false;
  // The system calls, not open()/read(): no cancellation point, nothing the application interposes.
  int fd = static_cast<int>(syscall(
      SYS_openat, AT_FDCWD, "/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  char buf[32] = {};
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  return n >= 3 && !memcmp(buf, "tsc", 3) && (n == 3 || buf[3] == '\n');
#else
  return false;
#endif
}

bool Calibrator::pair(uint64_t* tsc, uint64_t* ns) noexcept {
  // The tightest of a few brackets (a preempted one is wide); its midpoint stands for the read.
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t t1 = ordered_tsc();
    uint64_t m = mono_();
    uint64_t t2 = ordered_tsc();
    if (t2 < t1) continue;
    if (t2 - t1 < best) {
      best = t2 - t1;
      *tsc = t1 + (t2 - t1) / 2;
      *ns = m;
    }
  }
  return best != UINT64_MAX;
}

void Calibrator::begin() noexcept {
  if (!pair(&prev_tsc_, &prev_ns_)) prev_tsc_ = prev_ns_ = 0;
}

bool Calibrator::update(uint64_t period_ns, uint64_t min_interval_ns) noexcept {
  uint64_t tc, mc;
  if (!pair(&tc, &mc)) return false;
  if (prev_tsc_ == 0 || tc <= prev_tsc_ || mc <= prev_ns_) {  // no usable earlier pair: start again
    prev_tsc_ = tc;
    prev_ns_ = mc;
    return false;
  }
  if (mc - prev_ns_ < min_interval_ns) return false;
  // The source's rate over the last interval (NTP's slew included), ns per tick times 2^32.
  const uint64_t rate = static_cast<uint64_t>((static_cast<unsigned __int128>(mc - prev_ns_) << 32) / (tc - prev_tsc_));
  prev_tsc_ = tc;
  prev_ns_ = mc;
  if (rate == 0 || rate >> 62) return false;
  const uint64_t n = s_->seq.load(std::memory_order_relaxed);  // only this thread stores it
  uint64_t bt = tc, bn = mc, m = rate;
  if (n != 0) {
    const Slot& cur = s_->slot[n & 1];
    const uint64_t ot = cur.base_tsc.load(std::memory_order_relaxed);
    const uint64_t on = cur.base_ns.load(std::memory_order_relaxed);
    const uint64_t om = cur.mult.load(std::memory_order_relaxed);
    last_error_ = static_cast<int64_t>(mc - convert(tc, ot, on, om));
    const uint64_t err = last_error_ < 0 ? 0 - static_cast<uint64_t>(last_error_) : static_cast<uint64_t>(last_error_);
    if (err <= kStepNs) {
      // Slew: continuous at the crossing tick, with the slope that meets the source (extrapolated
      // at its measured rate) period_ns after it.
      const uint64_t p = ticks_for(period_ns, rate);
      const uint64_t lo = rate - rate / 1'000'000 * kMaxSlewPpm, hi = rate + rate / 1'000'000 * kMaxSlewPpm;
      auto slope_at = [&](uint64_t tp) {
        int64_t gap = static_cast<int64_t>(convert(tp + p, tc, mc, rate) - convert(tp, ot, on, om));
        __int128 q = (static_cast<__int128>(gap) << 32) / static_cast<__int128>(p);
        return q < static_cast<__int128>(lo) ? lo : q > static_cast<__int128>(hi) ? hi : static_cast<uint64_t>(q);
      };
      const uint64_t ahead = ticks_for(kFutureCrossingNs, rate);
      const uint64_t now = ordered_tsc();
      if (delay_) delay_();  // tests: a writer descheduled here
      bt = now;
      m = slope_at(bt);
      if (m < om) {  // a smaller slope: cross ahead, where readers of either slot have not got yet
        bt = now + ahead;
        m = slope_at(bt);
        if (m > om) m = om;  // never a larger slope with a crossing ahead
        // Descheduled since `now` for half the margin: readers of the old slot may get close to the
        // crossing; publish nothing this time rather than risk a step back.
        if (ordered_tsc() - now > ahead / 2) {
          ++skipped_;
          return false;
        }
      }
      bn = convert(bt, ot, on, om);
    }
    // else: a jump (suspend, a migrated VM): re-based on the pair, a step (docs/interception.md)
  }
  Slot& w = s_->slot[(n + 1) & 1];
  // Readers of seq n use the other slot; one still reading this slot (seq n - 1) sees seq move
  // (release stores: see read()).
  w.base_tsc.store(bt, std::memory_order_release);
  w.base_ns.store(bn, std::memory_order_release);
  w.mult.store(m, std::memory_order_release);
  s_->seq.store(n + 1, std::memory_order_release);
  ++updates_;
  return true;
}

namespace {
// Owned by the file thread (one at a time; a fork child's new thread continues the parent's).
Calibrator g_calibrator(&g_state);
bool g_started = false;
bool g_use = false;
uint64_t g_due_ns = 0;
uint64_t g_period_ns = 0;
constexpr uint64_t kFirstNs = 20'000'000, kSecondNs = 200'000'000, kPeriodNs = 1'000'000'000;
}  // namespace

void start(bool may_open_files) noexcept {
  if (g_started) return;
  g_started = true;
  // Not without a descriptor table of our own: reading the clocksource would briefly take one of
  // the application's descriptor numbers.
  g_use = may_open_files && config().tsc_clock && trustworthy();
  if (!g_use) return;
  g_calibrator.begin();
  g_due_ns = monotonic_ns() + kFirstNs;
  g_period_ns = kSecondNs;
}

uint64_t tick() noexcept {
  if (!g_use) return 0;
  uint64_t now = monotonic_ns();
  if (now < g_due_ns) return g_due_ns - now;
  g_calibrator.update(g_period_ns, kFirstNs / 2);
  g_due_ns = now + g_period_ns;
  uint64_t wait = g_period_ns;
  g_period_ns = kPeriodNs;
  return wait;
}

}  // namespace asyncwatch::tsc_clock
