// asyncwatch report [--format text|json|sarif] [-o FILE] [--fail-on ...] TRACE_OR_DIR...
#include "analysis.h"
#include "commands.h"
#include "json_writer.h"
#include "output_file.h"
#include "printable.h"
#include "reports.h"
#include "symbolizer.h"
#include "trace_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <sstream>

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

void add_report_options(CLI::App* app, ReportArgs& args, bool with_output) {
  app->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->capture_default_str();
  if (with_output)
    app->add_option("-o,--output", args.output,
                    "Write the report to FILE (\"-\": standard output, the default; a regular file is replaced "
                    "atomically, a device, FIFO or socket written in place)");
  app->add_option("--fail-on", args.fail_on,
                  "Exit with status 1 when a finding with one of these ids exists (comma separated), or any finding "
                  "of at least this severity (error, warning, note)");
  app->add_option("--min-blocked-us", args.min_blocked_us,
                  "Synchronous copies (pageable, host to host) below this are notes, at or above it warnings; other "
                  "calls that blocked less are not flagged; explicit-sync groups need this much in total")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--inline-htod-bytes", args.inline_htod_bytes,
                  "Pageable host-to-device copies up to this size are done inline by the driver and ignored")
      ->capture_default_str();
  app->add_option("--launch-queue-depth", args.launch_queue_depth,
                  "Launches outstanding on a stream (since it was last idle) that count as a full launch queue")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--min-callback-us", args.min_callback_us,
                  "Host-function sites whose function ran this long are warnings (the others notes)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--implicit-sync-min-count", args.implicit_sync_min_count,
                  "Calls of cudaMalloc/cudaFree/... at one known call site, repeating an earlier one (same size or "
                  "address), that count as a loop")
      ->check(CLI::PositiveNumber)
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
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-call-sites", args.max_call_sites,
                  "A trace with more distinct findings than this (per rule, API, kernel and call stack, before "
                  "merging by source line) is not read (bounds the analyzer's memory)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

namespace {

// Parses --fail-on; throws std::invalid_argument naming a bad item.
struct FailOn {
  bool any_severity = false;
  Severity min_severity = Severity::Error;
  std::vector<FindingId> ids;
  bool matches(const Finding& f) const {
    if (any_severity && finding_severity(f) >= min_severity) return true;
    for (FindingId id : ids)
      if (id == f.id) return true;
    return false;
  }
  bool empty() const { return !any_severity && ids.empty(); }
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
    } else if (parse_finding_id(item, &id)) {
      out.ids.push_back(id);
    } else {
      std::string known;
      for (int i = 0; i < static_cast<int>(FindingId::Count); ++i)
        known += std::string(i ? ", " : "") + finding_id_name(static_cast<FindingId>(i));
      throw std::invalid_argument(fmt::format("--fail-on: unknown finding id or severity '{}' (known: error, "
                                              "warning, note, {})",
                                              item, known));
    }
  }
  return out;
}

}  // namespace

int produce_report(const ReportArgs& args, const std::vector<std::string>& paths,
                   const std::vector<UnreadableTrace>& unreadable) {
  FailOn fail_on;
  try {
    fail_on = parse_fail_on(args.fail_on);
  } catch (const std::invalid_argument& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  // Opened first: a path that cannot be written is said before minutes of analysis. Until
  // commit(), a regular file is untouched (output_file.h).
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  Report report = analyze_traces(paths, args.options(), unreadable);
  for (const auto& u : report.unreadable) print_error(fmt::format("{}: {}", u.trace, u.error));
  if (report.processes.empty()) {
    if (report.unreadable.size() != 1) print_error("no trace could be read");
    return kExitInvalid;
  }

  try {
    if (args.format == "json" || args.format == "sarif") {
      // Written as it goes; names from the trace may be any bytes: invalid UTF-8 becomes U+FFFD.
      JsonWriter w(out->stream());
      if (args.format == "json") write_report_json(w, report);
      else write_report_sarif(w, report);
      w.flush();
      std::fputc('\n', out->stream());
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
  if (!fail_on.empty())
    for (const auto& f : report.findings)
      if (fail_on.matches(f)) return kExitFindings;
  return report.unreadable.empty() ? kExitOk : kExitPartial;
}

int cmd_report(const ReportArgs& args) {
  TraceInputs inputs = expand_trace_inputs(args.inputs);
  return produce_report(args, inputs.paths, inputs.unreadable);
}

}  // namespace asyncwatch
