// The calls a summary trace folded (SiteSummaryRecord, trace_format.h), handed out again as records:
// each summary gives `count` copies of its call record, their start times spread evenly over its
// [first_start_ns, last_start_ns] and their blocked times drawn from its histogram, each inside its
// bucket, so that they add up to total_ns and the longest is max_ns. Counts, totals, maxima, call
// sites and every field but the times are the folded calls' own; a percentile is within its bucket.
// One per thread chain (the reader's cursor), merged by time with the thread's own records.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <vector>

namespace asyncwatch {

class SummaryReplay {
 public:
  // A summary the thread's walk passed (validated), at `file_offset`.
  void add(const trace::SiteSummaryRecord& s, uint64_t file_offset);
  bool empty() const { return heap_.empty(); }
  // The start time of the next call (not empty()).
  uint64_t next_time() const { return heap_.front().time; }
  // The next call: its record (valid until the next pop), start time and the summary's file offset.
  const uint8_t* pop(uint64_t* start, uint64_t* file_offset);
  // Calls and summaries added so far.
  uint64_t calls() const { return calls_; }
  uint64_t summaries() const { return sites_.size(); }

 private:
  struct Site {
    alignas(8) uint8_t call[trace::kSummaryCallBytes];
    uint64_t file_offset;
    uint64_t count, emitted = 0;
    uint64_t first_start, last_start;
    uint64_t max_ns;
    bool max_pending;  // the call of max_ns, handed out last
    // The buckets' calls and the blocked time given to each bucket (bucket, calls, sum), in order.
    struct Share {
      uint32_t bucket;
      uint64_t calls;
      uint64_t sum;
    };
    std::vector<Share> shares;
    size_t share = 0;       // the bucket being handed out
    uint64_t in_share = 0;  // its calls handed out
    uint64_t time_of(uint64_t i) const;
    uint64_t next_duration();
  };
  struct Entry {
    uint64_t time;
    uint32_t site;
  };
  static bool later(const Entry& a, const Entry& b) { return a.time > b.time || (a.time == b.time && a.site > b.site); }
  std::vector<Site> sites_;
  std::vector<Entry> heap_;  // min-heap on time
  uint64_t calls_ = 0;
  alignas(8) uint8_t scratch_[trace::kSummaryCallBytes];
};

}  // namespace asyncwatch
