#include "format.h"
#include "reports.h"

#include <asyncwatch/trace_format.h>

namespace asyncwatch {

using nlohmann::ordered_json;

namespace {
ordered_json frame_json(const Frame& f) {
  ordered_json j;
  j["function"] = f.function.empty() ? ordered_json(nullptr) : ordered_json(f.function);
  j["file"] = f.file.empty() ? ordered_json(nullptr) : ordered_json(f.file);
  j["line"] = f.file.empty() ? ordered_json(nullptr) : ordered_json(f.line);
  j["module"] = f.module.empty() ? ordered_json(nullptr) : ordered_json(f.module);
  j["address"] = hex(f.address);
  j["offset"] = hex(f.offset);  // in the module: the same in every process
  j["inlined"] = f.inlined;
  return j;
}
ordered_json text_or_null(const std::string& s) { return s.empty() ? ordered_json(nullptr) : ordered_json(s); }
}  // namespace

ordered_json report_json(const Report& report) {
  ordered_json j;
  j["schema"] = "asyncwatch-report";
  j["schema_version"] = 1;
  j["tool_version"] = ASYNCWATCH_VERSION;
  ordered_json procs = ordered_json::array();
  for (const auto& p : report.processes) {
    ordered_json q;
    q["pid"] = p.pid;
    q["ppid"] = p.ppid;
    q["executable"] = p.executable;
    q["command_line"] = p.command_line;
    q["trace"] = p.trace;
    q["closed_cleanly"] = p.closed_cleanly;
    q["wall_ns"] = p.wall_ns;
    q["device"] = text_or_null(p.device);
    q["simulated"] = p.simulated;
    q["records"] = p.records;
    q["records_lost"] = p.records_lost;
    q["blocked_ns_total"] = p.blocked_ns_total;
    // Beyond the minimal schema (docs/report-json.md):
    q["parent_pid_if_forked"] = p.parent_pid_if_forked ? ordered_json(p.parent_pid_if_forked) : ordered_json(nullptr);
    q["exit_status"] = p.closed_cleanly ? ordered_json(p.exit_status) : ordered_json(nullptr);
    q["pauses"] = p.pauses;
    q["paused_ns"] = p.paused_ns;
    q["async_calls"] = p.async_calls;
    q["async_calls_async"] = p.async_calls_async;
    q["async_calls_blocking"] = p.async_calls_blocking;
    q["notes"] = p.notes;
    procs.push_back(std::move(q));
  }
  j["processes"] = std::move(procs);
  ordered_json unreadable = ordered_json::array();
  for (const auto& u : report.unreadable) unreadable.push_back({{"trace", u.trace}, {"error", u.error}});
  j["unreadable_traces"] = std::move(unreadable);
  const Summary& s = report.summary;
  j["summary"] = {{"async_calls", s.async_calls},
                  {"async_calls_async", s.async_calls_async},
                  {"async_calls_blocking", s.async_calls_blocking},
                  {"blocked_ns_total", s.blocked_ns_total},
                  {"findings", s.findings}};
  const Options& o = report.options;
  j["thresholds"] = {{"min_blocked_ns", o.min_blocked_ns},
                     {"inline_htod_bytes", o.inline_htod_bytes},
                     {"launch_queue_depth", o.launch_queue_depth},
                     {"min_callback_ns", o.min_callback_ns},
                     {"implicit_sync_min_count", o.implicit_sync_min_count}};
  ordered_json findings = ordered_json::array();
  for (const auto& f : report.findings) {
    ordered_json x;
    x["id"] = finding_id_name(f.id);
    x["severity"] = severity_name(rule_info(f.id).severity);
    x["message"] = finding_message(f);
    x["api"] = f.api;
    x["driver_api"] = text_or_null(f.driver_api);
    x["direction"] = f.has_direction ? ordered_json(direction_name(f.direction)) : ordered_json(nullptr);
    x["host_memory"] = f.has_host_memory ? ordered_json(memory_kind_name(f.host_memory)) : ordered_json(nullptr);
    const char* cause = cause_name(f.cause);
    x["cause"] = cause ? ordered_json(cause) : ordered_json(nullptr);
    x["kernel"] = text_or_null(f.kernel);
    x["count"] = f.count;
    x["bytes"] = f.bytes;
    x["blocked_ns"] = {{"total", f.blocked.total()},
                       {"min", f.blocked.min()},
                       {"median", f.blocked.median()},
                       {"max", f.blocked.max()}};
    x["share_of_wall"] = f.share_of_wall;
    x["evidence"] = {{"checked", f.evidence_checked}, {"completed_at_return", f.completed_at_return}};
    ordered_json waited = ordered_json::array();
    if (f.id == FindingId::PageableAsyncCopy && f.cause == Cause::WaitedForStream) {
      std::vector<std::pair<std::string, uint64_t>> k(f.waited_for.begin(), f.waited_for.end());
      std::stable_sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      for (const auto& [name, n] : k) waited.push_back({{"kernel", name}, {"count", n}});
    }
    x["waited_for"] = std::move(waited);
    x["call_site"] = f.call_site_known ? frame_json(f.call_site) : ordered_json(nullptr);
    if (f.call_site_known) {
      x["call_site"]["user_code"] = f.call_site_is_user_code;
      x["call_site"]["via"] = f.via.module.empty() ? ordered_json(nullptr) : frame_json(f.via);
    }
    ordered_json stack = ordered_json::array();
    for (const auto& fr : f.stack) stack.push_back(frame_json(fr));
    x["stack"] = std::move(stack);
    ordered_json per = ordered_json::array();
    for (const auto& p : f.processes)
      per.push_back({{"pid", p.pid}, {"count", p.count}, {"blocked_ns_total", p.blocked_ns_total}});
    x["processes"] = std::move(per);
    if (f.id == FindingId::LongHostCallback) x["stream_drained_before_return"] = f.drained_before_return;
    if (f.id == FindingId::BlockingLaunch) x["outstanding_launches_max"] = f.outstanding_launches_max;
    findings.push_back(std::move(x));
  }
  j["findings"] = std::move(findings);
  return j;
}

}  // namespace asyncwatch
