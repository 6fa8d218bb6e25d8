// The analysis of one process: the records streamed once in time order (the walk below: each
// record's call bookkeeping, then its handler), the stream, graph and NVTX state they update,
// the rules they call, and the groups the rules' observations go to. Its rooms:
//   process_analyzer.h   the record walk (copies, launches, syncs, host functions) and the state
//   call_groups.{h,cpp}  the groups of flagged calls (observe) and what each keeps
//   graph_state.cpp      stream capture, graphs and batch copies
//   nvtx_ranges.cpp      the NVTX ranges a call is made inside
//   impact_model.cpp     what fixing a flagged call would save (impact.h's model, fed)
//   call_sites.cpp       stacks to call sites, kernel and range names
//   process_finish.cpp   the end of the pass: the process summary, then groups to findings
#pragma once

#include "events/allocations.h"
#include "events/concurrent_calls.h"
#include "events/event.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "findings/analysis.h"
#include "findings/call_groups.h"
#include "findings/impact.h"
#include "findings/rules.h"
#include "read/trace_reader.h"
#include "symbols/call_site.h"
#include "symbols/python_symbols.h"
#include "symbols/symbolizer.h"
#include "timeline/gpu_overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace asyncwatch::analysis {

using namespace trace;

// No consumer of the walk besides the analysis (ProcessAnalyzer::run).
struct NoHook {};

class ProcessAnalyzer final : public RuleContext {
  using HostFunctions = events::HostFunctionJoin<HostFuncEnqueueRecord>;

 public:
  ProcessAnalyzer(TraceFile& t, const Options& o, std::vector<CallMark>* marks = nullptr)
      : trace_(t), opt_(o), streams_(t.path(), o.limits.streams), host_functions_(o.limits.pending_callbacks) {
    std::string env = fixed_string(t.header().cuda_env, sizeof t.header().cuda_env);
    launch_blocking_ = cuda_env_value(env, "CUDA_LAUNCH_BLOCKING") == "1";
    module_loading_ = cuda_env_value(env, "CUDA_MODULE_LOADING");
    marks_ = marks;
    gpu_times_ = (t.header().config_flags & kConfigGpuTimes) != 0;
    names_.push_back("");  // interned id 0 = none
    sites_.push_back(Site{});
    policy_.executable = fixed_string(t.header().executable, sizeof t.header().executable);
    policy_.user_code = o.user_code;
    std::vector<uint32_t> tids;
    for (const ThreadInfo& ti : t.threads()) tids.push_back(ti.tid);
    concurrent_.follow(tids.size(), tids.data());
    for (size_t i = 0; i < std::size(rules_); ++i) {
      rules_[i] = &rules_for(static_cast<Trigger>(i));
      const bool threshold_only = std::all_of(rules_[i]->begin(), rules_[i]->end(),
                                              [](const RuleInfo* r) { return r->hooks.at_threshold_only; });
      skip_below_[i] = threshold_only ? o.min_blocked_ns : 0;
      copy_classes_[i] = 0;
      for (const RuleInfo* r : *rules_[i]) copy_classes_[i] |= r->hooks.copies;
    }
  }

  const Options& options() const override { return opt_; }
  bool launch_blocking_env() const override { return launch_blocking_; }

  // The one walk. `after`: a consumer of the same walk (the HTML report's picture,
  // analyze_trace_with), handed each typed event after the analysis took it (the CallMarks of
  // that record pushed): after->event(r, ev).
  template <class Hook = NoHook>
  void run(Hook* after = nullptr) {  // (non-null unless Hook is NoHook)
    // Inline into the merge loop: a call per record cost its prologue, epilogue and the view's
    // fields through memory (docs/performance.md); the consumer's too, and a second dispatch on
    // the type (the HTML report's time over the JSON report's).
    if constexpr (std::is_same_v<Hook, NoHook>)
      trace_.stream_merged([this](const RecordView& r)
                               __attribute__((always_inline)) { record(r, static_cast<NoHook*>(nullptr)); });
    else
      trace_.stream_merged([ this, after ](const RecordView& r) __attribute__((always_inline)) { record(r, after); });
  }

  template <class Hook>
  __attribute__((always_inline)) void record(const RecordView& r, Hook* after) {
    current_tid_ = r.tid;
    current_thread_ = r.thread;
    // The one dispatch on the record's type (events/event.h); each kind's handling below is made
    // for its type (the records of the hot path read in place: 8-aligned in the mapping).
    events::visit(
        r, [&](const auto& ev) __attribute__((always_inline)) {
          on_event(r, ev);
          if constexpr (!std::is_same_v<Hook, NoHook>) after->event(r, ev);
        });
  }

  // (current_stream_: the stream of a copy, memset or launch, UINT64_MAX for the other records)
  // Inline into visit(): once per record (the JSON report's records per second).
  template <class E>
  __attribute__((always_inline)) void on_event(const RecordView& r, const E& ev) {
    using events::is_one_of;
    if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset>) {
      on_call(ev.rec);
      current_stream_ = ev.stream_key();
      on_copy(r, ev.rec, ev.copy, current_stream_);
    } else if constexpr (E::kind == RecordType::Launch) {
      on_call(ev.rec);
      current_stream_ = ev.stream_key();
      on_launch(ev.rec, current_stream_);
    } else if constexpr (E::kind == RecordType::Sync) {
      on_call(ev.rec);
      current_stream_ = UINT64_MAX;
      on_sync(r, ev.rec);
    } else if constexpr (E::kind == RecordType::HostFuncEnqueue) {
      on_call(ev.rec);
      current_stream_ = UINT64_MAX;
      on_enqueue(r, ev.rec);
    } else if constexpr (E::kind == RecordType::HostFuncRun) {
      const HostFuncRunRecord& run = ev.rec;
      first_call_ = false;  // not a call; its times are its own (trace_format.h, RecordInfo)
      current_start_ = run.start_ns;
      current_end_ = run.end_ns;
      current_stream_ = UINT64_MAX;
      concurrent_.host_function_run(r.thread, run.start_ns, run.end_ns);
      on_run(run);
    } else {
      other_event(r, ev);
    }
  }

  // The head of a call record: the process's first call (in time order: the one that made the
  // CUDA runtime create the context, when it is a runtime API call, docs/findings.md,
  // context-init), the result, the times (a call record's times are its head's: trace_format.h,
  // RecordInfo). Visited records are never in flight (the reader keeps those apart).
  __attribute__((always_inline)) void on_call(const CallHead& h) {
    first_call_ = false;
    if (__builtin_expect(!seen_call_, 0)) {
      seen_call_ = first_call_ = true;
      first_call_api_ = h.api;
    }
    count_result(h);
    current_start_ = h.start_ns;
    current_end_ = h.end_ns;
    concurrent_.call(current_thread_, h.api, h.stack_id, h.start_ns, h.end_ns);
  }

  // The other records (inline for the same figure).
  template <class E>
  __attribute__((always_inline)) void other_event(const RecordView& r, const E& ev) {
    using events::is_one_of;
    if constexpr (E::kCall) {
      on_call(ev.rec);
    } else {
      first_call_ = false;
      // (record_time / record_end_time, from the row)
      constexpr RecordInfo info = record_info(static_cast<uint16_t>(E::kind));
      current_start_ = time_at(r, info.start_offset);
      current_end_ = time_at(r, info.end_offset);
    }
    current_stream_ = UINT64_MAX;
    if constexpr (E::kind == RecordType::GraphLaunch) {
      GraphLaunchInfo graph = graph_launch_info(ev.rec.exec);
      on_launch(ev.rec, ev.stream_key(), &graph);
    } else if constexpr (E::kind == RecordType::BatchCopy) {
      on_batch(r, ev.rec);
    } else if constexpr (E::kind == RecordType::GraphOp) {
      on_graph_op(ev.rec);
    } else if constexpr (E::kind == RecordType::Capture) {
      on_capture(ev.rec);
    } else if constexpr (E::kind == RecordType::MemoryOp) {
      on_memory_op(ev.rec);
    } else if constexpr (E::kind == RecordType::StreamCreate) {
      streams_.created(ev.rec);
    } else if constexpr (E::kind == RecordType::StreamDestroy) {
      streams_.destroyed(ev.rec.stream);
    } else if constexpr (E::kind == RecordType::NvtxRange) {
      on_nvtx(r.tid, ev.rec);
    } else if constexpr (E::kind == RecordType::GpuSpan) {
      const GpuSpanRecord& g = ev.rec;
      events::StreamRef s = events::resolve_stream(g.stream_kind, g.stream, r.tid);
      overlap_.span(s.key, events::stream_name(s), g.start_ns, g.end_ns);
      if (g.op == static_cast<uint8_t>(GpuOp::Copy)) timed_copy(r.tid, g);
    }
  }

  // NVTX ranges: push/pop nest per thread and domain (a pop with none open is ignored); start/end
  // pair by id across threads. Names are string ids, resolved in finish().
  static uint64_t range_stack_key(uint32_t domain, uint32_t tid) { return uint64_t{domain} << 32 | tid; }
  void on_nvtx(uint32_t tid, const NvtxRangeRecord& n);

  // The distinct named ranges the current call is inside: this thread's push ranges, and every
  // start/end range open in the process.
  void add_ranges(Group& g);

  void observe(const Observation& o) override;
  void observe_rare(const ObservationRare& r, Group& g);  // observe's part for the few calls that carry it

  // The device's figures, once the trace has said which device it is (its DeviceInfo record comes
  // before the first call).
  const impact::Figures& figures();
  // What a pinned asynchronous copy in direction `d` (0 host to device, 1 device to host) costs the
  // host: the mean of this trace's own so far, else the device's figure.
  uint64_t pinned_call_ns(size_t d);
  // How long `bytes` take at the pinned rate in direction `d`: this trace's own pinned copies' rate
  // so far (GPU times), else the device's figure; `basis` says which.
  uint64_t pinned_transfer_ns(size_t d, uint64_t bytes, uint16_t* basis);
  // A GPU span of a copy: a waiting pageable copy's (the impact model's), or a pinned copy's, whose
  // rate becomes the trace's measured pinned rate (copies of 1 MiB or more: smaller ones are latency).
  void timed_copy(uint32_t tid, const GpuSpanRecord& g);

  // The fix's effect on the flagged call being looked at, for the impact model (impact.h;
  // docs/findings.md, "Impact"). A blocking call is followed to the wait that settles its gain;
  // synchronizations are followed in on_sync.
  void model_impact(const Observation& o, impact::Sink& sink);

  // The group of `key`, created when new. A direct-mapped cache answers the repeated ones (the
  // groups are node-based: a Group stays where it is until finish() erases it).
  // Inline into observe (once a grouped call: the JSON report's records per second); a key not in
  // the cache takes group_missed. The slot from two multiplies of the key's words, not
  // GroupKeyHash (the map's): about 18 instructions fewer an observation (callgrind).
  __attribute__((always_inline)) Group& group(const GroupKey& key) {
    constexpr uint64_t kMix = 0x9e3779b97f4a7c15ull;
    const size_t slot = static_cast<size_t>(((key.word(0) ^ (key.word(1) * kMix)) * kMix) >> (64 - kGroupCacheBits));
    Group*& cached = group_cache_[slot];
    if (__builtin_expect(cached && cached->key == key, 1)) return *cached;
    return group_missed(cached, key);
  }
  __attribute__((noinline)) Group& group_missed(Group*& cached, const GroupKey& key);

  // The end of the pass (process_finish.cpp): summarize, in_flight_calls, make_symbolizers, then
  // findings_of_groups.
  ProcessResult finish();

 private:
  uint64_t summarize(ProcessSummary& p);
  void make_symbolizers();
  std::vector<Finding> findings_of_groups(const ProcessSummary& p);

  __attribute__((always_inline)) static uint64_t stream_key(uint8_t kind, uint64_t handle, uint32_t tid) {
    return events::stream_key(kind, handle, tid);
  }

  // An event synchronize that returned faster than this did not wait (a completed event's answer).
  static constexpr uint64_t kEventWaitedNs = 20'000;
  // The impact model's stream of a wait: the legacy default stream waits for the others.
  static uint64_t wait_key(uint64_t key) { return key == 0 ? impact::Tracker::kAllStreams : key; }
  // A copy that waits for its stream before returning (streams.h, copy_returned, and host to host).
  static bool copy_waits(const CopyRecord& c, const CopyFacts& facts, bool sync_api) {
    const Direction d = facts.direction;
    return sync_api || d == Direction::HtoH || (c.flags & kFlagSourceStreamOrder) ||
           (d == Direction::DtoH && c.dst_memory == static_cast<uint8_t>(MemoryKind::Pageable));
  }
  static bool waiting_sync(const SyncRecord& s) {
    for (uint16_t a : {s.api, s.driver_fn}) switch (static_cast<Api>(a)) {
        case Api::cudaStreamSynchronize:
        case Api::cudaEventSynchronize:
        case Api::cudaDeviceSynchronize:
        case Api::cuStreamSynchronize:
        case Api::cuEventSynchronize:
        case Api::cuCtxSynchronize: return s.result == 0;
        default: break;
      }
    return false;
  }
  static bool frees_memory(Api api) {
    return api == Api::cudaFree || api == Api::cuMemFree_v2 || api == Api::cudaFreeHost || api == Api::cuMemFreeHost;
  }

  // A call's result. Every visited call has returned (the reader keeps calls still in flight
  // apart: in_flight_calls), so no in-flight test here.
  __attribute__((always_inline)) void count_result(const CallHead& h) {
    const int32_t result = h.result;
    ++cuda_calls_;
    if (result == 0) {
      ++cuda_calls_ok_;
    } else if (no_usable_device_error(result)) {
      if (!cuda_calls_no_device_++) no_device_result_ = result;
    }
  }

  // An asynchronous call; `flagged`: a blocking rule reported it (it blocked above the thresholds
  // for a reason the report names). A call that blocked without matching a rule (a pinned copy
  // behind a busy queue, a small inline copy) is not counted as blocking. Inline: once per
  // asynchronous call (the JSON report's records per second, docs/performance.md).
  __attribute__((always_inline)) void count_async(bool flagged, uint64_t blocked) {
    ++async_calls_;
    if (flagged) {
      ++async_blocking_;
      blocked_total_ = saturating_add(blocked_total_, blocked);
    }
  }

  // `facts`: c's direction, host side and class (the event's); `key`: the copy's stream
  // (stream_key). Inline: a copy between pinned and device memory, the common one, calls no rule.
  __attribute__((always_inline)) void on_copy(const RecordView& r, const CopyRecord& c, const CopyFacts& facts,
                                              uint64_t key) {
    const bool sync_api = (c.flags & kFlagSynchronousApi) != 0;
    const uint64_t blocked = c.end_ns - c.start_ns;
    if (c.flags & kFlagCaptureActive) {
      if (!sync_api) count_async(false, 0);
      if (r.type != RecordType::Memset) captured_copy(c, facts);
      return;
    }
    StreamState& st = streams_.at(key);
    tracker_.enqueue(current_tid_, key, c.start_ns);
    if (!tracker_.empty() && copy_waits(c, facts, sync_api))
      tracker_.wait(current_tid_, wait_key(key), c.start_ns, c.end_ns);
    RuleEvent& e = copy_event_;  // its other fields stay null
    e.copy = &c;
    e.copy_facts = &facts;
    e.stream = &st;
    if (r.type != RecordType::Memset) {  // Copy, BatchCopy
      if (!sync_api) {
        note_pinned_cost(c, facts.direction, blocked);
        flagged_blocking_ = false;
        detect(Trigger::Copy, e, UINT64_MAX, facts.copy_class);
        count_async(flagged_blocking_, blocked);
      }
      streams_.copy_returned(key, st, c, facts);
    } else {
      flagged_blocking_ = false;
      detect(Trigger::Memset, e, blocked, facts.copy_class);
      if (!sync_api) count_async(flagged_blocking_, blocked);
    }
  }

  // `key`: the launch's stream; `graph`: what the trace shows of a graph launch's graph.
  __attribute__((always_inline)) void on_launch(const LaunchRecord& l, uint64_t key,
                                                const GraphLaunchInfo* graph = nullptr) {
    const uint64_t blocked = l.end_ns - l.start_ns;
    if (l.flags & kFlagCaptureActive) {
      count_async(false, 0);
      if (l.kernel_name_id) {
        auto& k = capture_kernel_[l.stream];
        if (!k) k = l.kernel_name_id;
      }
      return;
    }
    StreamState& st = streams_.at(key);
    tracker_.enqueue(current_tid_, key, l.start_ns);
    flagged_blocking_ = false;
    if (!skips_detect(Trigger::Launch, blocked)) {
      RuleEvent& e = launch_event_;  // its other fields stay null
      e.launch = &l;
      e.stream = &st;
      e.graph = graph;
      e.first_call = first_call_;
      e.pending = nullptr;
      if ((l.flags & kFlagFirstLaunch) && blocked >= opt_.min_blocked_ns) {  // rare: a first launch that blocked
        streams_.pending(pending_);
        e.pending = &pending_;
      }
      e.concurrent = blocked >= opt_.min_blocked_ns ? concurrent_with(l) : nullptr;
      detect_rules(Trigger::Launch, e, blocked);
    }
    count_async(flagged_blocking_, blocked);
    streams_.launch_returned(key, st, l, launch_blocking_);
  }

  // Another thread's call (or a host function's run) that covered at least half of the launch's wait.
  const ConcurrentCall* concurrent_with(const LaunchRecord& l) {
    uint64_t overlap = 0;
    const events::ThreadCall* t = concurrent_.covering(current_tid_, l.start_ns, l.end_ns, 0.5, &overlap);
    if (!t) return nullptr;
    concurrent_call_ = ConcurrentCall{t->api, t->host_function, t->tid, t->stack_id, t->end_ns - t->start_ns, overlap};
    return &concurrent_call_;
  }

  void on_enqueue(const RecordView& r, const HostFuncEnqueueRecord& e) {
    if (e.flags & kFlagCaptureActive) {
      count_async(false, 0);
      return;
    }
    // No rule flags the enqueue itself for blocking (long-host-callback is about how long the
    // function ran on the driver's thread, deprecated-stream-callback about the API).
    count_async(false, 0);
    tracker_.enqueue(r.tid, stream_key(e.stream_kind, e.stream, r.tid), e.start_ns);
    RuleEvent& ev = enqueue_event_;  // its other fields stay null
    ev.enqueue = &e;
    detect(Trigger::HostFuncEnqueue, ev);
    HostFuncRunRecord run{};
    joined(host_functions_.enqueue(e.callback_id, e, &run), e, run);
  }

  void on_run(const HostFuncRunRecord& run) {
    HostFuncEnqueueRecord e{};
    joined(host_functions_.run(run, &e), e, run);
  }

  void joined(HostFunctions::Outcome outcome, const HostFuncEnqueueRecord& enqueue, const HostFuncRunRecord& run) {
    if (outcome == HostFunctions::Outcome::OverLimit)
      over_limit("host functions enqueued and not seen running (or the reverse)", opt_.limits.pending_callbacks,
                 nullptr);
    if (outcome != HostFunctions::Outcome::Joined) return;
    RuleEvent& e = run_event_;  // its other fields stay null
    e.enqueue = &enqueue;
    e.run = &run;
    detect(Trigger::HostFuncRun, e);
  }

  void on_sync(const RecordView& r, const SyncRecord& s) {
    if (s.flags & kFlagCaptureActive) return;
    RuleEvent& e = sync_event_;  // its other fields stay null
    e.sync = &s;
    const Api api = static_cast<Api>(s.api);
    const bool stream_sync = api == Api::cudaStreamSynchronize || api == Api::cuStreamSynchronize;
    const uint64_t key = stream_sync ? stream_key(s.stream_kind, s.handle, r.tid) : 0;
    StreamState* st = stream_sync ? &streams_.at(key) : nullptr;  // what it waits for
    e.stream = st;
    last_sink_ = nullptr;
    detect(Trigger::Sync, e);
    // Settles the flagged calls it waited for; a flagged one is followed itself. An event's stream and
    // record are not in the trace: an event synchronize that did not wait may be for earlier work
    // (double buffering), so only one that waited settles the thread's calls.
    if (waiting_sync(s)) {
      const bool event = api == Api::cudaEventSynchronize || api == Api::cuEventSynchronize ||
                         static_cast<Api>(s.driver_fn) == Api::cuEventSynchronize;
      if (!event || s.end_ns - s.start_ns >= kEventWaitedNs)
        tracker_.wait(r.tid, stream_sync ? wait_key(key) : impact::Tracker::kAllStreams, s.start_ns, s.end_ns,
                      last_sink_);
      else if (last_sink_)  // followed as a synchronization only
        tracker_.wait(r.tid, impact::Tracker::kNoStream, s.start_ns, s.end_ns, last_sink_);
    }
    if (st && s.result == 0)
      streams_.idle(key, *st);  // sync_returned's answer for a stream synchronize, the state at hand
    else
      streams_.sync_returned(s, r.tid);
  }

  void on_memory_op(const MemoryOpRecord& m) {
    if (m.flags & kFlagCaptureActive) return captured_memory_op(m);
    if (m.result == 0 && frees_memory(static_cast<Api>(m.api)))  // synchronizes the device (streams.h)
      tracker_.wait(current_tid_, impact::Tracker::kAllStreams, m.start_ns, m.end_ns);
    RuleEvent e;
    e.memory_op = &m;
    e.made_again = allocations_.returned(m);
    detect(Trigger::MemoryOp, e);
    streams_.memory_op_returned(m);
  }

  // ---- batch copies and graphs ----
  // A batch is judged by the copy rules through the elements that can make it wait (trace_format.h,
  // BatchCopyRecord): pageable sources read in stream order (the call waits for the stream: on the
  // H200 and by the simulator's rules), or other pageable sources (staged). A pageable destination
  // alone does not make a batch wait (measured on the H200, docs/findings.md): not flagged.
  void on_batch(const RecordView& r, const BatchCopyRecord& b);

  // Bounded tables: beyond kMaxGraphs graphs (or executable graphs) the rest are not followed, and
  // beyond kMaxGraphNodes pageable nodes a graph only counts them.
  static constexpr size_t kMaxGraphs = 65536;
  static constexpr size_t kMaxGraphNodes = 64;
  struct GraphNodes {
    std::vector<GraphMemcpyNode> nodes;  // pageable ones
    uint64_t more = 0;                   // pageable nodes beyond kMaxGraphNodes
    uint32_t kernel = 0;                 // first kernel captured into it
    uint64_t memory_nodes = 0;           // memory-allocation nodes (cudaMallocAsync captured)
    uint64_t launches = 0;               // an executable graph: launches since instantiated
  };
  static void add_node(GraphNodes& g, const GraphMemcpyNode& n);
  static void drop_node(GraphNodes& g, uint64_t node);
  template <class Map>
  static GraphNodes* slot(Map& m, uint64_t handle);

  void captured_copy(const CopyRecord& c, const CopyFacts& facts);

  void on_capture(const CaptureRecord& c);

  // A stream-ordered allocation made while its thread captured (MemoryOp records have no stream:
  // the stream the thread began capturing on): a memory-allocation node of that graph.
  void captured_memory_op(const MemoryOpRecord& m);

  void on_graph_op(const GraphOpRecord& g);

  // What the trace shows of the graph a launch runs; counts the launch (GraphLaunchInfo::first_launch).
  GraphLaunchInfo graph_launch_info(uint64_t exec);

  // This trace's asynchronous copies between pinned host and device memory: what a copy costs the
  // host when pinned, by direction (the basis of estimated_saving_ns).
  __attribute__((always_inline)) void note_pinned_cost(const CopyRecord& c, Direction d, uint64_t blocked) {
    const auto pinned = static_cast<uint8_t>(MemoryKind::Pinned), device = static_cast<uint8_t>(MemoryKind::Device);
    const bool htod = d == Direction::HtoD && c.src_memory == pinned && c.dst_memory == device;
    const bool dtoh = d == Direction::DtoH && c.src_memory == device && c.dst_memory == pinned;
    if (htod) pinned_htod_.add(blocked);
    if (dtoh) pinned_dtoh_.add(blocked);
    if ((htod || dtoh) && (c.flags & kFlagGpuTimed) && c.bytes >= (1u << 20)) {  // its span: the pinned rate
      auto& copies = timed_pinned_[current_tid_];
      if (copies.size() >= kMaxTimedPinned) copies.erase(copies.begin());
      copies.push_back(TimedPinned{c.start_ns, c.end_ns, c.bytes, static_cast<uint8_t>(htod ? 0 : 1)});
    }
  }

  // The calls in flight when the trace ended, each to the rules as of the trace's end.
  void in_flight_calls(uint64_t trace_end, bool cleanly);

  // The rules of the trigger in their order, until one claims the call.
  // `blocked`: the call's blocked time, for the rules that see only calls at the threshold
  // (Rule::at_threshold_only; UINT64_MAX: every rule sees it).
  // Inline: a call below the threshold whose trigger has only threshold_first rules (most
  // launches) returns here.
  // `copy`: the copy_class of a copy or memset (Rule::copies), kAnyCopy for the other triggers.
  __attribute__((always_inline)) void detect(Trigger t, const RuleEvent& e, uint64_t blocked = UINT64_MAX,
                                             uint32_t copy = kAnyCopy) {
    if (!skips_detect(t, blocked) && (copy & copy_classes_[static_cast<size_t>(t)])) detect_rules(t, e, blocked, copy);
  }
  bool skips_detect(Trigger t, uint64_t blocked) const { return blocked < skip_below_[static_cast<size_t>(t)]; }
  void detect_rules(Trigger t, const RuleEvent& e, uint64_t blocked, uint32_t copy = kAnyCopy) {
    for (const RuleInfo* r : *rules_[static_cast<size_t>(t)]) {
      if (r->hooks.at_threshold_only && blocked < opt_.min_blocked_ns) continue;
      if (!(r->hooks.copies & copy)) continue;  // it cannot claim this copy
      if (r->hooks.detect(*this, e)) return;
    }
  }
  [[noreturn]] void over_limit(const char* what, uint64_t limit, const char* option) const {
    throw TraceError(fmt::format("{}: {}", trace_.path(), limit_message(what, limit, option)));
  }

  uint32_t intern_name(const std::string& name);
  // The call site of a stack; for a launch (`kernel_id` != 0) nvcc's host wrapper of that
  // kernel is skipped too.
  SiteRef site_of(uint32_t stack_id, uint32_t kernel_id = 0);

  // The frames of a stack (nullptr: the trace has no such stack), made once and shared by the
  // findings of that stack and by site_of.
  const Stack* stack_of(uint32_t stack_id);

  std::string range_name(uint32_t id) const;

  // Made once per id: the findings name the same few kernels many times over (waited for), and
  // demangling was most of finish()'s time.
  const std::string& kernel_name(uint32_t id);

  // (domain << 32 | tid) -> open push ranges' names; the NVTX domains seen (0: the core one).
  std::unordered_map<uint64_t, std::vector<uint32_t>> range_stacks_;
  std::vector<uint32_t> range_domains_{0};
  std::unordered_map<uint64_t, uint32_t> open_ranges_;  // start/end range id -> name
  std::vector<uint32_t> range_scratch_;
  TraceFile& trace_;
  const Options& opt_;
  std::shared_ptr<DebugInfoBudget> budget_;  // the symbolizer's (it holds a pointer): outlives symbols_
  std::unique_ptr<Symbolizer> symbols_;      // made after the pass, when all modules are known
  std::unique_ptr<PythonSymbols> python_;    // the same, for the Python frames of stacks
  bool launch_blocking_ = false;
  std::string module_loading_;
  events::StreamTable streams_;
  HostFunctions host_functions_;
  events::Allocations allocations_;
  events::ConcurrentCalls concurrent_;  // each thread's latest call (RuleEvent::concurrent)
  ConcurrentCall concurrent_call_;
  PendingWork
      pending_;  // RuleEvent::pending of the launch being looked at  // live allocations: implicit-sync's churn (RuleEvent::made_again)
  std::unordered_map<uint64_t, GraphNodes> capturing_;        // stream handle -> pageable copies captured so far
  std::unordered_map<uint32_t, uint64_t> capture_of_thread_;  // tid -> the stream it last began capturing
  std::unordered_map<uint64_t, uint32_t> capture_kernel_;     // stream handle -> first kernel captured
  std::unordered_map<uint64_t, GraphNodes> graphs_;           // CUgraph -> its pageable memcpy nodes
  std::unordered_map<uint64_t, GraphNodes> execs_;            // CUgraphExec -> the same, as instantiated/updated
  std::unordered_map<GroupKey, Group, GroupKeyHash> groups_;
  // A direct-mapped cache of groups by key: a group pointer a slot, the key compared in the group's
  // first line (which the call updates anyway). 8192 slots (64 KiB): with the key in each slot
  // (24 bytes) 4096 of them took more room and more of the benchmark's groups collided.
  static constexpr unsigned kGroupCacheBits = 13;
  static constexpr size_t kGroupCache = size_t{1} << kGroupCacheBits;
  std::vector<Group*> group_cache_ = std::vector<Group*>(kGroupCache);  // cleared when finish() starts erasing groups
  struct DenseSite {
    SiteRef ref;
    bool resolved = false;
  };
  std::vector<DenseSite> dense_sites_;                 // by stack id (ids are small and dense)
  std::unordered_map<uint64_t, SiteRef> stack_sites_;  // ids beyond the dense range; (kernel, stack) of launches
  std::unordered_map<uint32_t, std::optional<Stack>> stacks_;  // by stack id, made in finish() (stack_of)
  std::deque<Site> sites_;  // not a vector: no doubling copy (100 k+ sites of 248 bytes)
  std::unordered_map<std::string, uint32_t> site_ids_;
  CallSitePolicy policy_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::unordered_map<uint32_t, std::string> kernel_names_;  // kernel_name's, by string id
  const std::vector<const RuleInfo*>* rules_[static_cast<size_t>(Trigger::InFlight) + 1];  // rules_for, by trigger
  // By trigger: --min-blocked-us when every rule of it is Rule::at_threshold_only (a call that
  // blocked less calls none of them), else 0 (skips_detect: one comparison).
  uint64_t skip_below_[static_cast<size_t>(Trigger::InFlight) + 1];
  uint32_t copy_classes_[static_cast<size_t>(Trigger::InFlight) + 1];  // by trigger: its rules' Rule::copies
  // Each trigger's event, built once (zeroing one per call was a good part of the dispatch); the
  // handlers set the fields of their trigger, the others stay null.
  RuleEvent launch_event_, copy_event_, enqueue_event_, run_event_, sync_event_;
  bool flagged_blocking_ = false;  // a blocking rule flagged the call being looked at
  uint32_t current_tid_ = 0;       // the thread of the record being looked at
  uint32_t current_thread_ = 0;    // ... its index in the trace's threads (RecordView::thread)
  bool seen_call_ = false;
  bool first_call_ = false;  // the record being looked at is the process's first call
  uint16_t first_call_api_ = 0;
  DurationStats pinned_htod_, pinned_dtoh_;
  uint64_t async_calls_ = 0;
  uint64_t cuda_calls_ = 0, cuda_calls_ok_ = 0, cuda_calls_no_device_ = 0;
  int32_t no_device_result_ = 0;
  uint64_t async_blocking_ = 0;
  uint64_t blocked_total_ = 0;
  std::vector<CallMark>* marks_ = nullptr;
  uint64_t current_start_ = 0;
  uint64_t current_end_ = 0;
  uint64_t current_stream_ = UINT64_MAX;
  GpuOverlap overlap_;
  uint32_t next_serial_ = 0;
  impact::Figures figures_;
  bool figures_ready_ = false;
  impact::Rate pageable_idle_;  // this trace's pageable device-to-host copies of 1 MiB or more on an idle stream
  bool gpu_times_ = false;      // the trace has GPU times (ASYNCWATCH_GPU_TIMES)
  impact::Tracker tracker_;
  // Pinned copies of 1 MiB or more whose GPU span is still to come, per thread (the last few), and
  // the rate of those matched so far, by direction.
  struct TimedPinned {
    uint64_t start, end, bytes;
    uint8_t direction;
  };
  static constexpr size_t kMaxTimedPinned = 16;
  std::unordered_map<uint32_t, std::vector<TimedPinned>> timed_pinned_;
  uint64_t pinned_rate_bytes_[2] = {0, 0}, pinned_rate_ns_[2] = {0, 0};
  impact::Sink* last_sink_ = nullptr;  // the group of the call last observed (on_sync: a flagged synchronization)
};

// analyze_trace(trace, options, marks) with `after` fed by the same walk (ProcessAnalyzer::run).
template <class Hook>
ProcessResult analyze_trace_with(TraceFile& trace, const Options& options, std::vector<CallMark>* marks, Hook& after) {
  trace.index_blocks();
  ProcessAnalyzer analyzer(trace, options, marks);
  analyzer.run(&after);
  return analyzer.finish();
}

}  // namespace asyncwatch::analysis
