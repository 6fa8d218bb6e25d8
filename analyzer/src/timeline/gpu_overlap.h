// The overlap figures of the report (ASYNCWATCH_GPU_TIMES traces): per stream, how long the device
// was busy, and while the host was blocked in the calls on that stream flagged by each blocking rule
// (pageable-async-copy, blocking-launch, ...), how long the stream was busy (the host waited while
// the GPU worked: the lost overlap) and how long it was idle (both waited). Fed while the analysis streams the records; bounded (kMaxIntervals of each kind:
// beyond, the figures say they are partial).
#pragma once

#include "findings/finding.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

struct RuleOverlap {
  FindingId rule = FindingId::Count;
  uint64_t calls = 0;
  uint64_t host_blocked_ns = 0;  // union of the rule's flagged calls (all threads)
  uint64_t gpu_busy_ns = 0;      // ... of which this stream ran work
  uint64_t gpu_idle_ns = 0;      // ... of which this stream was idle
};

struct StreamOverlap {
  std::string stream;  // "stream 0x5000", "stream: legacy default"
  uint64_t spans = 0;
  uint64_t busy_ns = 0;                // union of its GPU spans
  uint64_t first_ns = 0, last_ns = 0;  // CLOCK_MONOTONIC of its first start, last end
  std::vector<RuleOverlap> rules;      // rules with flagged calls, most host-blocked time first
};

class GpuOverlap {
 public:
  static constexpr size_t kMaxIntervals = 4u << 20;
  void span(uint64_t stream_key, const std::string& stream_name, uint64_t start, uint64_t end);
  void flagged(FindingId rule, uint64_t stream_key, uint64_t start, uint64_t end);
  bool any() const { return !spans_.empty(); }
  bool partial() const { return partial_; }
  std::vector<StreamOverlap> figures();

 private:
  struct Interval {
    uint64_t start, end;
  };
  struct Stream {
    std::string name;
    std::vector<Interval> spans;
  };
  std::unordered_map<uint64_t, Stream> spans_;
  struct Flagged {
    FindingId rule;
    uint64_t stream_key;
    uint64_t start, end;
  };
  std::vector<Flagged> flagged_;
  size_t count_ = 0;
  bool partial_ = false;
};

}  // namespace asyncwatch

namespace asyncwatch {
// The report's lines (text, without indentation) for one process; none when it has no GPU times.
std::vector<std::string> gpu_overlap_lines(const std::vector<StreamOverlap>& streams, bool gpu_times_recorded);
}  // namespace asyncwatch
