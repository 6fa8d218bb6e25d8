#include "timeline/gpu_overlap.h"

#include <algorithm>

namespace asyncwatch {

namespace {

struct Iv {
  uint64_t start, end;
};

// Sorted, disjoint union of the intervals.
template <class V>
std::vector<Iv> merged(const V& in) {
  std::vector<Iv> v;
  v.reserve(in.size());
  for (const auto& i : in)
    if (i.end > i.start) v.push_back(Iv{i.start, i.end});
  std::sort(v.begin(), v.end(), [](const Iv& a, const Iv& b) { return a.start < b.start; });
  std::vector<Iv> out;
  for (const auto& i : v) {
    if (!out.empty() && i.start <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

uint64_t length(const std::vector<Iv>& v) {
  uint64_t n = 0;
  for (const auto& i : v) n += i.end - i.start;
  return n;
}

// Length of the intersection of two sorted disjoint unions.
uint64_t intersection(const std::vector<Iv>& a, const std::vector<Iv>& b) {
  uint64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t lo = std::max(a[i].start, b[j].start), hi = std::min(a[i].end, b[j].end);
    if (hi > lo) n += hi - lo;
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return n;
}

}  // namespace

void GpuOverlap::span(uint64_t stream_key, const std::string& stream_name, uint64_t start, uint64_t end) {
  if (count_ >= kMaxIntervals) {
    partial_ = true;
    return;
  }
  ++count_;
  Stream& s = spans_[stream_key];
  if (s.name.empty()) s.name = stream_name;
  s.spans.push_back(Interval{start, end});
}

void GpuOverlap::flagged(FindingId rule, uint64_t stream_key, uint64_t start, uint64_t end) {
  if (count_ >= kMaxIntervals || rule >= FindingId::Count) {
    partial_ = true;
    return;
  }
  ++count_;
  flagged_.push_back(Flagged{rule, stream_key, start, end});
}

std::vector<StreamOverlap> GpuOverlap::figures() {
  std::vector<StreamOverlap> out;
  // The flagged calls by stream, then rule (one pass over them).
  std::unordered_map<uint64_t, std::vector<std::vector<Iv>>> by_stream;
  for (const auto& f : flagged_) {
    if (!spans_.count(f.stream_key)) continue;  // a stream without timed work: no figure
    auto& rules = by_stream[f.stream_key];
    if (rules.empty()) rules.resize(static_cast<size_t>(FindingId::Count));
    rules[static_cast<size_t>(f.rule)].push_back(Iv{f.start, f.end});
  }
  for (auto& [key, s] : spans_) {
    // This stream's flagged calls, by rule.
    std::vector<std::pair<FindingId, std::vector<Iv>>> blocked;
    std::vector<uint64_t> calls;
    auto found = by_stream.find(key);
    if (found != by_stream.end())
      for (size_t r = 0; r < found->second.size(); ++r) {
        if (found->second[r].empty()) continue;
        calls.push_back(found->second[r].size());
        blocked.emplace_back(static_cast<FindingId>(r), merged(found->second[r]));
      }
    StreamOverlap o;
    o.stream = s.name;
    o.spans = s.spans.size();
    std::vector<Iv> busy = merged(s.spans);
    o.busy_ns = length(busy);
    if (!busy.empty()) {
      o.first_ns = busy.front().start;
      o.last_ns = busy.back().end;
    }
    for (size_t k = 0; k < blocked.size(); ++k) {
      RuleOverlap r;
      r.rule = blocked[k].first;
      r.calls = calls[k];
      r.host_blocked_ns = length(blocked[k].second);
      r.gpu_busy_ns = intersection(blocked[k].second, busy);
      r.gpu_idle_ns = r.host_blocked_ns - r.gpu_busy_ns;
      o.rules.push_back(r);
    }
    std::sort(o.rules.begin(), o.rules.end(),
              [](const RuleOverlap& a, const RuleOverlap& b) { return a.host_blocked_ns > b.host_blocked_ns; });
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const StreamOverlap& a, const StreamOverlap& b) {
    return a.busy_ns != b.busy_ns ? a.busy_ns > b.busy_ns : a.stream < b.stream;
  });
  return out;
}

}  // namespace asyncwatch

#include "report/format.h"

#include <fmt/format.h>

namespace asyncwatch {

std::vector<std::string> gpu_overlap_lines(const std::vector<StreamOverlap>& streams, bool gpu_times_recorded) {
  std::vector<std::string> out;
  if (streams.empty()) {
    if (gpu_times_recorded) out.push_back("GPU times were recorded, but no operation completed in time to be timed");
    return out;
  }
  for (const auto& s : streams) {
    uint64_t span = s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0;
    out.push_back(fmt::format("GPU, {}: {} operation{} ran {} ({:.0f}% of the {} from its first to its last)", s.stream,
                              s.spans, s.spans == 1 ? "" : "s", format_duration(s.busy_ns),
                              span ? 100.0 * static_cast<double>(s.busy_ns) / static_cast<double>(span) : 100.0,
                              format_duration(span)));
    for (const auto& r : s.rules) {
      if (!r.host_blocked_ns) continue;
      out.push_back(fmt::format(
          "  while the host waited {} in {} call{} [{}], this stream was busy {} and idle {}{}",
          format_duration(r.host_blocked_ns), r.calls, r.calls == 1 ? "" : "s", rule_info(r.rule).name,
          format_duration(r.gpu_busy_ns), format_duration(r.gpu_idle_ns),
          r.gpu_busy_ns > r.gpu_idle_ns ? " (the host could not enqueue more work while the GPU worked)" : ""));
    }
  }
  return out;
}

}  // namespace asyncwatch
