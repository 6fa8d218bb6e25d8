// What a rule sees while the analyzer streams a process's records in time order, and the
// detection entry points of the rule modules.
#pragma once

#include "events/copies.h"
#include "events/stream_state.h"
#include "findings/finding.h"

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace asyncwatch {

// A memcpy node of a graph whose host side is pageable: captured (cudaMemcpyAsync during stream
// capture) or added explicitly (cudaGraphAddMemcpyNode*, cudaGraphExecMemcpyNodeSetParams*).
struct GraphMemcpyNode {
  uint64_t node = 0;  // CUgraphNode (0 for a captured copy)
  uint16_t api = 0;   // the call that made it (its call site is the node's origin)
  trace::Direction direction = trace::Direction::Unknown;
  trace::MemoryKind host_memory = trace::MemoryKind::Unknown;
  uint64_t bytes = 0;
  uint32_t stack_id = 0;
  bool captured = false;
};

// Another thread's call (or a host function's run) that ran through most of a blocked launch
// (events/concurrent_calls.h): blocking-launch other-thread-call / host-function-running.
struct ConcurrentCall {
  uint16_t api = 0;  // trace::Api (0: a host function's run)
  bool host_function = false;
  uint32_t tid = 0;
  uint32_t stack_id = 0;
  uint64_t duration_ns = 0;  // the whole call's
  uint64_t overlap_ns = 0;   // the part of the launch's wait it covered
};

// What the trace shows of the executable graph a graph launch ran.
struct GraphLaunchInfo {
  bool known = false;              // its instantiation (or update) is in the trace
  uint32_t kernel_name_id = 0;     // the first kernel captured into it, 0 unknown
  uint64_t pageable_nodes = 0;     // memcpy nodes with a pageable host side
  GraphMemcpyNode first_pageable;  // the first of them
  bool first_launch = false;       // its first launch since it was instantiated: the driver uploads it
  uint64_t memory_nodes = 0;       // memory-allocation nodes (cudaMallocAsync captured into it)
};

// What only a few rules' calls carry (blocking-launch, implicit-sync, in-flight-call): apart from
// Observation, which every flagged call fills and observe() reads (its fields zeroed and folded in
// per call: the JSON report's records per second, docs/performance.md).
struct ObservationRare {
  uint64_t pending_copies = 0;  // blocking-launch first-launch: copies pending when it was called (PendingWork)
  uint64_t pending_copy_bytes = 0;
  uint64_t outstanding_launches = 0;
  uint64_t graph_pageable_nodes = 0;      // blocking-launch of a graph: its pageable memcpy nodes ...
  GraphMemcpyNode graph_node;             // ... and the first of them
  uint64_t graph_memory_nodes = 0;        // ... its memory-allocation nodes
  ConcurrentCall concurrent;              // blocking-launch other-thread-call, host-function-running
  bool context_creation_visible = false;  // blocking-launch context-init
  // implicit-sync: what makes two calls the same one repeated (a free's address); 0 = none.
  uint64_t repeat_key = 0;
  bool repeated = false;              // implicit-sync: an allocation made again (RuleEvent::made_again)
  bool process_ended_cleanly = true;  // in-flight-call
};

// One flagged call.
struct Observation {
  FindingId id = FindingId::Count;
  Cause cause = Cause::None;
  uint16_t api = 0;
  uint16_t driver_fn = 0;
  std::optional<trace::Direction> direction;  // none: unknown
  std::optional<trace::MemoryKind> host_memory;
  uint32_t kernel_name_id = 0;
  uint32_t stack_id = 0;
  uint64_t blocked_ns = 0;
  uint64_t bytes = 0;
  bool evidence_checked = false;
  bool completed_at_return = false;
  bool drained_before_return = false;
  // At or above the rule's threshold (--min-blocked-us; --min-callback-us for host functions): a
  // rule that reports every call of its kind (Rule::ranked_by_threshold) makes groups without
  // such a call notes.
  bool at_threshold = true;
  const KernelTally* waited_for = nullptr;
  uint64_t event_waits = 0;
  const ObservationRare* rare = nullptr;  // null: ObservationRare's defaults

  void set_direction(trace::Direction d) {
    if (d != trace::Direction::Unknown) direction = d;
  }
};

class RuleContext {
 public:
  virtual ~RuleContext() = default;
  virtual const Options& options() const = 0;
  virtual bool launch_blocking_env() const = 0;  // CUDA_LAUNCH_BLOCKING=1 in the process
  virtual void observe(const Observation& o) = 0;
};

// The blocked time of a call at or above --min-blocked-us.
inline bool at_threshold(const Options& o, uint64_t blocked_ns) { return blocked_ns >= o.min_blocked_ns; }

// The fields every observation takes from its call record: APIs, call site, blocked time.
template <class Record>
Observation observation_of(FindingId id, const Record& r) {
  Observation o;
  o.id = id;
  o.api = r.api;
  o.driver_fn = r.driver_fn;
  o.stack_id = r.stack_id;
  o.blocked_ns = r.end_ns - r.start_ns;
  return o;
}
// The same for a copy or memset, with its bytes and the completion evidence.
Observation observation_of_copy(FindingId id, const trace::CopyRecord& c);

// What makes the analysis call a rule's detect hook.
enum class Trigger : uint8_t {
  Copy,             // an asynchronous copy that was not captured
  Memset,           // a memset that was not captured
  Launch,           // a kernel or graph launch that was not captured
  HostFuncEnqueue,  // cudaLaunchHostFunc / cudaStreamAddCallback (and driver forms)
  HostFuncRun,      // a host function ran, joined with its enqueue by callback_id
  Sync,             // a synchronization call
  MemoryOp,         // an allocation, free or registration
  InFlight,         // a call record still in flight when the trace ended (any call type)
};

// The call a detect hook looks at; the record of its trigger is set, the others are null.
struct RuleEvent {
  const trace::CopyRecord* copy = nullptr;                // Copy, Memset
  const CopyFacts* copy_facts = nullptr;                  // Copy, Memset: its direction, host side, class
  const trace::LaunchRecord* launch = nullptr;            // Launch
  const trace::HostFuncEnqueueRecord* enqueue = nullptr;  // HostFuncEnqueue, HostFuncRun
  const trace::HostFuncRunRecord* run = nullptr;          // HostFuncRun
  const trace::SyncRecord* sync = nullptr;                // Sync
  const trace::MemoryOpRecord* memory_op = nullptr;       // MemoryOp
  // MemoryOp: an allocation (or registration) whose call stack had freed one of the same size since
  // (events/allocations.h): the same buffer allocated again, not a pool growing.
  bool made_again = false;
  const StreamState* stream = nullptr;     // Copy, Memset, Launch: the call's stream before the call
  const GraphLaunchInfo* graph = nullptr;  // Launch of an executable graph
  // Launch that blocked at least --min-blocked-us: another thread's call (or a host function's run)
  // that covered most of its wait, else null.
  const ConcurrentCall* concurrent = nullptr;
  // Launch flagged as a first launch (kFlagFirstLaunch) that blocked at least --min-blocked-us: the
  // work pending on the process's streams when it was called (else null).
  const PendingWork* pending = nullptr;
  bool first_call = false;                     // Launch: the first call record of the process (in time order)
  const trace::CallHead* in_flight = nullptr;  // InFlight: its head (the body was never written)
  uint64_t trace_end_ns = 0;                   // InFlight: when the trace ended
  bool ended_cleanly = true;                   // InFlight: the trace was closed cleanly
};

class JsonWriter;  // json_writer.h

// A rule's hooks: the rule's file defines one `const Rule` named as in findings/table.h,
//   const Rule blocking_launch = Rule(Trigger::Launch, detect, message).blocking().per_kernel();
struct Rule {
  Trigger trigger;
  bool (*detect)(RuleContext& ctx, const RuleEvent& e);
  // One sentence: what happened, why, and how to fix it.
  std::string (*message)(const Finding& f);
  // Among the rules of one trigger, the lower runs first; a rule whose detect returns true
  // claims the call (it is of that rule's kind, flagged or not) and later rules do not see it.
  int precedence = 0;
  // Its findings flag the asynchronous call as blocking (summary async_calls_blocking).
  bool counts_blocking = false;
  // Groups are per kernel and name it (`kernel`; a launch through nvcc's stub says <<<...>>>).
  bool names_kernel = false;
  // The text report's word for the time (`blocked_ns`): "blocked", "ran", "waited".
  const char* time_verb = "blocked";
  // A group-level threshold once groups are merged: false drops the finding.
  bool (*reported)(const Finding& f, const Options& options) = nullptr;
  // The rule's own keys, written at the end of its JSON finding object (docs/report-json.md).
  void (*json_fields)(JsonWriter& out, const Finding& f) = nullptr;
  // The rule's own lines in the text report, after the statistics (without indentation).
  void (*text_lines)(std::vector<std::string>& lines, const Finding& f) = nullptr;
  // Reports every call of its kind; --min-blocked-us (or the rule's own threshold) ranks them: a
  // group none of whose calls reached it is a note, not a warning.
  bool ranked_by_threshold = false;
  // Sees only calls that blocked at least --min-blocked-us: the analysis does not call detect for
  // the others (most launches), as if it had returned false.
  bool at_threshold_only = false;
  // The copies it can claim (CopyFacts::copy_class, events/copies.h; a Copy or Memset rule that returns true only for copies
  // of these classes says so): the analysis does not call detect for the others.
  uint32_t copies = kAnyCopy;

  constexpr Rule(Trigger t, bool (*d)(RuleContext&, const RuleEvent&), std::string (*m)(const Finding&))
      : trigger(t), detect(d), message(m) {}
  constexpr Rule after(int p) const {
    return with([&](Rule& r) { r.precedence = p; });
  }
  constexpr Rule blocking() const {
    return with([](Rule& r) { r.counts_blocking = true; });
  }
  constexpr Rule threshold_first() const {
    return with([](Rule& r) { r.at_threshold_only = true; });
  }
  constexpr Rule ranked() const {
    return with([](Rule& r) { r.ranked_by_threshold = true; });
  }
  constexpr Rule claims_copies(uint32_t classes) const {
    return with([&](Rule& r) { r.copies = classes; });
  }
  constexpr Rule per_kernel() const {
    return with([](Rule& r) { r.names_kernel = true; });
  }
  constexpr Rule time_is(const char* verb) const {
    return with([&](Rule& r) { r.time_verb = verb; });
  }
  constexpr Rule reported_when(bool (*f)(const Finding&, const Options&)) const {
    return with([&](Rule& r) { r.reported = f; });
  }
  constexpr Rule json(void (*f)(JsonWriter&, const Finding&)) const {
    return with([&](Rule& r) { r.json_fields = f; });
  }
  constexpr Rule text(void (*f)(std::vector<std::string>&, const Finding&)) const {
    return with([&](Rule& r) { r.text_lines = f; });
  }

 private:
  template <class F>
  constexpr Rule with(F f) const {
    Rule r = *this;
    f(r);
    return r;
  }
};

namespace rules {
#define ASYNCWATCH_X(id, name, severity, hooks, ...) extern const Rule hooks;
ASYNCWATCH_FINDINGS(ASYNCWATCH_X)
#undef ASYNCWATCH_X
}  // namespace rules

// The rules of a trigger, in the order they run (precedence, then id).
const std::vector<const RuleInfo*>& rules_for(Trigger t);

}  // namespace asyncwatch
