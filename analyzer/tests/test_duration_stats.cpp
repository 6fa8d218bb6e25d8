#include "events/duration_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using namespace asyncwatch;

TEST(DurationStats, ExactForFewSamples) {
  DurationStats s;
  for (uint64_t v : {5u, 1u, 9u, 3u}) s.add(v);
  EXPECT_EQ(s.count(), 4u);
  EXPECT_EQ(s.total(), 18u);
  EXPECT_EQ(s.min(), 1u);
  EXPECT_EQ(s.max(), 9u);
  EXPECT_EQ(s.median(), 3u);  // lower median
  DurationStats one;
  one.add(1740000000);
  EXPECT_EQ(one.median(), 1740000000u);
  DurationStats none;
  EXPECT_EQ(none.median(), 0u);
  EXPECT_EQ(none.min(), 0u);
}

TEST(DurationStats, HistogramMedianWithinDocumentedPrecision) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(12.0, 2.0);
  for (int trial = 0; trial < 20; ++trial) {
    DurationStats s;
    std::vector<uint64_t> values;
    for (int i = 0; i < 10001; ++i) {
      auto v = static_cast<uint64_t>(dist(rng)) + 1;
      values.push_back(v);
      s.add(v);
    }
    std::nth_element(values.begin(), values.begin() + 5000, values.end());
    double truth = static_cast<double>(values[5000]);
    double err = std::abs(static_cast<double>(s.median()) - truth) / truth;
    EXPECT_LE(err, 1.0 / 32) << "trial " << trial;
  }
}

TEST(DurationStats, MergeKeepsExactnessWhileSmallAndSpillsAfter) {
  DurationStats a, b;
  for (uint64_t v = 1; v <= 10; ++v) a.add(v * 100);
  for (uint64_t v = 11; v <= 20; ++v) b.add(v * 100);
  a.merge(b);
  EXPECT_EQ(a.count(), 20u);
  EXPECT_EQ(a.median(), 1000u);
  DurationStats big;
  for (uint64_t v = 1; v <= 1000; ++v) big.add(v * 1000);
  a.merge(big);
  EXPECT_EQ(a.count(), 1020u);
  EXPECT_EQ(a.max(), 1000000u);
  double m = static_cast<double>(a.median());
  EXPECT_NEAR(m, 490000.0, 490000.0 / 32 + 10000);
}

TEST(LogHistogram, BucketsCoverEveryValue) {
  for (uint64_t v : {0ull, 1ull, 15ull, 16ull, 17ull, 1000ull, 123456789ull, 1ull << 40, ~0ull}) {
    int b = LogHistogram::bucket_of(v);
    ASSERT_LT(b, LogHistogram::kBuckets);
    EXPECT_LE(LogHistogram::bucket_low(b), v);
    if (v != ~0ull) {
      EXPECT_GT(LogHistogram::bucket_high(b), v);
    }
  }
}

// add_one defers its counter to a batch: every rank, before and after merges, must be what
// counting each value at once gives (the sorted values' buckets).
TEST(LogHistogram, BatchedAddsCountAsTheyCome) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(11.0, 1.5);
  auto expected_at = [](std::vector<uint64_t> values, uint64_t rank) {
    std::sort(values.begin(), values.end());
    const int b = LogHistogram::bucket_of(values[rank]);
    const uint64_t lo = LogHistogram::bucket_low(b), hi = LogHistogram::bucket_high(b);
    return lo + (hi - lo - 1) / 2;
  };
  for (size_t n : {1u, 5u, 26u, 27u, 28u, 100u, 1001u}) {
    LogHistogram a, b;
    std::vector<uint64_t> all;
    a.add(1);  // the counters exist: add_one's precondition
    b.add(2);
    all = {1, 2};
    for (size_t i = 0; i < n; ++i) {
      const auto v = static_cast<uint64_t>(dist(rng));
      (i % 3 ? a : b).add_one(v);
      all.push_back(v);
    }
    a.merge(b);  // both sides' pending values
    ASSERT_EQ(a.count(), all.size());
    for (uint64_t r = 0; r < all.size(); r += 1 + all.size() / 50)
      EXPECT_EQ(a.value_at_rank(r), expected_at(all, r)) << "n " << n << " rank " << r;
  }
}
