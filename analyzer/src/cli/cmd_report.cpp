// asyncwatch report [--format text|json|sarif|codequality|html] [-o FILE] [--fail-on ...] TRACE_OR_DIR...
#include "findings/analysis.h"
#include "report/baseline.h"
#include "cli/commands.h"
#include "diagnostics.h"
#include "report/fingerprint.h"
#include "report/json_writer.h"
#include "report/output_file.h"
#include "report/printable.h"
#include "report/report_html.h"
#include "report/report_job.h"
#include "report/report_merge.h"
#include "report/reports.h"
#include "report/source_lines.h"
#include "symbols/debuginfo.h"
#include "symbols/symbolizer.h"
#include "read/trace_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

namespace asyncwatch {

Options ReportArgs::options() const {
  Options o;
  o.min_blocked_ns = static_cast<uint64_t>(std::llround(min_blocked_us * 1000.0));
  o.inline_htod_bytes = inline_htod_bytes;
  o.launch_queue_depth = launch_queue_depth;
  o.min_callback_ns = static_cast<uint64_t>(std::llround(min_callback_us * 1000.0));
  o.implicit_sync_min_count = implicit_sync_min_count;
  o.limits.stacks = max_stacks;
  o.limits.call_sites = max_call_sites;
  o.limits.debug_info_module_bytes = max_debug_info_mib << 20;
  o.limits.debug_info_total_bytes = max_debug_info_total_mib << 20;
  o.user_code = user_code;
  for (const auto& text : path_map) {
    PathMapping m;
    std::string error;
    if (parse_path_mapping(text, &m, &error)) o.path_map.push_back(m);  // add_report_options validated it
  }
  return o;
}

void print_error(const std::string& message) { std::cerr << "asyncwatch: " << printable(message) << '\n'; }

std::unique_ptr<OutputFile> open_output(const std::string& path) {
  try {
    return std::make_unique<OutputFile>(path);
  } catch (const OutputError& e) {
    print_error(e.what());
    return nullptr;
  }
}

int commit_from_traces(OutputFile& out, uint64_t traces_read, size_t unreadable, const char* what) {
  if (traces_read == 0) {
    if (unreadable != 1) print_error("no trace could be read");
    return kExitInvalid;
  }
  try {
    out.commit();
  } catch (const OutputError& e) {
    print_error(fmt::format("cannot write the {}: {}", what, e.what()));
    return kExitInvalid;
  }
  return unreadable == 0 ? kExitOk : kExitPartial;
}

namespace {

// "5ms", "250us", "1.5s", "100000ns": nanoseconds; throws std::invalid_argument.
uint64_t parse_duration_ns(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit == "ns" ? 1 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : -1;
  if (used == 0 || scale < 0 || !std::isfinite(v) || v < 0 || v * scale > 1e18)
    throw std::invalid_argument(fmt::format("'{}' is not a duration (a number and ns, us, ms or s: 5ms)", text));
  return static_cast<uint64_t>(std::llround(v * scale));
}

// Parses --fail-on; throws std::invalid_argument naming a bad item.
struct FailOn {
  bool any_severity = false;
  Severity min_severity = Severity::Error;
  std::vector<FindingId> ids;
  uint64_t min_blocked_ns = 0;  // blocked>=TIME: the finding's total blocked time
  bool blocked_given = false;
  uint64_t min_impact_ns = 0;   // impact>=TIME: what fixing it saves end to end
  double min_impact_share = 0;  // impact>=N%: the same as a share of the run
  bool impact_given = false;
  bool matches(const Finding& f) const {
    if (f.in_baseline || f.blocked.total() < min_blocked_ns) return false;
    if (f.impact_ns < min_impact_ns || f.impact_share + 1e-12 < min_impact_share) return false;
    if (!any_severity && ids.empty()) return blocked_given || impact_given;  // only thresholds: any finding
    if (any_severity && finding_severity(f) >= min_severity) return true;
    for (FindingId id : ids)
      if (id == f.id) return true;
    return false;
  }
  bool empty() const { return !any_severity && ids.empty() && !blocked_given && !impact_given; }
};

FailOn parse_fail_on(const std::string& text) {
  FailOn out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    FindingId id;
    if (item == "error" || item == "warning" || item == "note") {
      Severity s = item == "error" ? Severity::Error : item == "warning" ? Severity::Warning : Severity::Note;
      out.min_severity = out.any_severity ? std::min(out.min_severity, s) : s;
      out.any_severity = true;
    } else if (item.rfind("blocked>=", 0) == 0) {
      try {
        out.min_blocked_ns = std::max(out.min_blocked_ns, parse_duration_ns(item.substr(9)));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--fail-on {}: {}", item, e.what()));
      }
      out.blocked_given = true;
    } else if (item.rfind("impact>=", 0) == 0) {
      const std::string value = item.substr(8);
      if (!value.empty() && value.back() == '%') {
        size_t used = 0;
        double v = -1;
        try {
          v = std::stod(value.substr(0, value.size() - 1), &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used + 1 != value.size() || !std::isfinite(v) || v < 0 || v > 100)
          throw std::invalid_argument(fmt::format(
              "--fail-on {}: '{}' is not a share of the run (a number from 0 to 100 and %: 5%)", item, value));
        out.min_impact_share = std::max(out.min_impact_share, v / 100.0);
      } else {
        try {
          out.min_impact_ns = std::max(out.min_impact_ns, parse_duration_ns(value));
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(fmt::format("--fail-on {}: {} or a share of the run (5%)", item, e.what()));
        }
      }
      out.impact_given = true;
    } else if (parse_finding_id(item, &id)) {
      out.ids.push_back(id);
    } else {
      std::string known;
      for (int i = 0; i < static_cast<int>(FindingId::Count); ++i)
        known += std::string(i ? ", " : "") + finding_id_name(static_cast<FindingId>(i));
      throw std::invalid_argument(
          fmt::format("--fail-on: unknown finding id or severity '{}' (known: error, "
                      "warning, note, blocked>=TIME, impact>=TIME, impact>=N%, {})",
                      item, known));
    }
  }
  if (out.empty())
    throw std::invalid_argument(
        "--fail-on: give a finding id, a severity (error, warning, note), blocked>=TIME or impact>=TIME|N%");
  return out;
}

// A number check with a short message (CLI11's own prints its range: DBL_MAX in full).
CLI::Validator number_check(bool positive, bool integer) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        bool ok = used == text.size() && !text.empty() && std::isfinite(v) && (positive ? v > 0 : v >= 0) &&
                  (!integer || (text.find_first_not_of("0123456789") == std::string::npos && v < 1.8e19));
        if (ok) return {};
        return fmt::format("'{}' is not a{} {}", text, positive ? " positive" : " non-negative",
                           integer ? "whole number" : "number");
      },
      positive ? (integer ? "N>0" : "X>0") : (integer ? "N>=0" : "X>=0"));
}

// The CI options: gate (--baseline, --fail-min-blocked-us), selection (--pid, --rank,
// --rule, --range), presentation (--top, --stacks, --source-root) and --jobs.
void add_gate_options(CLI::App* app, ReportArgs& args) {
  app->add_option("--baseline", args.baseline,
                  "An earlier report (asyncwatch JSON or SARIF): its findings (by fingerprint) are marked and do "
                  "not count for --fail-on");
  app->add_option("--fail-min-blocked-us", args.fail_min_blocked_us,
                  "A finding counts for --fail-on only when it blocked this long in total (as blocked>=TIME)")
      ->check(number_check(false, false));
  app->add_option("--top", args.top,
                  "Show only the first N findings of the ranking (most impact first; the gate sees all)")
      ->check(number_check(true, true));
  app->add_option("--stacks", args.stacks, "Stacks in text: the program's own frames (user) or every frame (full)")
      ->check(CLI::IsMember({"user", "full"}))
      ->capture_default_str();
  app->add_option("--source-root", args.source_root,
                  "Source text is read only below this directory (the fingerprint's source line), and SARIF "
                  "paths are relative to it (uriBaseId SRCROOT); default: the git top level of the current "
                  "directory (SARIF paths then absolute outside a git checkout; source read below the current "
                  "directory)");
  app->add_option("--pid", args.pids, "Report only the processes with this pid (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--rank", args.ranks,
                  "Report only the processes of this rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID at "
                  "start; repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--rule", args.rules, "Report only the findings of this rule id (repeatable)")
      ->check(CLI::Validator(
          [](std::string& text) {
            FindingId id;
            return parse_finding_id(text, &id) ? std::string() : fmt::format("unknown finding id '{}'", text);
          },
          "ID"))
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--range", args.ranges,
                  "Report only the findings with calls made inside the NVTX range of this name (repeatable)")
      ->check(CLI::Validator(
          [](std::string& text) { return text.empty() ? std::string("an empty range name") : std::string(); }, "NAME"))
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--jobs,-j", args.jobs, "Traces read at once (default: one per core)")
      ->check(number_check(true, true));
}

}  // namespace

void add_report_options(CLI::App* app, ReportArgs& args, bool with_output) {
  app->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif", "codequality", "html"}))
      ->capture_default_str();
  if (with_output)
    app->add_option("-o,--output", args.output,
                    "Write the report to FILE (\"-\": standard output, the default; a regular file is replaced "
                    "atomically, a device, FIFO or socket written in place)");
  app->add_option("--fail-on", args.fail_on,
                  "Exit with status 1 (--error-exitcode) when a finding with one of these ids exists (comma "
                  "separated), or any finding "
                  "of at least this severity (error, warning, note); blocked>=TIME (5ms, 200us): only findings "
                  "that blocked this long in total; impact>=TIME or impact>=N% (5%): only findings whose fix saves "
                  "this much of the run end to end; findings in --baseline do not count")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              parse_fail_on(text);
              return std::string();
            } catch (const std::invalid_argument& e) {
              std::string what = e.what();  // CLI11 names the option itself
              return what.rfind("--fail-on: ", 0) == 0 ? what.substr(11) : what;
            }
          },
          "ID|SEVERITY|blocked>=TIME|impact>=TIME|impact>=N%,..."));
  app->add_option("--error-exitcode", args.error_exitcode,
                  "The exit status when a --fail-on finding exists (so that a gate is told from a program that "
                  "exits 1)")
      ->check(CLI::Range(1, 255))
      ->capture_default_str();
  app->add_option("--min-blocked-us", args.min_blocked_us,
                  "Synchronous copies (pageable, host to host) below this are notes, at or above it warnings; other "
                  "calls that blocked less are not flagged; explicit-sync groups need this much in total")
      ->check(number_check(false, false))
      ->capture_default_str();
  app->add_option("--inline-htod-bytes", args.inline_htod_bytes,
                  "Pageable host-to-device copies up to this size are done inline by the driver and ignored")
      ->check(number_check(false, true))
      ->capture_default_str();
  app->add_option("--launch-queue-depth", args.launch_queue_depth,
                  "Launches outstanding on a stream (since it was last idle) that count as a full launch queue")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_option("--min-callback-us", args.min_callback_us,
                  "Host-function sites whose function ran this long are warnings (the others notes)")
      ->check(number_check(false, false))
      ->capture_default_str();
  app->add_option("--implicit-sync-min-count", args.implicit_sync_min_count,
                  "Calls of cudaMalloc/cudaFree/... at one known call site, repeating an earlier one (same size or "
                  "address), that count as a loop")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_option("--user-code", args.user_code,
                  "Frames whose module path, module file name or source file match this pattern (fnmatch: "
                  "'*/mylib/*', 'libmine.so*') are the program's own code, where call sites are reported; "
                  "'!PATTERN' marks library code instead; repeatable, the last match decides (docs/findings.md)")
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--path-map", args.path_map,
                  "FROM=TO: read the traced modules whose path starts with FROM from TO instead (traces from "
                  "another machine); repeatable")
      ->check(CLI::Validator(
          [](std::string& text) {
            PathMapping m;
            std::string error;
            return parse_path_mapping(text, &m, &error) ? std::string() : error;
          },
          "FROM=TO"))
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  app->add_option("--color,--colour", args.colour, "Colour in text output")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app->add_option("--max-stacks", args.max_stacks,
                  "A trace with more distinct call stacks than this is not read (bounds the analyzer's memory)")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_option("--max-call-sites", args.max_call_sites,
                  "A trace with more distinct findings than this (per rule, API, kernel and call stack, before "
                  "merging by source line) is not read (bounds the analyzer's memory)")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_option("--max-debug-info-mib", args.max_debug_info_mib,
                  "A module whose debug information and symbols would take libdw more memory than this (estimated "
                  "before reading) is not used for symbols (bounds the analyzer's memory)")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_option("--max-debug-info-total-mib", args.max_debug_info_total_mib,
                  "The same for all the modules of a report together, whatever the number of traces")
      ->check(number_check(true, true))
      ->capture_default_str();
  app->add_flag("--debuginfod", args.debuginfod,
                "Ask the debuginfod servers of DEBUGINFOD_URLS for debug information not found locally (off by "
                "default: a trace names the modules)");
  app->add_flag("--allow-foreign-traces", args.allow_foreign_traces,
                "Read the traces of a directory that another user owns (skipped by default, each named)");
  add_gate_options(app, args);
}

bool validate_report_args(const ReportArgs& args) {
  try {
    if (!args.fail_on.empty()) parse_fail_on(args.fail_on);
    if (!args.baseline.empty()) read_baseline(args.baseline);
  } catch (const std::exception& e) {
    print_error(e.what());
    return false;
  }
  return true;
}

namespace {
// run's own child: the exit status (or signal) that waitpid saw, in the last trace of its pid (an
// exec chain keeps the pid; the last image is the one that exited).
void apply_program_exit(Report& report, const ProgramExit& e) {
  ProcessSummary* last = nullptr;
  for (auto& p : report.processes)
    if (p.pid == e.pid && (!last || p.start_monotonic_ns >= last->start_monotonic_ns)) last = &p;
  if (!last) return;
  last->exit_status = e.exit_status;
  last->signal = e.signal;
}
}  // namespace

int produce_report(const ReportArgs& args, const std::vector<std::string>& paths,
                   const std::vector<UnreadableTrace>& unreadable, const ProgramExit* program) {
  FailOn fail_on;
  std::set<std::string> baseline;
  try {
    if (!args.fail_on.empty()) fail_on = parse_fail_on(args.fail_on);
    if (!args.baseline.empty()) baseline = read_baseline(args.baseline);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  if (args.fail_min_blocked_us > 0)
    fail_on.min_blocked_ns =
        std::max(fail_on.min_blocked_ns, static_cast<uint64_t>(std::llround(args.fail_min_blocked_us * 1000.0)));
  set_use_debuginfod(args.debuginfod);
  // Opened first: a path that cannot be written is said before minutes of analysis. Until
  // commit(), a regular file is untouched (output_file.h).
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  ReportSelection selection;
  selection.pids = args.pids;
  selection.ranks = args.ranks;
  selection.ranges = args.ranges;
  for (const auto& r : args.rules) {
    FindingId id;
    if (parse_finding_id(r, &id)) selection.rules.push_back(id);
  }
  const bool html = args.format == "html";
  std::vector<TraceMarks> marks;  // the HTML report's timeline colours the flagged calls
  Report report =
      analyze_job(unique_traces(paths), args.options(), unreadable, selection, args.jobs, html ? &marks : nullptr);
  for (const auto& u : report.unreadable) print_error(fmt::format("{}: {}", u.trace, u.error));
  if (report.processes.empty()) {
    if (report.unreadable.empty() && !paths.empty())
      print_error("no process matches --pid/--rank");
    else if (report.unreadable.size() != 1)
      print_error("no trace could be read");
    return kExitInvalid;
  }
  if (program) apply_program_exit(report, *program);
  report.source_root = source_root(args.source_root);
  report.baseline = args.baseline;
  report.full_stacks = args.stacks == "full";
  // Each source file is read once, for all of its lines, and only below the root.
  SourceLines lines(source_read_root(report.source_root));
  for (const auto& f : report.findings)
    if (f.call_site_known) lines.want(f.call_site.file, f.call_site.line);
  for (auto& f : report.findings) {
    f.fingerprint = finding_fingerprint(f, report.source_root, &lines);
    f.in_baseline = baseline.count(f.fingerprint) > 0;
  }
  // The gate sees every finding; --top only shortens what is written.
  bool failed = false;
  if (!fail_on.empty())
    for (const auto& f : report.findings)
      if (fail_on.matches(f)) failed = true;
  if (args.top && report.findings.size() > args.top) {
    report.findings_not_shown = report.findings.size() - args.top;
    for (size_t i = args.top; i < report.findings.size(); ++i)
      report.blocked_ns_not_shown = saturating_add(report.blocked_ns_not_shown, report.findings[i].blocked.total());
    report.findings.resize(args.top);
  }

  const diagnostics::Timer write_timer;
  try {
    if (args.format == "json" || args.format == "sarif" || args.format == "codequality") {
      // Written as it goes; names from the trace may be any bytes: invalid UTF-8 becomes U+FFFD.
      JsonWriter w(out->stream());
      if (args.format == "json")
        write_report_json(w, report);
      else if (args.format == "sarif")
        write_report_sarif(w, report);
      else
        write_report_codequality(w, report);
      w.flush();
      std::fputc('\n', out->stream());
    } else if (html) {
      // The timeline picture walks each trace once more (report_html_timeline.h).
      std::vector<ProcessPicture> pictures;
      for (const auto& p : report.processes) {
        const TraceMarks* m = nullptr;
        for (const auto& tm : marks)
          if (tm.trace == p.trace) m = &tm;
        pictures.push_back(process_picture(p, m, report));
      }
      write_report_html(out->ostream(), report, pictures);
    } else {
      TextStyle style;
      bool tty = out->mode() == OutputFile::Mode::Stdout && isatty(STDOUT_FILENO);
      const char* no_colour = std::getenv("NO_COLOR");
      style.colour = args.colour == "always" || (args.colour == "auto" && tty && !(no_colour && *no_colour));
      write_report_text(out->ostream(), report, style);
    }
    out->commit();
  } catch (const OutputError& e) {
    print_error(fmt::format("cannot write the report: {}", e.what()));
    return kExitInvalid;
  }
  if (diagnostics::verbose())
    diagnostics::step(fmt::format("{} report of {} finding{} written to {} in {:.0f} ms", args.format,
                                  report.findings.size(), report.findings.size() == 1 ? "" : "s",
                                  args.output.empty() || args.output == "-" ? "standard output" : args.output,
                                  write_timer.ms()));
  bool no_device = false;
  for (const auto& p : report.processes)
    if (p.no_usable_device()) {
      no_device = true;
      print_error(
          fmt::format("pid {}: no CUDA call succeeded ({} of {} failed with error {}: no usable CUDA driver "
                      "or device); the report is empty for that reason, not because the program is fine. "
                      "On a machine without a GPU, use `asyncwatch run --sim`",
                      p.pid, p.cuda_calls_no_device, p.cuda_calls, p.no_device_result));
    }
  if (failed) return args.error_exitcode;
  if (no_device) return kExitNoDevice;
  return report.unreadable.empty() ? kExitOk : kExitPartial;
}

namespace {
bool is_json_name(const std::string& p) { return p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0; }

// `report a.json b.json ...`: merged JSON reports (report_merge.h); the gate as for traces.
int merge_reports(const ReportArgs& args) {
  if (args.format != "json") {
    print_error("merging JSON reports writes a JSON report: add --format json");
    return kExitInvalid;
  }
  FailOn fail_on;
  std::set<std::string> baseline;
  nlohmann::ordered_json merged;
  try {
    if (!args.fail_on.empty()) fail_on = parse_fail_on(args.fail_on);
    if (!args.baseline.empty()) baseline = read_baseline(args.baseline);
    merged = merge_json_reports(args.inputs);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  if (args.fail_min_blocked_us > 0)
    fail_on.min_blocked_ns =
        std::max(fail_on.min_blocked_ns, static_cast<uint64_t>(std::llround(args.fail_min_blocked_us * 1000.0)));
  bool failed = false;
  size_t known = 0;
  for (auto& f : merged["findings"]) {
    Finding probe;
    if (!parse_finding_id(f.value("id", ""), &probe.id)) continue;
    probe.blocked.add(f["blocked_ns"].value("total", uint64_t{0}));
    probe.impact_ns = f.value("impact_ns", uint64_t{0});
    probe.impact_share = f.value("impact_share", 0.0);
    probe.in_baseline = baseline.count(f["fingerprint"].get<std::string>()) > 0;
    if (!args.baseline.empty()) f["in_baseline"] = probe.in_baseline;
    known += probe.in_baseline;
    if (!fail_on.empty() && fail_on.matches(probe)) failed = true;
  }
  if (!args.baseline.empty()) merged["summary"]["findings_in_baseline"] = known;
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  try {
    std::string text = merged.dump(2);
    std::fwrite(text.data(), 1, text.size(), out->stream());
    std::fputc('\n', out->stream());
    out->commit();
  } catch (const OutputError& e) {
    print_error(fmt::format("cannot write the report: {}", e.what()));
    return kExitInvalid;
  }
  bool no_device = false;
  for (const auto& p : merged["processes"]) no_device |= p.value("no_usable_device", false);
  if (failed) return args.error_exitcode;
  if (no_device) return kExitNoDevice;
  return merged["unreadable_traces"].empty() ? kExitOk : kExitPartial;
}
}  // namespace

int cmd_report(const ReportArgs& args) {
  size_t json_inputs = static_cast<size_t>(std::count_if(args.inputs.begin(), args.inputs.end(), is_json_name));
  if (json_inputs == args.inputs.size()) return merge_reports(args);
  if (json_inputs) {
    print_error("give either traces or JSON reports (*.json) to merge, not both");
    return kExitInvalid;
  }
  TraceInputs inputs = expand_trace_inputs(args.inputs, args.allow_foreign_traces);
  say_foreign_traces(inputs.foreign);
  return produce_report(args, inputs.paths, inputs.unreadable);
}

}  // namespace asyncwatch
