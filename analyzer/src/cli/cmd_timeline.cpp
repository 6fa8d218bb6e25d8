// asyncwatch timeline [-o FILE] [--format json|perfetto] [--window T0:T1] [--findings-only]
//                     [--max-size-mib N] TRACE_OR_DIR...
#include "findings/analysis.h"
#include "cli/commands.h"
#include "diagnostics.h"
#include "report/format.h"
#include "report/output_file.h"
#include "timeline/timeline_export.h"
#include "read/trace_reader.h"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>

namespace asyncwatch {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "T0:T1" in seconds (non-negative, T0 <= T1) -> nanoseconds.
bool parse_window(const std::string& w, uint64_t* start, uint64_t* end) {
  size_t colon = w.find(':');
  if (colon == std::string::npos) return false;
  auto seconds = [](const std::string& s, uint64_t* ns) {
    if (s.empty()) return false;
    char* e = nullptr;
    double v = std::strtod(s.c_str(), &e);
    if (*e || !std::isfinite(v) || v < 0 || v > 1e9) return false;
    *ns = static_cast<uint64_t>(std::llround(v * 1e9));
    return true;
  };
  return seconds(w.substr(0, colon), start) && seconds(w.substr(colon + 1), end) && *start <= *end;
}

}  // namespace

int cmd_timeline(const TimelineArgs& args) {
  TimelineOptions opt;
  opt.min_blocked_ns = static_cast<uint64_t>(std::llround(args.min_blocked_us * 1000.0));
  if (args.format == "json")
    opt.format = TimelineFormat::Json;
  else if (args.format == "perfetto")
    opt.format = TimelineFormat::Perfetto;
  else if (!args.format.empty()) {
    print_error(fmt::format("--format {}: expected json or perfetto", args.format));
    return kExitInvalid;
  } else if (ends_with(args.output, ".pftrace") || ends_with(args.output, ".perfetto-trace")) {
    opt.format = TimelineFormat::Perfetto;
  }
  if (!args.window.empty()) {
    if (!parse_window(args.window, &opt.window_start_ns, &opt.window_end_ns)) {
      print_error(fmt::format(
          "--window {}: expected T0:T1, seconds since the first process started, T0 <= T1 (e.g. 1.5:3)", args.window));
      return kExitInvalid;
    }
    opt.has_window = true;
  }
  if (!(args.max_size_mib >= 0) || !std::isfinite(args.max_size_mib)) {
    print_error("--max-size-mib: expected a non-negative number");
    return kExitInvalid;
  }
  opt.max_bytes = static_cast<uint64_t>(args.max_size_mib * 1024 * 1024);
  opt.findings_only = args.findings_only;

  TraceInputs inputs = expand_trace_inputs(args.inputs);
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  std::vector<UnreadableTrace> unreadable = inputs.unreadable;
  const diagnostics::Timer timer;
  TimelineStats stats = write_timeline(out->stream(), inputs.paths, opt, Limits{}, &unreadable);
  if (diagnostics::verbose())
    diagnostics::step(
        fmt::format("{} trace{}, {} records: {} events ({} GPU spans, {} flagged calls), {} bytes in {:.0f} ms",
                    stats.traces, stats.traces == 1 ? "" : "s", stats.records, stats.events, stats.gpu_spans,
                    stats.flagged, stats.bytes, timer.ms()));
  for (const auto& u : unreadable) print_error(fmt::format("{}: {}", u.trace, u.error));
  if (stats.host_functions_dropped)
    print_error(
        fmt::format("{} host functions are not on the stream tracks of the timeline: more than {} enqueues "
                    "were waiting for their run record (or runs for their enqueue) at once",
                    stats.host_functions_dropped, Limits{}.pending_callbacks));
  if (stats.too_large) {
    print_error(
        fmt::format("the timeline would be about {} ({} events), more than --max-size-mib {}: nothing was written; "
                    "narrow it with --window T0:T1 or --findings-only, "
                    "or raise --max-size-mib",
                    format_bytes(stats.estimated_bytes), stats.estimated_events, args.max_size_mib));
    return kExitInvalid;
  }
  return commit_from_traces(*out, stats.traces, unreadable.size(), "timeline");
}

}  // namespace asyncwatch
