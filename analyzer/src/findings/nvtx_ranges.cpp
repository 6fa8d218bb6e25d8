// The NVTX ranges a call is made inside (push/pop per thread and domain, start/end per process).
#include "findings/process_analyzer.h"

namespace asyncwatch::analysis {

void ProcessAnalyzer::on_nvtx(uint32_t tid, const NvtxRangeRecord& n) {
  if (n.domain > kMaxRangeDomains) return;  // not written by asyncwatch (at most 32 domains)
  const uint64_t key = range_stack_key(n.domain, tid);
  switch (static_cast<NvtxKind>(n.kind)) {
    case NvtxKind::Push: {
      if (std::find(range_domains_.begin(), range_domains_.end(), n.domain) == range_domains_.end())
        range_domains_.push_back(n.domain);
      auto& stack = range_stacks_[key];
      stack.push_back(n.name_id);  // beyond kMaxRangeDepth counted, not named (see ranges_of)
      break;
    }
    case NvtxKind::Pop: {
      auto s = range_stacks_.find(key);
      if (s != range_stacks_.end() && !s->second.empty()) s->second.pop_back();
      break;
    }
    case NvtxKind::Start:
      if (open_ranges_.size() < kMaxOpenRanges) open_ranges_[n.range_id] = n.name_id;
      break;
    case NvtxKind::End: open_ranges_.erase(n.range_id); break;
    default: break;
  }
}

void ProcessAnalyzer::add_ranges(Group& g) {
  range_scratch_.clear();
  for (uint32_t domain : range_domains_) {
    auto s = range_stacks_.find(range_stack_key(domain, current_tid_));
    if (s == range_stacks_.end()) continue;
    size_t n = std::min(s->second.size(), kMaxRangeDepth);
    for (size_t i = 0; i < n; ++i) range_scratch_.push_back(s->second[i]);
  }
  for (const auto& [id, name] : open_ranges_) range_scratch_.push_back(name);
  std::sort(range_scratch_.begin(), range_scratch_.end());
  range_scratch_.erase(std::unique(range_scratch_.begin(), range_scratch_.end()), range_scratch_.end());
  for (uint32_t name : range_scratch_) {
    if (name == 0) continue;  // unnamed ranges are not reported
    if (!g.ranges) g.ranges = std::make_unique<std::unordered_map<uint32_t, uint64_t>>();
    auto& ranges = *g.ranges;
    if (auto r = ranges.find(name); r != ranges.end())
      ++r->second;
    else if (ranges.size() < kMaxRangesPerGroup)
      ranges.emplace(name, 1);
  }
}

std::string ProcessAnalyzer::range_name(uint32_t id) const {
  auto s = trace_.string(id);
  return s ? std::string(*s) : fmt::format("(range #{})", id);
}

}  // namespace asyncwatch::analysis
