// The JSON report (docs/report-json.md), written as it goes: no document is built.
#include "findings/rules.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "report/reports.h"

#include <asyncwatch/trace_format.h>

#include <algorithm>

namespace asyncwatch {

namespace {

void frame_fields(JsonWriter& w, const Frame& f) {
  w.text_or_null("function", f.function);
  w.text_or_null("file", f.file);
  if (f.has_line())
    w.field("line", f.line);
  else
    w.null_field("line");
  w.text_or_null("module", f.module);
  w.field("address", hex(f.address));
  w.field("offset", hex(f.offset));  // in the module: the same in every process
  w.field("inlined", f.inlined);
}

void frame_object(JsonWriter& w, const Frame& f) {
  w.object([&] {
    frame_fields(w, f);
    if (f.borrowed) w.field("borrowed", true);  // another thread's Python frame (only then present)
  });
}

}  // namespace

void gpu_overlap_object(JsonWriter& w, const StreamOverlap& s) {
  w.object([&] {
    w.field("stream", s.stream);
    w.field("operations", s.spans);
    w.field("busy_ns", s.busy_ns);
    w.field("first_to_last_ns", s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0);
    w.array("rules", s.rules, [&](const RuleOverlap& r) {
      w.object([&] {
        w.field("id", rule_info(r.rule).name);
        w.field("calls", r.calls);
        w.field("host_blocked_ns", r.host_blocked_ns);
        w.field("gpu_busy_ns", r.gpu_busy_ns);
        w.field("gpu_idle_ns", r.gpu_idle_ns);
      });
    });
  });
}

namespace {

void process_object(JsonWriter& w, const ProcessSummary& p) {
  w.begin_object();
  w.field("pid", p.pid);
  w.field("ppid", p.ppid);
  w.field("executable", p.executable);
  w.field("command_line", p.command_line);
  w.field("trace", p.trace);
  w.field("closed_cleanly", p.closed_cleanly);
  w.field("wall_ns", p.wall_ns);
  w.text_or_null("device", p.device);
  w.field("simulated", p.simulated);
  w.field("records", p.records);
  w.field("records_lost", p.records_lost);
  if (!p.lost.empty()) {  // where and why: one object per stretch of losses of a thread
    w.key("lost");
    w.begin_array();
    for (const auto& l : p.lost) {
      w.begin_object();
      w.field("tid", l.tid);
      w.field("count", l.count);
      w.field("first_ns", l.first_ns);
      w.field("last_ns", l.last_ns);
      w.field("reason", l.reason);
      w.end_object();
    }
    w.end_array();
  }
  w.field("blocked_ns_total", p.blocked_ns_total);
  // Beyond the minimal schema (docs/report-json.md):
  if (p.parent_pid_if_forked)
    w.field("parent_pid_if_forked", p.parent_pid_if_forked);
  else
    w.null_field("parent_pid_if_forked");
  if (p.closed_cleanly || p.signal || p.exit_status >= 0)
    w.field("exit_status", p.exit_status);
  else
    w.null_field("exit_status");
  if (p.signal)
    w.field("signal", p.signal);
  else
    w.null_field("signal");
  if (p.rank >= 0)
    w.field("rank", p.rank);
  else
    w.null_field("rank");
  w.text_or_null("rank_source", p.rank_source);
  w.field("cuda_calls", p.cuda_calls);
  w.field("cuda_calls_failed_no_device", p.cuda_calls_no_device);
  w.field("no_usable_device", p.no_usable_device());
  w.field("pauses", p.pauses);
  w.field("paused_ns", p.paused_ns);
  w.field("async_calls", p.async_calls);
  w.field("async_calls_async", p.async_calls_async);
  w.field("async_calls_blocking", p.async_calls_blocking);
  w.array("notes", p.notes, [&](const std::string& n) { w.value(n); });
  // Only in a flight-recorder trace's process (the reports of other traces stay as they were).
  if (p.flight.present)
    w.object("flight_window", [&] {
      w.field("ring_bytes", p.flight.ring_bytes);
      w.field("first_ns", p.flight.first_ns);
      w.field("last_ns", p.flight.last_ns);
      w.field("calls", p.flight.calls);
      w.field("calls_before", p.flight.calls_before);
      w.field("blocks_reused", p.flight.blocks_reused);
      w.field("copies_missed", p.flight.copies_missed);
    });
  // The overlap figures (null without GPU times), as the text report prints them.
  if (p.gpu_times)
    w.array("gpu_overlap", p.gpu_overlap, [&](const StreamOverlap& s) { gpu_overlap_object(w, s); });
  else
    w.null_field("gpu_overlap");
  w.end_object();
}

void finding_object(JsonWriter& w, const Finding& f, const CauseIndex& causes) {
  const RuleInfo& rule = rule_info(f.id);
  w.begin_object();
  w.field("id", rule.name);
  w.field("severity", severity_name(finding_severity(f)));
  w.field("message", finding_message(f));
  w.field("fingerprint", f.fingerprint);
  w.field("in_baseline", f.in_baseline);
  w.field("api", f.api);
  w.text_or_null("driver_api", f.driver_api);
  if (f.has_direction)
    w.field("direction", direction_name(f.direction));
  else
    w.null_field("direction");
  if (f.has_host_memory)
    w.field("host_memory", memory_kind_name(f.host_memory));
  else
    w.null_field("host_memory");
  if (const char* cause = cause_name(f.cause))
    w.field("cause", cause);
  else
    w.null_field("cause");
  w.text_or_null("kernel", f.kernel);
  w.field("count", f.count);
  w.field("bytes", f.bytes);
  w.object("blocked_ns", [&] {
    w.field("total", f.blocked.total());
    w.field("min", f.blocked.min());
    w.field("median", f.blocked.median());
    w.field("max", f.blocked.max());
  });
  w.field("share_of_wall", f.share_of_wall);
  w.field("threads", f.threads);
  w.field("impact_ns", f.impact_ns);
  w.field("impact_share", f.impact_share);
  w.field("impact_basis", f.impact_basis);
  size_t cause_rank = 0;
  if (const Finding* cause = causes.cause(f, &cause_rank))
    w.field("caused_by", cause->fingerprint);
  else
    w.null_field("caused_by");
  w.object("evidence", [&] {
    w.field("checked", f.evidence_checked);
    w.field("completed_at_return", f.completed_at_return);
  });
  // Only pageable-async-copy (waited-for-stream) observations carry the kernels waited for.
  std::vector<std::pair<std::string, uint64_t>> waited = most_first(f.waited_for);
  w.array("waited_for", waited, [&](const std::pair<std::string, uint64_t>& k) {
    w.object([&] {
      w.field("kernel", k.first);
      w.field("count", k.second);
    });
  });
  // NVTX ranges the calls were made in, most calls first.
  std::vector<std::pair<std::string, uint64_t>> ranges = most_first(f.ranges);
  w.array("ranges", ranges, [&](const std::pair<std::string, uint64_t>& k) {
    w.object([&] {
      w.field("name", k.first);
      w.field("calls", k.second);
    });
  });
  w.key("call_site");
  if (f.call_site_known) {
    w.begin_object();
    frame_fields(w, f.call_site);
    w.field("user_code", f.call_site_is_user_code);
    // The line is another thread's (the calls ran on threads without Python): docs/report-json.md.
    w.key("borrowed");
    if (f.python_lender) {
      w.object([&] {
        w.key("thread");
        if (uint32_t t = borrowed_lender_tid(f))
          w.value(t);
        else
          w.null();
        w.field("waiting", (f.python_lender & trace::kPythonLenderRunning) == 0);
        w.array("native_threads", calling_threads(f), [&](uint32_t t) { w.value(t); });
      });
    } else {
      w.null();
    }
    w.key("via");
    if (f.via.module.empty())
      w.null();
    else
      frame_object(w, f.via);
    w.end_object();
  } else {
    w.null();
  }
  w.array("stack", f.stack, [&](const Frame& fr) { frame_object(w, fr); });
  w.array("processes", f.processes, [&](const PerProcess& p) {
    w.object([&] {
      w.field("pid", p.pid);
      if (p.rank >= 0)
        w.field("rank", p.rank);
      else
        w.null_field("rank");
      w.field("count", p.count);
      w.field("blocked_ns_total", p.blocked_ns_total);
    });
  });
  if (rule.hooks.json_fields) rule.hooks.json_fields(w, f);
  w.end_object();
}

}  // namespace

void write_report_json(JsonWriter& w, const Report& report) {
  w.begin_object();
  w.field("schema", "asyncwatch-report");
  w.field("schema_version", 1);
  w.field("tool_version", ASYNCWATCH_VERSION);
  w.array("processes", report.processes, [&](const ProcessSummary& p) { process_object(w, p); });
  w.array("unreadable_traces", report.unreadable, [&](const UnreadableTrace& u) {
    w.object([&] {
      w.field("trace", u.trace);
      w.field("error", u.error);
    });
  });
  const Summary& s = report.summary;
  w.object("summary", [&] {
    w.field("async_calls", s.async_calls);
    w.field("async_calls_async", s.async_calls_async);
    w.field("async_calls_blocking", s.async_calls_blocking);
    w.field("blocked_ns_total", s.blocked_ns_total);
    w.field("findings", s.findings);
    w.field("findings_not_shown", report.findings_not_shown);
    size_t in_baseline = 0;
    for (const auto& f : report.findings) in_baseline += f.in_baseline;
    if (report.baseline.empty())
      w.null_field("findings_in_baseline");
    else
      w.field("findings_in_baseline", in_baseline);
  });
  const Options& o = report.options;
  w.object("thresholds", [&] {
    w.field("min_blocked_ns", o.min_blocked_ns);
    w.field("inline_htod_bytes", o.inline_htod_bytes);
    w.field("launch_queue_depth", o.launch_queue_depth);
    w.field("min_callback_ns", o.min_callback_ns);
    w.field("implicit_sync_min_count", o.implicit_sync_min_count);
  });
  const CauseIndex causes(report);
  w.array("findings", report.findings, [&](const Finding& f) { finding_object(w, f, causes); });
  w.end_object();
}

std::string report_json_text(const Report& report) {
  JsonWriter w;
  write_report_json(w, report);
  return w.text();
}

}  // namespace asyncwatch
