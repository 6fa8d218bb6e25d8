// The groups of flagged calls: each observation added to its group (ProcessAnalyzer::observe).
#include "findings/process_analyzer.h"

namespace asyncwatch::analysis {

void ProcessAnalyzer::observe(const Observation& o) {
  // Grouped by stack during the pass (stacks and modules may still be ahead in the file);
  // stacks are mapped to call sites and groups merged per call site in finish().
  const bool counts_blocking = rule_info(o.id).hooks.counts_blocking;
  if (counts_blocking) flagged_blocking_ = true;
  // The key's two words (GroupKey's layout) built in registers.
  const uint8_t direction = o.direction ? static_cast<uint8_t>(*o.direction) : uint8_t{0xff};
  const uint8_t memory = o.host_memory ? static_cast<uint8_t>(*o.host_memory) : uint8_t{0xff};
  const uint64_t w[2] = {uint64_t{static_cast<uint8_t>(o.id)} | uint64_t{static_cast<uint8_t>(o.cause)} << 8 |
                             uint64_t{direction} << 16 | uint64_t{memory} << 24 | uint64_t{o.api} << 32 |
                             uint64_t{o.driver_fn} << 48,
                         uint64_t{o.kernel_name_id} | uint64_t{o.stack_id} << 32};
  GroupKey key;
  std::memcpy(&key, w, sizeof key);
  Group& g = group(key);
  if (g.count == 0) {
    if (o.rare) {  // (a group's defaults are ObservationRare's)
      g.graph_pageable_nodes = o.rare->graph_pageable_nodes;
      g.graph_memory_nodes = o.rare->graph_memory_nodes;
      g.graph_node = o.rare->graph_node;
      g.concurrent = o.rare->concurrent;
    }
    g.serial = next_serial_++;
    g.sink.owner = g.serial;
  }
  last_sink_ = &g.sink;
  model_impact(o, g.sink);
  // The host waited in this call, on this stream (GPU overlap figures).
  if (counts_blocking && current_stream_ != UINT64_MAX)
    overlap_.flagged(o.id, current_stream_, current_start_, current_end_);
  if (marks_ && marks_->size() < kMaxCallMarks) marks_->push_back(CallMark{current_start_, current_tid_, g.serial});
  ++g.count;
  g.bytes += o.bytes;
  g.blocked.add(o.blocked_ns);
  g.evidence_checked += o.evidence_checked;
  g.completed_at_return += o.completed_at_return;
  g.drained += o.drained_before_return;
  g.at_threshold += o.at_threshold;
  g.event_waits += o.event_waits;
  if (o.rare) observe_rare(*o.rare, g);
  if (!range_stacks_.empty() || !open_ranges_.empty()) add_ranges(g);
  g.thread_blocked.add(current_tid_, o.blocked_ns);
  if (!g.stack_id && o.stack_id) g.stack_id = o.stack_id;
  if (o.waited_for) {
    g.waited.add_all(*o.waited_for, &g.waited_others);  // bounded: the rest are "(other kernels)"
    g.waited_others += o.waited_for->others;
  }
}

void ProcessAnalyzer::observe_rare(const ObservationRare& r, Group& g) {
  g.outstanding_max = std::max(g.outstanding_max, r.outstanding_launches);
  if (r.pending_copy_bytes > g.pending_copy_bytes)
    g.pending_copies = r.pending_copies, g.pending_copy_bytes = r.pending_copy_bytes;
  g.context_creation_visible = g.context_creation_visible || r.context_creation_visible;
  g.ended_cleanly = g.ended_cleanly && r.process_ended_cleanly;
  g.repeated += r.repeated;
  if (r.repeat_key) {
    if (!g.repeat_keys) g.repeat_keys = std::make_unique<std::unordered_map<uint64_t, uint32_t>>();
    auto& keys = *g.repeat_keys;
    if (auto k = keys.find(r.repeat_key); k != keys.end())
      ++g.repeated;
    else if (keys.size() < kMaxRepeatKeys)
      keys.emplace(r.repeat_key, 1);
  }
}

Group& ProcessAnalyzer::group_missed(Group*& cached, const GroupKey& key) {
  auto found = groups_.find(key);
  if (found == groups_.end()) {
    if (groups_.size() >= opt_.limits.call_sites)
      over_limit("distinct findings before merging by source line (rule, cause, API, kernel, call stack)",
                 opt_.limits.call_sites, "--max-call-sites");
    found = groups_.emplace(key, Group{}).first;
    found->second.key = key;
  }
  cached = &found->second;
  return found->second;
}

}  // namespace asyncwatch::analysis
