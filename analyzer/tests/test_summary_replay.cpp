// The calls a summary trace folded, handed out again (read/summary_replay.h): the same count, total
// and maximum, each blocked time inside its histogram bucket, start times in order over the summary's
// span, every other byte the call record's.
#include "read/summary_replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

using namespace asyncwatch;
namespace tf = asyncwatch::trace;

namespace {

tf::SiteSummaryRecord summary_of(const std::vector<uint64_t>& blocked, uint64_t first, uint64_t last) {
  tf::SiteSummaryRecord s{};
  s.h = {static_cast<uint16_t>(tf::RecordType::SiteSummary), sizeof s};
  tf::CopyRecord c{};
  c.h = {static_cast<uint16_t>(tf::RecordType::Copy), sizeof c};
  c.api = static_cast<uint16_t>(tf::Api::cudaMemcpyAsync);
  c.stack_id = 7;
  c.bytes = 4096;
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Pageable);
  std::memcpy(s.call, &c, sizeof c);
  for (uint64_t d : blocked) {
    ++s.histogram[tf::summary_bucket(d)];
    s.total_ns += d;
    s.max_ns = std::max(s.max_ns, d);
  }
  s.count = blocked.size();
  s.first_start_ns = first;
  s.last_start_ns = last;
  return s;
}

struct Replayed {
  std::vector<uint64_t> starts, blocked;
};
Replayed replay_all(const tf::SiteSummaryRecord& s) {
  SummaryReplay r;
  r.add(s, 4096);
  Replayed out;
  while (!r.empty()) {
    uint64_t start, offset;
    const uint8_t* p = r.pop(&start, &offset);
    tf::CopyRecord c;
    std::memcpy(&c, p, sizeof c);
    EXPECT_EQ(offset, 4096u);
    EXPECT_EQ(c.start_ns, start);
    EXPECT_EQ(c.stack_id, 7u);
    EXPECT_EQ(c.bytes, 4096u);
    out.starts.push_back(start);
    out.blocked.push_back(c.end_ns - c.start_ns);
  }
  return out;
}

}  // namespace

TEST(SummaryReplay, CountTotalMaxExactAndEachTimeInItsBucket) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(9.0, 2.5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint64_t> blocked(1 + rng() % 3000);
    for (auto& d : blocked) d = static_cast<uint64_t>(dist(rng));
    const auto s = summary_of(blocked, 1'000'000, 1'000'000 + 997 * blocked.size());
    const Replayed r = replay_all(s);
    ASSERT_EQ(r.blocked.size(), blocked.size());
    uint64_t total = 0;
    for (uint64_t d : r.blocked) total += d;
    EXPECT_EQ(total, s.total_ns);
    EXPECT_EQ(*std::max_element(r.blocked.begin(), r.blocked.end()), s.max_ns);
    // The same histogram: every replayed time is in a bucket the original times filled as often.
    std::vector<uint32_t> hist(tf::kSummaryBuckets);
    for (uint64_t d : r.blocked) ++hist[tf::summary_bucket(d)];
    EXPECT_TRUE(std::equal(hist.begin(), hist.end(), s.histogram)) << "trial " << trial;
    EXPECT_TRUE(std::is_sorted(r.starts.begin(), r.starts.end()));
    EXPECT_EQ(r.starts.front(), s.first_start_ns);
    EXPECT_EQ(r.starts.back(), s.last_start_ns);
  }
}

TEST(SummaryReplay, OneCallAndEqualTimes) {
  const auto one = replay_all(summary_of({12345}, 50, 50));
  ASSERT_EQ(one.blocked.size(), 1u);
  EXPECT_EQ(one.blocked[0], 12345u);
  const auto same = replay_all(summary_of(std::vector<uint64_t>(1000, 777), 10, 20));
  ASSERT_EQ(same.blocked.size(), 1000u);
  for (uint64_t d : same.blocked) EXPECT_EQ(d, 777u);
}

// A kill inside an update leaves one call in the histogram that `count` lacks: `count` calls are
// handed out, each still in a bucket of the histogram.
TEST(SummaryReplay, HistogramOneAheadOfCount) {
  auto s = summary_of({100, 200, 300, 5000}, 1, 1000);
  s.count = 3;  // the 5000 ns call was counted in the histogram only
  s.total_ns = 600;
  s.max_ns = 300;
  const auto r = replay_all(s);
  ASSERT_EQ(r.blocked.size(), 3u);
  uint64_t total = 0;
  for (uint64_t d : r.blocked) total += d;
  EXPECT_EQ(total, 600u);
}

// Summaries of two sites of a loop, folded in step: their calls come out alternating, in the loop's order.
TEST(SummaryReplay, SitesOfALoopStayInStep) {
  SummaryReplay r;
  std::vector<uint64_t> blocked(100, 10);
  r.add(summary_of(blocked, 1000, 1000 + 99 * 500), 1);  // a launch at +0 of each 500 ns iteration
  r.add(summary_of(blocked, 1200, 1230 + 99 * 500), 2);  // a copy at +200 .. +230
  uint64_t expect = 1;
  while (!r.empty()) {
    uint64_t start, offset;
    r.pop(&start, &offset);
    EXPECT_EQ(offset, expect);
    expect = 3 - expect;
  }
}
