// The end of the pass: the process summary, the calls still in flight, then each group to a finding.
#include "findings/process_analyzer.h"

#include "findings/hidden_sync.h"
#include "report/format.h"
#include "symbols/debuginfo.h"

#include <cstdlib>

namespace asyncwatch::analysis {

namespace {

// What a loss reason means to the user (trace_format.h's ASYNCWATCH_LOST_REASONS names them).
std::string lost_reason_text(const std::string& reason) {
  if (reason == "no-block") return "no trace block could be claimed: tracing had stopped";
  if (reason == "file-limit") return "the trace file could not grow: disk full or RLIMIT_FSIZE";
  if (reason == "signal-handler") return "made inside a signal handler that interrupted the library";
  if (reason == "too-large") return "a record larger than a trace block";
  return "reason unknown";
}

// What a capture range (FileHeader::capture_*) let into the trace, in one line. The header is
// untrusted: times outside the trace's span are clamped to it.
std::string capture_note(const FileHeader& h, uint64_t end, const ProcessSummary& p) {
  const uint64_t start = h.start_monotonic_ns;
  auto at = [&](uint64_t t) { return format_duration(t > start ? std::min(t, end) - start : 0); };
  std::string mode = trace::capture_mode_text(h.capture_mode);
  std::string settings;
  if (h.capture_delay_ns) settings += fmt::format(", delay {}", format_duration(h.capture_delay_ns));
  if (h.capture_duration_ns) settings += fmt::format(", duration {}", format_duration(h.capture_duration_ns));
  if (h.capture_ranges == 0) {
    const char* why = h.capture_mode == static_cast<uint8_t>(trace::CaptureMode::ProfilerApi)
                          ? "cudaProfilerStart (or cuProfilerStart) was never called"
                      : h.capture_mode == static_cast<uint8_t>(trace::CaptureMode::Nvtx)
                          ? "no NVTX range of that name was opened"
                          : "the run ended before the delay did";
    return fmt::format(
        "capture range {}{}: no range opened ({}), so no CUDA call was recorded: this trace says "
        "nothing about the run's calls",
        mode, settings, why);
  }
  const bool open_at_end = h.capture_last_end_ns < h.capture_last_start_ns;
  return fmt::format(
      "capture range {}{}: {} range{} recorded, {} of the run's {} (from {} to {}); calls outside the "
      "range{} are not in this trace, and shares of wall time count the recorded time only",
      mode, settings, h.capture_ranges, h.capture_ranges == 1 ? "" : "s",
      format_duration(p.wall_ns > p.paused_ns ? p.wall_ns - p.paused_ns : 0), format_duration(p.wall_ns),
      "+" + at(h.capture_first_start_ns), open_at_end ? "the end" : "+" + at(h.capture_last_end_ns),
      h.capture_ranges == 1 ? "" : "s");
}

}  // namespace

void ProcessAnalyzer::in_flight_calls(uint64_t trace_end, bool cleanly) {
  for (const InFlightCall& call : trace_.in_flight_calls()) {
    current_tid_ = call.tid;
    RuleEvent e;
    e.in_flight = &call.head;
    e.trace_end_ns = trace_end;
    e.ended_cleanly = cleanly;
    detect(Trigger::InFlight, e);
  }
}

ProcessResult ProcessAnalyzer::finish() {
  ProcessResult out;
  const uint64_t end = summarize(out.process);
  in_flight_calls(end, out.process.closed_cleanly);
  make_symbolizers();
  out.findings = findings_of_groups(out.process);
  for (const auto& problem : symbols_->problems()) out.process.notes.push_back(problem);
  return out;
}

// The process summary and its notes; returns the trace's end (its monotonic time).
uint64_t ProcessAnalyzer::summarize(ProcessSummary& p) {
  const FileHeader& h = trace_.header();
  p.pid = h.pid;
  p.ppid = h.ppid;
  p.parent_pid_if_forked = h.parent_pid_if_forked;
  if (h.rank_source >= 1 && h.rank_source <= std::size(trace::kRankVariables)) {
    p.rank = h.rank;
    p.rank_source = trace::kRankVariables[h.rank_source - 1];
  }
  p.executable = fixed_string(h.executable, sizeof h.executable);
  p.command_line = fixed_string(h.command_line, sizeof h.command_line);
  p.hostname = fixed_string(h.hostname, sizeof h.hostname);
  p.cuda_env = fixed_string(h.cuda_env, sizeof h.cuda_env);
  p.trace = trace_.path();
  p.closed_cleanly = trace_.closed_cleanly();
  p.exit_status = h.exit_status;
  p.start_monotonic_ns = h.start_monotonic_ns;
  p.start_realtime_ns = h.start_realtime_ns;
  uint64_t end = p.closed_cleanly ? h.end_monotonic_ns : trace_.last_time_ns();
  tracker_.finish(end);
  p.wall_ns = end > h.start_monotonic_ns ? end - h.start_monotonic_ns : 0;
  p.device = trace_.device().present ? trace_.device().name : "";
  p.simulated = trace_.device().simulated;
  p.records = trace_.record_count();
  p.records_lost = std::max(h.records_lost, trace_.lost_in_records());
  p.blocked_ns_total = blocked_total_;
  p.async_calls = async_calls_;
  p.async_calls_blocking = async_blocking_;
  p.async_calls_async = async_calls_ - async_blocking_;
  p.cuda_calls = cuda_calls_;
  p.cuda_calls_ok = cuda_calls_ok_;
  p.cuda_calls_no_device = cuda_calls_no_device_;
  p.no_device_result = no_device_result_;
  if (p.no_usable_device())
    p.notes.push_back(
        fmt::format("no CUDA call succeeded: {} of {} failed with error {} (no usable CUDA driver or "
                    "device); on a machine without a GPU use `asyncwatch run --sim`",
                    p.cuda_calls_no_device, p.cuda_calls, p.no_device_result));
  if (!p.closed_cleanly)
    p.notes.push_back(
        "the process did not exit cleanly (killed or crashed); records up to the last returned call "
        "are included");
  for (const auto& l : trace_.lost_reports()) {
    auto since_start = [&](uint64_t t) { return t > h.start_monotonic_ns ? t - h.start_monotonic_ns : 0; };
    auto reason = static_cast<uint32_t>(l.reason);
    p.lost.push_back({l.tid, l.count, since_start(l.first_ns), since_start(l.last_ns),
                      reason < trace::kLostReasonCount ? trace::kLostReasonNames[reason] : "unknown"});
  }
  if (p.records_lost) {
    std::string where;
    constexpr size_t kShown = 4;  // the note stays one line; JSON's "lost" has every stretch
    for (size_t i = 0; i < p.lost.size() && i < kShown; ++i) {
      const auto& l = p.lost[i];
      where += fmt::format("{}thread {}: {} from {} to {} ({})", i ? "; " : ": ", l.tid, l.count,
                           format_duration(l.first_ns), format_duration(l.last_ns), lost_reason_text(l.reason));
    }
    if (p.lost.size() > kShown) where += fmt::format("; {} more stretches", p.lost.size() - kShown);
    p.notes.push_back(fmt::format("{} records were lost{}; findings may be incomplete", p.records_lost, where));
  }
  if (h.config_flags & kConfigFileThreadYielded)
    p.notes.push_back(
        "the program could not start a thread or process (RLIMIT_NPROC?): asyncwatch's file thread ended to leave it "
        "its slot, and the trace ends where its file was mapped then (later calls are counted as lost)");
  p.pauses = h.pause_count;
  p.paused_ns = h.paused_ns;
  if (h.paused_since_ns && end > h.paused_since_ns) p.paused_ns += end - h.paused_since_ns;  // ended paused
  p.paused_ns = std::min(p.paused_ns, p.wall_ns);
  if (h.capture_mode != 0)
    p.notes.push_back(capture_note(h, end, p));
  else if (p.pauses)
    p.notes.push_back(
        fmt::format("recording was paused {} time{} for {} in all (asyncwatch_set_recording): calls "
                    "made while paused are not in this trace, and shares of wall time count the "
                    "recorded time only",
                    p.pauses, p.pauses == 1 ? "" : "s", format_duration(p.paused_ns)));
  if (trace_.summary()) p.notes.push_back(trace_.summary_note());
  if (trace_.flight()) {
    const asyncwatch::FlightWindow& w = trace_.window();
    auto since_start = [&](uint64_t t) { return t > h.start_monotonic_ns ? t - h.start_monotonic_ns : 0; };
    p.flight = {true,
                w.ring_blocks * trace::kBlockSize,
                w.records ? since_start(trace_.window_first_ns()) : 0,
                w.records ? since_start(w.last_ns) : 0,
                w.calls,
                p.cuda_calls > w.calls ? p.cuda_calls - w.calls : 0,
                w.blocks_reused,
                w.copies_missed};
    p.notes.push_back(trace_.flight_note(p.cuda_calls));
  }
  p.gpu_times = (h.config_flags & kConfigGpuTimes) != 0;
  p.gpu_overlap = overlap_.figures();
  if (overlap_.partial())
    p.notes.push_back(fmt::format("the GPU overlap figures count the first {} GPU intervals and flagged calls only",
                                  GpuOverlap::kMaxIntervals));
  if (trace_.truncated_while_reading())
    p.notes.push_back(fmt::format(
        "the trace was truncated while being read (it had {} bytes when opened): the records up to that point "
        "are included",
        trace_.file_size()));
  if (p.parent_pid_if_forked) p.notes.push_back(fmt::format("forked from pid {}", p.parent_pid_if_forked));
  if (trace_.in_flight_records() > trace_.in_flight_calls().size())
    p.notes.push_back(fmt::format("{} calls were in flight when the process ended; the first {} are reported",
                                  trace_.in_flight_records(), trace_.in_flight_calls().size()));
  if (seen_call_ && is_driver_api(static_cast<Api>(first_call_api_)))
    p.notes.push_back(fmt::format(
        "the first CUDA call in the trace is {}, a driver entry point: the CUDA context was created before it, by "
        "calls asyncwatch does not record (inside the static CUDA runtime, or cuInit/cuCtxCreate), so the "
        "creation's time is in no finding",
        api_name(static_cast<Api>(first_call_api_))));
  return end;
}

// Made after the pass, when all modules are known.
void ProcessAnalyzer::make_symbolizers() {
  const char* no_symbols = std::getenv("ASYNCWATCH_NO_SYMBOLS");
  // The report's budget; a trace analyzed alone has one of its own.
  budget_ = opt_.debug_budget
                ? opt_.debug_budget
                : make_debug_info_budget(opt_.limits.debug_info_module_bytes, opt_.limits.debug_info_total_bytes);
  symbols_ = std::make_unique<Symbolizer>(trace_.modules(), !(no_symbols && *no_symbols && *no_symbols != '0'),
                                          opt_.path_map, budget_.get());
  python_ = std::make_unique<PythonSymbols>(trace_, policy_.executable);
}

// The findings of process `p` (unranked), for CallMark and caused_by too.
std::vector<Finding> ProcessAnalyzer::findings_of_groups(const ProcessSummary& p) {
  std::vector<Finding> out;
  // Each group becomes a finding (merged by call site, as stacks that differ only outside the
  // user's code give one site) and is freed as it goes: groups and findings are never both whole.
  FindingSet findings;
  findings.reserve(groups_.size());  // at most one finding per group; pages never filled are never touched
  // CallMark and the impact model's causes: group -> merged finding.
  bool causes = false;
  // The causes' owners, read now: the loop below frees the groups (and their sinks) as it goes.
  for (auto& [key, g] : groups_)
    if (g.sink.cause) {
      causes = true;
      g.cause_serial = g.sink.cause->owner;
    }
  std::vector<std::string> key_of_serial(marks_ || causes ? next_serial_ : 0);
  std::vector<std::pair<std::string, uint32_t>> caused;  // a finding's key, its cause's serial
  std::fill(group_cache_.begin(), group_cache_.end(), nullptr);
  // The call site of a stack a finding names besides its own (a graph node's origin, a concurrent call).
  auto resolve_origin = [this](uint32_t stack_id, auto& info) {
    SiteRef origin = site_of(stack_id);
    if (origin.site) {
      info.site_known = true;
      info.site = sites_[origin.site].frame;
    }
  };
  for (auto it = groups_.begin(); it != groups_.end(); it = groups_.erase(it)) {
    const GroupKey& key = it->first;
    Group& g = it->second;
    SiteRef site = site_of(key.site, key.kernel);
    Finding f;
    f.id = static_cast<FindingId>(key.id);
    const Rule& rule = rule_info(f.id).hooks;
    f.cause = static_cast<Cause>(key.cause);
    bool driver_name = is_driver_api(static_cast<Api>(key.api));
    std::string raw_api = api_name(static_cast<Api>(key.api));
    f.api = public_api_name(driver_name && site.api_override ? names_[site.api_override] : raw_api);
    // kernel<<<...>>>: the stack went through nvcc's stub, or the runtime's internal entry
    // point that only the stubs call was hooked.
    f.chevron_launch = rule.names_kernel && (site.chevron_launch || raw_api.rfind("__cudaLaunchKernel", 0) == 0);
    f.driver_api = key.driver_fn ? api_name(static_cast<Api>(key.driver_fn)) : "";
    f.has_direction = key.direction >= 0;
    f.direction = f.has_direction ? static_cast<Direction>(key.direction) : Direction::Unknown;
    f.has_host_memory = key.memory >= 0;
    f.host_memory = f.has_host_memory ? static_cast<MemoryKind>(key.memory) : MemoryKind::Unknown;
    if (rule.names_kernel) f.kernel = kernel_name(key.kernel);
    f.count = g.count;
    f.bytes = g.bytes;
    f.blocked = std::move(g.blocked);
    f.evidence_checked = g.evidence_checked;
    f.completed_at_return = g.completed_at_return;
    f.drained_before_return = g.drained;
    f.outstanding_launches_max = g.outstanding_max;
    f.pending_copies = g.pending_copies;
    f.pending_copy_bytes = g.pending_copy_bytes;
    if (g.graph_pageable_nodes) {
      const GraphMemcpyNode& n = g.graph_node;
      f.graph_pageable_nodes = g.graph_pageable_nodes;
      auto node = std::make_shared<GraphMemcpyNodeInfo>();
      node->api = public_api_name(api_name(static_cast<Api>(n.api)));
      node->direction = n.direction;
      node->bytes = n.bytes;
      node->captured = n.captured;
      resolve_origin(n.stack_id, *node);
      f.graph_node_info = std::move(node);
    }
    f.graph_memory_nodes = g.graph_memory_nodes;
    if (g.concurrent.duration_ns) {
      auto c = std::make_shared<ConcurrentCallInfo>();
      const ConcurrentCall& k = g.concurrent;
      if (!k.host_function) c->api = public_api_name(api_name(static_cast<Api>(k.api)));
      c->tid = k.tid;
      c->duration_ns = k.duration_ns;
      c->overlap_ns = k.overlap_ns;
      resolve_origin(k.stack_id, *c);
      f.concurrent = std::move(c);
    }
    f.at_threshold = g.at_threshold;
    f.below_threshold = rule.ranked_by_threshold && g.at_threshold == 0;
    f.event_waits = g.event_waits;
    f.context_creation_visible = g.context_creation_visible;
    f.process_ended_cleanly = g.ended_cleanly;
    f.repeated_calls = g.repeated;
    f.thread_blocked.reserve(g.thread_blocked.size());
    g.thread_blocked.each([&](uint32_t tid, uint64_t ns) { f.add_thread_blocked((p.pid << 32) | tid, ns); });
    f.impact_ns = g.sink.impact_ns;
    f.impact_basis = impact::basis_text(g.sink.basis | (p.simulated ? impact::kSimulated : 0));
    g.waited.each([&](uint32_t k, uint64_t n) { f.waited_for[kernel_name(k)] += n; });
    if (g.waited_others) f.waited_for["(other kernels)"] += g.waited_others;
    if (g.ranges)
      for (const auto& [k, n] : *g.ranges) f.ranges[range_name(k)] += n;
    f.module_loading = module_loading_;
    if (site.site) {
      f.call_site_known = true;
      f.call_site = sites_[site.site].frame;
      f.via = sites_[site.site].via;
      f.call_site_is_user_code = sites_[site.site].user;
      f.python_lender = sites_[site.site].python_lender;
      if (const char* phase = sites_[site.site].framework_phase) {
        // The framework's one-time work, kept apart from the same line's steady state: a note.
        f.framework_phase = phase;
        f.below_threshold = true;
      }
    }
    if (f.framework_phase.empty())
      for (const auto& [kernel, n] : f.waited_for)
        if (const char* phase = framework_phase_of_kernel(kernel)) {
          f.framework_phase = phase;  // the same verdict without the framework's symbols
          f.below_threshold = true;
          break;
        }
    if (g.stack_id)
      if (const auto* stack = stack_of(g.stack_id)) f.stack = *stack;
    // A synchronization reached from inside a library is hidden-sync (its call site says so); an
    // explicit one does not say what it waited for (the code that wrote it knows).
    if (f.id == FindingId::ExplicitSync) {
      if (rules::is_hidden_sync(f, policy_, driver_name)) {
        f.id = FindingId::HiddenSync;
        // Reported whatever one wait cost; a site whose waits total less than --min-blocked-us is a note.
        f.below_threshold = !f.framework_phase.empty() || f.blocked.total() < opt_.min_blocked_ns;
      } else {
        f.waited_for.clear();
      }
    }
    f.processes.push_back(PerProcess{p.pid, f.count, f.blocked.total(), p.rank});
    f.set_key();
    if (!key_of_serial.empty()) key_of_serial[g.serial] = f.key;
    if (g.cause_serial != UINT32_MAX) caused.emplace_back(f.key, g.cause_serial);
    findings.add(std::move(f));
  }
  out = findings.take();
  if (!caused.empty()) {
    std::unordered_map<std::string, size_t> at;
    for (size_t i = 0; i < out.size(); ++i) at.emplace(out[i].key, i);
    for (const auto& [key, cause] : caused) {
      Finding& f = out[at.at(key)];
      if (f.caused_by.empty() && key_of_serial[cause] != key) f.caused_by = key_of_serial[cause];
    }
  }
  if (marks_) {
    std::unordered_map<std::string, uint32_t> index;
    for (size_t i = 0; i < out.size(); ++i) index.emplace(out[i].key, static_cast<uint32_t>(i));
    // Each group's finding looked up once by key, then each mark by its group's serial (a look-up by
    // key per mark, a million of them on the benchmark's trace, cost the HTML report ~25
    // instructions a record: its time over the JSON report's, docs/performance.md).
    std::vector<uint32_t> finding_of_serial(key_of_serial.size(), UINT32_MAX);
    for (size_t s = 0; s < key_of_serial.size(); ++s)
      if (auto it = index.find(key_of_serial[s]); it != index.end()) finding_of_serial[s] = it->second;
    for (auto& m : *marks_) {
      const uint32_t f = finding_of_serial[m.finding];
      m.finding = f != UINT32_MAX ? f : index.at(key_of_serial[m.finding]);
    }
  }
  return out;
}

}  // namespace asyncwatch::analysis
