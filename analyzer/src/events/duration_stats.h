// Count / total / min / max and a median of blocked times in bounded memory.
//
// The median is exact while a group holds at most kExactSamples values (they are kept);
// beyond that it comes from a log-bucket histogram: 64 octaves (powers of two of
// nanoseconds) split into 16 linear sub-buckets each, so a bucket spans 1/16 of its
// octave and the reported value (the bucket's midpoint, clamped to [min, max]) is within
// 1/32 (3.2 %) of the true median. 1024 counters, 8 KiB per group, whatever the count.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace asyncwatch {

// a + b, or UINT64_MAX where that would wrap (totals of times a trace claims).
inline uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

class LogHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = 64 * kSub;

  static int bucket_of(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);  // exact for tiny values
    int msb = 63 - __builtin_clzll(v);
    int sub = static_cast<int>((v >> (msb - kSubBits)) & (kSub - 1));
    return (msb - kSubBits + 1) * kSub + sub;
  }
  // [low, high) of a bucket.
  static uint64_t bucket_low(int b) {
    if (b < kSub) return static_cast<uint64_t>(b);
    int msb = b / kSub + kSubBits - 1;
    uint64_t sub = static_cast<uint64_t>(b % kSub);
    return (uint64_t{1} << msb) | (sub << (msb - kSubBits));
  }
  static uint64_t bucket_high(int b) {
    if (b < kSub) return static_cast<uint64_t>(b) + 1;
    int msb = b / kSub + kSubBits - 1;
    return bucket_low(b) + (uint64_t{1} << (msb - kSubBits));
  }

  void add(uint64_t v, uint64_t n = 1) {
    if (!counts_) counts_ = std::make_unique<std::array<uint64_t, kBuckets>>();
    add_counted(v, n);
  }
  // add() once the counters exist (after a first add).
  void add_counted(uint64_t v, uint64_t n = 1) {
    (*counts_)[static_cast<size_t>(bucket_of(v))] += n;
    total_ += n;
  }
  // add_counted(v) for one value, its counter's increment deferred: the bucket waits in `pending_`
  // and the batch goes to the counters when full. A group's 8 KiB of counters are out of the caches
  // (and the TLB) between its calls; a batch pays that once for kPending values, whose counters are
  // mostly the same few lines (the JSON report's records per second, docs/performance.md).
  __attribute__((always_inline)) void add_one(uint64_t v) {
    pending_[pending_n_++] = static_cast<uint16_t>(bucket_of(v));
    ++total_;
    if (__builtin_expect(pending_n_ == kPending, 0)) flush();
  }
  void merge(const LogHistogram& o) {
    if (!o.counts_) return;
    if (!counts_) counts_ = std::make_unique<std::array<uint64_t, kBuckets>>();
    for (size_t i = 0; i < kBuckets; ++i) (*counts_)[i] += (*o.counts_)[i];
    for (uint16_t i = 0; i < o.pending_n_; ++i) ++(*counts_)[o.pending_[i]];
    total_ += o.total_;
  }
  uint64_t count() const { return total_; }
  // Value of rank r (0-based) as its bucket's midpoint (the pending buckets counted with the rest).
  uint64_t value_at_rank(uint64_t r) const {
    if (!counts_) return 0;
    uint16_t pending[kPending];
    std::copy(pending_, pending_ + pending_n_, pending);
    std::sort(pending, pending + pending_n_);
    uint64_t seen = 0;
    for (int b = 0, p = 0; b < kBuckets; ++b) {
      seen += (*counts_)[static_cast<size_t>(b)];
      for (; p < pending_n_ && pending[p] == b; ++p) ++seen;
      if (seen > r) {
        uint64_t lo = bucket_low(b), hi = bucket_high(b);
        return lo + (hi - lo - 1) / 2;
      }
    }
    return 0;
  }

 private:
  static constexpr uint16_t kPending = 27;  // (with the count: 56 bytes)
  void flush() {
    for (uint16_t i = 0; i < pending_n_; ++i) ++(*counts_)[pending_[i]];
    pending_n_ = 0;
  }
  std::unique_ptr<std::array<uint64_t, kBuckets>> counts_;
  uint64_t total_ = 0;  // the pending values' too
  uint16_t pending_n_ = 0;
  uint16_t pending_[kPending] = {};  // buckets of values not yet in counts_ (add_one)
};

class DurationStats {
 public:
  static constexpr size_t kExactSamples = 32;

  // Inline: the analysis adds a value per pinned copy and per grouped call; past the exact
  // samples, that is a histogram counter.
  __attribute__((always_inline)) void add(uint64_t v) {
    ++count_;
    total_ = saturating_add(total_, v);  // absurd times from a trace: the largest, never a wrap
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    if (__builtin_expect(count_ > kExactSamples + 1, 1))
      hist_.add_one(v);  // spilled at kExactSamples + 1: its counters exist
    else
      add_first(v);
  }
  void merge(const DurationStats& o) {
    if (o.count_ == 0) return;
    if (count_ + o.count_ <= kExactSamples) {
      exact_.insert(exact_.end(), o.exact_.begin(), o.exact_.end());
    } else {
      if (count_ <= kExactSamples) spill();
      if (o.count_ <= kExactSamples)
        for (uint64_t v : o.exact_) hist_.add(v);
      else
        hist_.merge(o.hist_);
    }
    count_ += o.count_;
    total_ = saturating_add(total_, o.total_);
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  uint64_t count() const { return count_; }
  uint64_t total() const { return total_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  // The lower median: the value of rank (count-1)/2 in sorted order.
  uint64_t median() const {
    if (count_ == 0) return 0;
    uint64_t rank = (count_ - 1) / 2;
    if (count_ <= kExactSamples) {
      std::vector<uint64_t> v = exact_;
      std::nth_element(v.begin(), v.begin() + static_cast<long>(rank), v.end());
      return v[rank];
    }
    return std::clamp(hist_.value_at_rank(rank), min_, max_);
  }

 private:
  __attribute__((noinline)) void add_first(uint64_t v) {  // the first kExactSamples + 1 values
    if (count_ <= kExactSamples) {
      exact_.push_back(v);
      return;
    }
    spill();
    hist_.add(v);
  }
  void spill() {  // from exact samples to the histogram
    for (uint64_t v : exact_) hist_.add(v);
    exact_.clear();
    exact_.shrink_to_fit();
  }
  uint64_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  LogHistogram hist_;  // before exact_: the fields add() touches past the exact samples are adjacent
  std::vector<uint64_t> exact_;
};

}  // namespace asyncwatch
