// The rule table (findings/table.h) made into RuleInfo rows, names and the per-trigger rule
// order; merging of groups; the phrasing helpers the rule modules share.
#include "symbols/call_site.h"
#include "report/format.h"
#include "symbols/names.h"
#include "findings/rules.h"

#include <algorithm>
#include <fmt/compile.h>
#include <fmt/format.h>
#include <string_view>
#include <unordered_map>

namespace asyncwatch {

using namespace trace;

namespace {
const RuleInfo kRules[] = {
#define ASYNCWATCH_X(id, name, severity, hooks, title, help) \
  {FindingId::id, name, Severity::severity, title, help, rules::hooks},
    ASYNCWATCH_FINDINGS(ASYNCWATCH_X)
#undef ASYNCWATCH_X
};
static_assert(sizeof kRules / sizeof kRules[0] == static_cast<size_t>(FindingId::Count));

const char* const kCauseNames[] = {nullptr,
#define ASYNCWATCH_X(cause, name) name,
                                   ASYNCWATCH_FINDING_CAUSES(ASYNCWATCH_X)
#undef ASYNCWATCH_X
};
}  // namespace

const char* finding_id_name(FindingId id) {
  return id < FindingId::Count ? kRules[static_cast<size_t>(id)].name : "unknown";
}

bool parse_finding_id(const std::string& name, FindingId* out) {
  for (const RuleInfo& r : kRules)
    if (name == r.name) {
      *out = r.id;
      return true;
    }
  return false;
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "note";
}

const char* cause_name(Cause c) {
  auto i = static_cast<size_t>(c);
  return i < sizeof kCauseNames / sizeof kCauseNames[0] ? kCauseNames[i] : nullptr;
}

const RuleInfo& rule_info(FindingId id) { return kRules[static_cast<size_t>(id)]; }

Severity finding_severity(const Finding& f) {
  if (f.id >= FindingId::Count) return Severity::Note;
  return f.below_threshold ? Severity::Note : rule_info(f.id).severity;
}

std::string finding_message(const Finding& f) {
  if (f.id >= FindingId::Count) return std::string();
  std::string m = rule_info(f.id).hooks.message(f);
  if (!f.framework_phase.empty())
    m += " (made inside " + f.framework_phase + ": the framework's one-time work" +
         (f.call_site_is_user_code ? " at this line" : "") + ", apart from its steady state, so a note)";
  return m;
}

const std::vector<const RuleInfo*>& rules_for(Trigger t) {
  static const auto by_trigger = [] {
    std::vector<std::vector<const RuleInfo*>> out(static_cast<size_t>(Trigger::InFlight) + 1);
    for (const RuleInfo& r : kRules) out[static_cast<size_t>(r.hooks.trigger)].push_back(&r);
    for (auto& v : out)
      std::stable_sort(v.begin(), v.end(),
                       [](const RuleInfo* a, const RuleInfo* b) { return a->hooks.precedence < b->hooks.precedence; });
    return out;
  }();
  return by_trigger[static_cast<size_t>(t)];
}

const GraphMemcpyNodeInfo& Finding::graph_node() const {
  static const GraphMemcpyNodeInfo kNone;
  return graph_node_info ? *graph_node_info : kNone;
}

std::string Finding::merge_key() const {
  std::string site = call_site_known ? call_site_key(call_site, via) : std::string("?");
  if (python_lender) site += fmt::format(FMT_COMPILE("\037borrowed {:x}"), python_lender);
  if (!framework_phase.empty()) site += "\037phase " + framework_phase;
  return fmt::format(FMT_COMPILE("{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}"), static_cast<int>(id),
                     static_cast<int>(cause), api, driver_api, has_direction ? static_cast<int>(direction) : -1,
                     has_host_memory ? static_cast<int>(host_memory) : -1, kernel, site);
}

void FindingSet::add(Finding&& f) {
  if (f.key.empty()) f.set_key();
  const size_t hash = std::hash<std::string>{}(f.key);
  for (auto [it, end] = index_.equal_range(hash); it != end; ++it)
    if (findings_[it->second].key == f.key) {
      findings_[it->second].merge(f);
      return;
    }
  index_.emplace(hash, findings_.size());
  findings_.push_back(std::move(f));
}

std::vector<Finding> FindingSet::take() {
  index_.clear();
  return std::move(findings_);
}

void rank_findings(std::vector<Finding>& findings) {
  struct SortKey {
    uint64_t impact;
    uint64_t blocked;
    FindingId id;
    const std::string* file;
    int line;
    const std::string* key;
    size_t index;
  };
  std::vector<SortKey> keys;
  keys.reserve(findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    keys.push_back({f.impact_ns, f.blocked.total(), f.id, &f.call_site.file, f.call_site.line, &f.key, i});
  }
  std::sort(keys.begin(), keys.end(), [](const SortKey& a, const SortKey& b) {
    if (a.impact != b.impact) return a.impact > b.impact;
    if (a.blocked != b.blocked) return a.blocked > b.blocked;
    if (a.id != b.id) return a.id < b.id;
    if (int c = a.file->compare(*b.file)) return c < 0;
    if (a.line != b.line) return a.line < b.line;
    return *a.key < *b.key;
  });
  // A finding caused by another shown one follows it (in its own rank among those that do).
  std::vector<size_t> from;
  from.reserve(keys.size());
  bool any_caused = false;
  for (const Finding& f : findings) any_caused = any_caused || !f.caused_by.empty();
  if (any_caused) {
    std::unordered_map<std::string_view, size_t> at;  // key -> finding index
    for (size_t i = 0; i < findings.size(); ++i) at.emplace(findings[i].key, i);
    std::unordered_map<size_t, std::vector<size_t>> children;  // cause's index -> caused, in rank order
    std::vector<bool> follows(findings.size(), false);
    for (const SortKey& k : keys) {
      const std::string& cause = findings[k.index].caused_by;
      auto c = cause.empty() ? at.end() : at.find(cause);
      if (c == at.end() || c->second == k.index || !findings[c->second].caused_by.empty()) continue;
      children[c->second].push_back(k.index);
      follows[k.index] = true;
    }
    for (const SortKey& k : keys) {
      if (follows[k.index]) continue;
      from.push_back(k.index);
      if (auto ch = children.find(k.index); ch != children.end())
        from.insert(from.end(), ch->second.begin(), ch->second.end());
    }
  } else {
    for (const SortKey& k : keys) from.push_back(k.index);
  }
  // Applied in place, cycle by cycle: never a second vector of findings.
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == i) continue;
    Finding first = std::move(findings[i]);
    size_t j = i;
    while (from[j] != i) {
      size_t k = from[j];
      findings[j] = std::move(findings[k]);
      from[j] = j;
      j = k;
    }
    findings[j] = std::move(first);
    from[j] = j;
  }
}

void Finding::add_thread_blocked(uint64_t thread, uint64_t ns) {
  auto t = std::lower_bound(thread_blocked.begin(), thread_blocked.end(), thread,
                            [](const std::pair<uint64_t, uint64_t>& e, uint64_t k) { return e.first < k; });
  if (t != thread_blocked.end() && t->first == thread)
    t->second += ns;
  else if (thread_blocked.size() < kMaxThreads)
    thread_blocked.insert(t, {thread, ns});
}

void Finding::merge(const Finding& o) {
  count += o.count;
  bytes += o.bytes;
  blocked.merge(o.blocked);
  evidence_checked += o.evidence_checked;
  completed_at_return += o.completed_at_return;
  drained_before_return += o.drained_before_return;
  outstanding_launches_max = std::max(outstanding_launches_max, o.outstanding_launches_max);
  graph_memory_nodes = std::max(graph_memory_nodes, o.graph_memory_nodes);
  if (!concurrent) concurrent = o.concurrent;
  if (o.pending_copy_bytes > pending_copy_bytes)
    pending_copies = o.pending_copies, pending_copy_bytes = o.pending_copy_bytes;
  chevron_launch = chevron_launch || o.chevron_launch;
  below_threshold = below_threshold && o.below_threshold;
  at_threshold += o.at_threshold;
  for (const auto& [thread, ns] : o.thread_blocked) add_thread_blocked(thread, ns);
  impact_ns += o.impact_ns;
  if (impact_basis.empty())
    impact_basis = o.impact_basis;
  else if (!o.impact_basis.empty() && impact_basis != o.impact_basis)
    impact_basis = "several processes' own figures";
  if (caused_by.empty()) caused_by = o.caused_by;
  event_waits += o.event_waits;
  repeated_calls += o.repeated_calls;
  context_creation_visible = context_creation_visible || o.context_creation_visible;
  process_ended_cleanly = process_ended_cleanly && o.process_ended_cleanly;
  for (const auto& [k, n] : o.waited_for) waited_for[k] += n;
  for (const auto& [k, n] : o.ranges) ranges[k] += n;
  if (module_loading.empty()) module_loading = o.module_loading;
  for (const auto& p : o.processes) {
    bool found = false;
    for (auto& q : processes)
      if (q.pid == p.pid) {
        q.count += p.count;
        q.blocked_ns_total += p.blocked_ns_total;
        found = true;
      }
    if (!found) processes.push_back(p);
  }
}

std::string direction_words(const Finding& f) {
  if (!f.has_direction) return {};
  switch (f.direction) {
    case Direction::HtoD: return "host to device";
    case Direction::DtoH: return "device to host";
    case Direction::DtoD: return "device to device";
    case Direction::HtoH: return "host to host";
    case Direction::Peer: return "peer to peer";
    case Direction::Unknown: break;
  }
  return {};
}

std::string calls_part(const Finding& f) { return f.count > 1 ? plural(f.count, "call", "calls") : std::string(); }

std::string total_bytes_part(const Finding& f) { return format_bytes(f.bytes) + (f.count > 1 ? " in total" : ""); }

std::string total_time_words(const Finding& f) {
  return format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : "");
}

std::string copy_call_words(const Finding& f) {
  return api_with_args(f, {direction_words(f), calls_part(f), total_bytes_part(f)});
}

std::string api_with_args(const Finding& f, const std::vector<std::string>& parts) {
  std::string out = f.api;
  std::string inner;
  for (const auto& p : parts)
    if (!p.empty()) inner += (inner.empty() ? "" : ", ") + p;
  if (!inner.empty()) out += " (" + inner + ")";
  // Called inside a library: through which of its functions ("via cusparseSpMV (libcusparse.so.12)").
  if (!f.via.module.empty()) out += " via " + frame_name_text(f.via);
  return out;
}

Observation observation_of_copy(FindingId id, const CopyRecord& c) {
  Observation o = observation_of(id, c);
  o.bytes = c.bytes;
  o.evidence_checked = (c.flags & kFlagEvidenceChecked) != 0;
  o.completed_at_return = o.evidence_checked && (c.flags & kFlagCompletedAtReturn) != 0;
  return o;
}

}  // namespace asyncwatch
