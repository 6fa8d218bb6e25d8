// The finding model: ids, severities, causes (all from findings/table.h), one aggregated
// finding per group, and the rule modules (one file per rule under findings/, hooks in rules.h)
// that detect them and phrase them.
#pragma once

#include "findings/table.h"

#include "events/duration_stats.h"
#include "options.h"
#include "symbols/symbolizer.h"

#include <asyncwatch/trace_format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

enum class FindingId : uint8_t {
#define ASYNCWATCH_X(id, ...) id,
  ASYNCWATCH_FINDINGS(ASYNCWATCH_X)
#undef ASYNCWATCH_X
      Count
};

enum class Severity : uint8_t { Note, Warning, Error };

enum class Cause : uint8_t {
  None,
#define ASYNCWATCH_X(cause, name) cause,
  ASYNCWATCH_FINDING_CAUSES(ASYNCWATCH_X)
#undef ASYNCWATCH_X
};

const char* finding_id_name(FindingId id);
bool parse_finding_id(const std::string& name, FindingId* out);
const char* severity_name(Severity s);
const char* cause_name(Cause c);  // nullptr for Cause::None

struct PerProcess {
  uint64_t pid = 0;
  uint64_t count = 0;
  uint64_t blocked_ns_total = 0;
  int64_t rank = -1;  // the process's rank in its job (ProcessSummary::rank), -1 when none
};

// A finding's stack, innermost first. The frames are shared, not copied: the findings of one stack
// hold one copy (a report can hold hundreds of thousands of findings, several per stack:
// docs/performance.md, "Report memory"). Never changed once made; assigning replaces them.
class Stack {
 public:
  Stack() = default;
  Stack(std::vector<Frame> frames)  // implicit: a stack is its frames
      : frames_(frames.empty() ? nullptr : std::make_shared<const std::vector<Frame>>(std::move(frames))) {}
  Stack(std::initializer_list<Frame> frames) : Stack(std::vector<Frame>(frames)) {}
  const std::vector<Frame>& frames() const { return frames_ ? *frames_ : kNone; }
  bool empty() const { return frames().empty(); }
  size_t size() const { return frames().size(); }
  const Frame* data() const { return frames().data(); }
  const Frame& operator[](size_t i) const { return frames()[i]; }
  std::vector<Frame>::const_iterator begin() const { return frames().begin(); }
  std::vector<Frame>::const_iterator end() const { return frames().end(); }
  void clear() { frames_.reset(); }

 private:
  static inline const std::vector<Frame> kNone;
  std::shared_ptr<const std::vector<Frame>> frames_;
};

// The first memcpy node with pageable host memory of a graph launch's graph (Finding::graph_node).
struct GraphMemcpyNodeInfo {
  std::string api;  // the API that made it
  trace::Direction direction = trace::Direction::Unknown;
  uint64_t bytes = 0;
  bool captured = false;
  bool site_known = false;
  Frame site;  // that call's site
};

// Another thread's call that ran through a blocked launch's wait (Finding::concurrent).
struct ConcurrentCallInfo {
  std::string api;  // "" for a host function's run
  uint32_t tid = 0;
  uint64_t duration_ns = 0, overlap_ns = 0;
  bool site_known = false;
  Frame site;  // that call's site
};

// One group of calls: same rule, cause, API, direction, memory, kernel and call site.
// Everything is text here, so groups of different processes merge by their key.
// The entries of a name -> count map (Finding::waited_for, Finding::ranges), the largest count
// first, equal counts in name order.
inline std::vector<std::pair<std::string, uint64_t>> most_first(const std::map<std::string, uint64_t>& counts) {
  std::vector<std::pair<std::string, uint64_t>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

struct Finding {
  FindingId id = FindingId::Count;
  Cause cause = Cause::None;
  std::string api;         // what the application called (named from the stack when the trace says a driver name)
  std::string driver_api;  // the driver entry point, "" when none
  trace::Direction direction = trace::Direction::Unknown;
  bool has_direction = false;
  trace::MemoryKind host_memory = trace::MemoryKind::Unknown;
  bool has_host_memory = false;
  std::string kernel;           // "" when not applicable / unknown
  bool chevron_launch = false;  // blocking-launch: launched with kernel<<<...>>> (nvcc's stub)
  uint64_t count = 0;
  uint64_t bytes = 0;
  DurationStats blocked;  // for long-host-callback: how long the host function ran
  uint64_t evidence_checked = 0;
  uint64_t completed_at_return = 0;
  uint64_t drained_before_return = 0;          // long-host-callback: the callback started before the enqueue returned
  uint64_t outstanding_launches_max = 0;       // blocking-launch: launches outstanding on the stream
  std::map<std::string, uint64_t> waited_for;  // kernel name -> launches the copy waited for
  // blocking-launch first-launch: the asynchronous copies pending on the process's streams when
  // the launch was called (the call with the most bytes), which loading the module waited for;
  // the kernels then pending are in waited_for.
  uint64_t pending_copies = 0;
  uint64_t pending_copy_bytes = 0;
  std::map<std::string, uint64_t> ranges;  // NVTX range name -> calls made inside it
  // blocking-launch of a graph (cause graph-host-memcpy): its memcpy nodes with pageable host memory,
  // and the first of them, out of line (most findings have none: 16 bytes, not 184, per finding).
  uint64_t graph_pageable_nodes = 0;
  uint64_t graph_memory_nodes = 0;  // blocking-launch graph-memory-nodes: its memory-allocation nodes
  std::shared_ptr<const GraphMemcpyNodeInfo> graph_node_info;  // null: none (graph_node() is empty)
  std::shared_ptr<const ConcurrentCallInfo> concurrent;  // blocking-launch other-thread-call, host-function-running
  const GraphMemcpyNodeInfo& graph_node() const;
  std::string module_loading;  // CUDA_MODULE_LOADING of the process ("" = unset)
  bool call_site_known = false;
  Frame call_site;
  bool call_site_is_user_code = true;  // false: no frame of the stack is the user's; the first library frame
  // The call site is the Python line of another thread, borrowed because the calls ran on threads
  // without Python (StackRecord.python_lender: 0 = not borrowed; python_lender_text says it).
  uint32_t python_lender = 0;
  Frame via;  // the library function the call site called (module empty: none)
  // Made inside a framework's own compilation or autotuning (symbols/call_site.h, framework_phase):
  // the phase's name; such a group is apart from the line's other calls, and a note. "" none.
  std::string framework_phase;
  Stack stack;
  std::vector<PerProcess> processes;
  // The largest share of one thread's time: the blocked time of the thread that spent most in this
  // group's calls, over its process's recorded wall time (a thread's calls never overlap: <= 1).
  double share_of_wall = 0;
  uint64_t threads = 0;  // distinct threads (of all processes) that made the calls
  // Blocked time per thread, by pid << 32 | tid, ascending (at most kMaxThreads; the analysis derives
  // share_of_wall and threads from it once the groups are merged). A sorted vector, not a hash map:
  // most findings have one thread (a map was ~200 bytes each: docs/performance.md, "Report memory").
  static constexpr size_t kMaxThreads = 256;
  std::vector<std::pair<uint64_t, uint64_t>> thread_blocked;
  // Adds `ns` to the thread's entry; a new thread while there are fewer than kMaxThreads.
  void add_thread_blocked(uint64_t thread, uint64_t ns);
  // A note although the rule's severity is higher: the rule ranks by --min-blocked-us and no call
  // of the group reached it (Rule::ranked_by_threshold). finding_severity() is the result.
  bool below_threshold = false;
  uint64_t at_threshold = 0;  // calls that blocked at least --min-blocked-us (or ran --min-callback-us)
  // What fixing the calls would save end to end: the process's wall time that goes (findings/impact.h;
  // docs/findings.md, "Impact"), what that rests on, and its share of the recorded wall time of the
  // processes that made the calls (set by build_report).
  uint64_t impact_ns = 0;
  std::string impact_basis;
  double impact_share = 0;
  // A synchronization that waited for a flagged call: that call's finding (its key), "" when none.
  // The ranking puts it right after that finding.
  std::string caused_by;
  uint64_t event_waits = 0;  // pageable-async-copy: the stream had waited on events (cudaStreamWaitEvent)
  // blocking-launch context-init: the context's creation ran inside the call (false: the trace
  // shows only a driver call, the creation happened before it in calls asyncwatch does not see).
  bool context_creation_visible = false;
  bool process_ended_cleanly = true;  // in-flight-call: the trace was closed (else killed or crashed)
  // implicit-sync: calls that repeated an earlier call of the group: an allocation of a buffer
  // of a size the group allocated and freed since (churn), a free of an address it freed before.
  // A pool (buffers allocated and kept) repeats nothing.
  uint64_t repeated_calls = 0;
  // Set by the report (fingerprint.h): the identity across runs; in_baseline: --baseline has it.
  std::string fingerprint;
  bool in_baseline = false;

  // The group's identity across processes: rule, cause, API, driver API, direction, memory,
  // kernel and call site. Computed once (set_key) when the finding is made; merging and the
  // ranking's last tie-break use the stored key.
  std::string key;
  std::string merge_key() const;
  void set_key() { key = merge_key(); }
  void merge(const Finding& other);
};

// Findings merged by key as they are added: each group is stored once, in the order first seen.
class FindingSet {
 public:
  void add(Finding&& f);  // f.key set
  // Room for n findings at once: growing by doubling held the old and the new array together
  // (the peak of a report with many call sites: docs/performance.md, "Report memory").
  void reserve(size_t n) { findings_.reserve(n); }
  size_t size() const { return findings_.size(); }
  // The findings, in the order first seen (moved out: the set is empty afterwards).
  std::vector<Finding> take();

 private:
  std::vector<Finding> findings_;
  std::unordered_multimap<size_t, size_t> index_;  // hash of the key -> index in findings_
};

// Ranks findings: most impact first (what fixing them saves end to end), then most blocked time;
// ties by id, call-site file and line, then key; a finding caused by another (caused_by) comes
// right after it. The sort keys are taken once from each finding (no formatting while sorting).
void rank_findings(std::vector<Finding>& findings);

struct Rule;  // the rule's hooks (rules.h)

// A row of findings/table.h.
struct RuleInfo {
  FindingId id;
  const char* name;  // "pageable-async-copy"
  Severity severity;
  const char* title;  // short description
  const char* help;   // how to fix it
  const Rule& hooks;
};
const RuleInfo& rule_info(FindingId id);

// The severity of a finding: its rule's, or a note when below_threshold.
Severity finding_severity(const Finding& f);

// The message of a finding: one sentence per rule, built by the rule's module.
std::string finding_message(const Finding& f);

// Shared phrasing helpers of the rule modules.
std::string direction_words(const Finding& f);  // "device to host"
// "cudaMemcpyAsync (device to host, 2.0 GiB) via cusparseSpMV (libcusparse.so.12)": the API, the
// parts the rule chose in parentheses (none: no parentheses), and the library function called.
std::string api_with_args(const Finding& f, const std::vector<std::string>& parts);
std::string calls_part(const Finding& f);        // "3 calls", "" for one call
std::string total_bytes_part(const Finding& f);  // "2.0 GiB", "6.0 GiB in total"
std::string total_time_words(const Finding& f);  // "1.74 s", "5.2 ms in total"
// A copy: "cudaMemcpyAsync (device to host, 3 calls, 6.0 GiB in total)".
std::string copy_call_words(const Finding& f);

}  // namespace asyncwatch
