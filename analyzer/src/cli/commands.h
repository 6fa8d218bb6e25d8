// One function per subcommand (cmd_*.cpp), registered with the CLI in main.cpp.
#pragma once

#include "findings/analysis.h"
#include "options.h"
#include "report/output_file.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

namespace asyncwatch {

// Exit statuses (docs/contracts.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // a --fail-on finding exists (wins over kExitPartial); --error-exitcode N
inline constexpr int kExitInvalid = 2;   // invalid input or usage; no trace could be read; the output failed
inline constexpr int kExitPartial = 3;   // written, but some traces could not be read (each named)
inline constexpr int kExitNoDevice = 4;  // a traced process had no usable CUDA driver or device (its calls all failed)
// kExitAnalysisFailed = 5 (options.h): the analysis failed (out of memory)

struct ReportArgs {
  std::string format = "text";
  std::string output;                  // "" or "-" = stdout (output_file.h)
  std::string fail_on;                 // ids or a severity, comma separated
  int error_exitcode = kExitFindings;  // --error-exitcode N: the status of a --fail-on hit
  // The thresholds (options.h, Thresholds: the defaults), times in microseconds.
  double min_blocked_us = static_cast<double>(kDefaultThresholds.min_blocked_ns) / 1e3;
  uint64_t inline_htod_bytes = kDefaultThresholds.inline_htod_bytes;
  uint64_t launch_queue_depth = kDefaultThresholds.launch_queue_depth;
  double min_callback_us = static_cast<double>(kDefaultThresholds.min_callback_ns) / 1e3;
  uint64_t implicit_sync_min_count = kDefaultThresholds.implicit_sync_min_count;
  std::string colour = "auto";
  uint64_t max_stacks = Limits{}.stacks;
  uint64_t max_call_sites = Limits{}.call_sites;
  std::vector<std::string> user_code;  // --user-code PATTERN (repeatable)
  std::vector<std::string> path_map;   // --path-map FROM=TO (repeatable, validated by the CLI)
  std::vector<std::string> inputs;
  // Gates, filters and presentation (docs/ci.md, docs/configuration.md).
  std::string baseline;             // --baseline OLD.json: only findings not in it count for --fail-on
  double fail_min_blocked_us = 0;   // --fail-min-blocked-us: a --fail-on finding must block this long in total
  uint64_t top = 0;                 // --top N: the N costliest findings (0: all)
  std::string stacks = "user";      // --stacks user|full
  std::string source_root;          // --source-root DIR (SARIF), "" = git top level of the cwd
  std::vector<uint64_t> pids;       // --pid
  std::vector<int64_t> ranks;       // --rank
  std::vector<std::string> rules;   // --rule
  std::vector<std::string> ranges;  // --range
  unsigned jobs = 0;                // --jobs N: traces read at once (0: one per core)
  // What a trace may make the analyzer do (docs/contracts.md, "Security").
  uint64_t max_debug_info_mib = Limits{}.debug_info_module_bytes >> 20;  // --max-debug-info-mib
  uint64_t max_debug_info_total_mib = Limits{}.debug_info_total_bytes >> 20;
  bool debuginfod = false;            // --debuginfod: ask DEBUGINFOD_URLS' servers
  bool allow_foreign_traces = false;  // --allow-foreign-traces: read other users' traces in a directory

  Options options() const;
};

// How run's own child ended (waitpid): its trace gets this status (a process that returns from
// main, or is killed, cannot always write it itself).
struct ProgramExit {
  uint64_t pid = 0;
  int exit_status = -1;  // WEXITSTATUS, -1 when killed
  int signal = 0;        // WTERMSIG, 0 when it exited
};

// Adds the options shared by `report` and `run` (`with_output`: -o FILE).
void add_report_options(CLI::App* app, ReportArgs& args, bool with_output);

// Writes the report for `paths` and returns the exit status (kExit*). `unreadable`: inputs that
// named no trace (expand_trace_inputs), reported with the traces that cannot be read.
int produce_report(const ReportArgs& args, const std::vector<std::string>& paths,
                   const std::vector<UnreadableTrace>& unreadable = {}, const ProgramExit* program = nullptr);
// Checks what the report will need before anything runs (--fail-on, --baseline): false, the error
// printed, when it cannot be used.
bool validate_report_args(const ReportArgs& args);

// Prints "asyncwatch: MESSAGE" on stderr, MESSAGE made printable (it may hold names from a trace
// or a directory listing).
void print_error(const std::string& message);
// The output of a command (output_file.h), opened before any work; null (the error printed) when
// it cannot be.
std::unique_ptr<OutputFile> open_output(const std::string& path);
// The end of a command that writes one file from traces (export, timeline): with no trace read the
// output is discarded (nothing replaces a regular file) and the status is invalid; else the output
// is committed ("cannot write the WHAT" when it cannot be), partial when some trace was unreadable.
int commit_from_traces(OutputFile& out, uint64_t traces_read, size_t unreadable, const char* what);

int cmd_report(const ReportArgs& args);
int cmd_dump(const std::string& trace);
struct TimelineArgs {
  std::string output;  // "" or "-" = stdout
  std::vector<std::string> inputs;
  double min_blocked_us = static_cast<double>(kDefaultThresholds.min_blocked_ns) / 1e3;  // the category "blocked"
  std::string format;  // json, perfetto; "" = from the output's name (.pftrace, .perfetto-trace), else json
  std::string window;  // "T0:T1" in seconds since the earliest process start; "" = all
  bool findings_only = false;
  double max_size_mib = 1024;  // refuse (and say the expected size) above this; 0 = no limit
};
int cmd_timeline(const TimelineArgs& args);
struct ExportArgs {
  std::string format = "csv";
  std::string output;  // "" or "-" = stdout
  std::vector<std::string> inputs;
};
int cmd_export(const ExportArgs& args);
struct RunArgs {
  bool sim = false;
  bool gpu_times = false;   // ASYNCWATCH_GPU_TIMES=1 for the program
  bool summary = false;     // ASYNCWATCH_SUMMARY=1 for the program
  std::string trace_limit;  // ASYNCWATCH_TRACE_LIMIT for the program ("": not set): the flight recorder
  // ASYNCWATCH_CAPTURE_RANGE, ASYNCWATCH_DELAY, ASYNCWATCH_DURATION for the program ("": not set).
  std::string capture_range;
  std::string delay;
  std::string duration;
  std::string output_dir;
  ReportArgs report;
  std::vector<std::string> command;
};
int cmd_run(const RunArgs& args);

}  // namespace asyncwatch
