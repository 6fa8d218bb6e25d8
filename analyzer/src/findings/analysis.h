// The report model and the analysis that builds it: each trace is streamed once in time
// order through the finding rules; groups are kept per call site (memory grows with call
// sites, streams and threads, not with records), then merged across processes.
#pragma once

#include "findings/finding.h"
#include "timeline/gpu_overlap.h"
#include "options.h"

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

namespace asyncwatch {

struct ProcessSummary {
  uint64_t pid = 0;
  uint64_t ppid = 0;
  uint64_t parent_pid_if_forked = 0;
  int64_t rank = -1;        // FileHeader::rank, -1 when the trace has none
  std::string rank_source;  // the variable it came from ("" when none)
  std::string executable;
  std::string command_line;
  std::string hostname;
  std::string trace;
  std::string cuda_env;
  bool closed_cleanly = false;
  int32_t exit_status = -1;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t wall_ns = 0;
  std::string device;  // "" when the trace has no DeviceInfo record
  bool simulated = false;
  uint64_t records = 0;
  uint64_t records_lost = 0;
  // Where and why records were lost: one per stretch of losses of a thread (the trace's in-band
  // LostRecords, bounded by the reader); records_lost may be larger (the header's total).
  struct LostStretch {
    uint32_t tid = 0;
    uint64_t count = 0;
    uint64_t first_ns = 0, last_ns = 0;  // since the process started
    std::string reason;                  // trace::kLostReasonNames
  };
  std::vector<LostStretch> lost;
  uint64_t paused_ns = 0;  // recording paused by the application (control API), within wall_ns
  uint64_t pauses = 0;
  uint64_t blocked_ns_total = 0;  // time the flagged async calls blocked (async_calls_blocking)
  uint64_t async_calls = 0;
  uint64_t async_calls_async = 0;
  uint64_t async_calls_blocking = 0;
  // CUDA calls recorded, those that succeeded and those that failed because there is no usable
  // driver or device (no_usable_device_error): none succeeded and some failed so = the gate's
  // "no usable device" (docs/ci.md).
  uint64_t cuda_calls = 0;
  uint64_t cuda_calls_ok = 0;
  uint64_t cuda_calls_no_device = 0;
  int32_t no_device_result = 0;  // the first such error code
  int32_t signal = 0;            // the signal that ended it, when known (run's own child), else 0
  std::vector<std::string> notes;
  bool no_usable_device() const { return cuda_calls_no_device > 0 && cuda_calls_ok == 0; }
  // A flight-recorder trace (ASYNCWATCH_TRACE_LIMIT): the window its raw records cover (times since
  // the process started) and the calls before it, in the summaries only.
  struct FlightWindow {
    bool present = false;
    uint64_t ring_bytes = 0;
    uint64_t first_ns = 0, last_ns = 0;
    uint64_t calls = 0;         // calls with a raw record in the window
    uint64_t calls_before = 0;  // the whole run's calls (cuda_calls) less those
    uint64_t blocks_reused = 0;
    uint64_t copies_missed = 0;
  };
  FlightWindow flight;
  // ASYNCWATCH_GPU_TIMES traces: the GPU overlap figures per stream (timeline/gpu_overlap.h).
  bool gpu_times = false;
  std::vector<StreamOverlap> gpu_overlap;
};

// A CUresult / cudaError_t that says there is no usable driver or device (35 insufficient driver,
// 100 no device, 3 not initialized, 34 stub library, 46 devices unavailable, 802-804 system not
// ready / driver mismatch / compat not supported): the same numbers in both enums.
bool no_usable_device_error(int32_t result);

struct Summary {
  uint64_t async_calls = 0;
  uint64_t async_calls_async = 0;
  uint64_t async_calls_blocking = 0;
  uint64_t blocked_ns_total = 0;
  uint64_t findings = 0;
};

// A trace (or an input naming traces) that could not be read, and why.
struct UnreadableTrace {
  std::string trace;  // the path as named (a trace, or a directory or file given on the command line)
  std::string error;  // what is wrong, without the path
};

struct Report {
  Options options;
  std::vector<ProcessSummary> processes;
  std::vector<UnreadableTrace> unreadable;  // reported too, each with its error
  Summary summary;
  std::vector<Finding> findings;  // ranked: most blocked time first
  // Set by the report command (cmd_report.cpp), not by the analysis:
  std::string source_root;            // paths in SARIF are relative to it ("" none: absolute)
  std::string baseline;               // --baseline file ("" none); Finding::in_baseline says which are in it
  uint64_t findings_not_shown = 0;    // --top left these out (the costliest are shown)
  uint64_t blocked_ns_not_shown = 0;  // their blocked time (shares stay shares of all findings)
  bool full_stacks = false;           // --stacks full
};

// Files named on the command line, and the *.awtrace files of directories (sorted). An input
// that names no trace (missing, unreadable, a directory without traces) is in `unreadable`. A
// trace in a directory that another user owns (not the effective uid) is left out unless
// `allow_foreign` (anyone who may write to a shared directory could have put it there), and
// named in `foreign` ("PATH (uid N)"); a file named on the command line is read whoever owns it.
struct TraceInputs {
  std::vector<std::string> paths;
  std::vector<UnreadableTrace> unreadable;
  std::vector<std::string> foreign;
};
TraceInputs expand_trace_inputs(const std::vector<std::string>& inputs, bool allow_foreign = true);
// True when the file `st` describes belongs to another user than the effective one.
bool foreign_trace(const struct stat& st);
// Says on stderr which traces were skipped as another user's (nothing when none).
void say_foreign_traces(const std::vector<std::string>& foreign);

// The error of a TraceError (or any exception) about `path`, without the "path: " prefix.
UnreadableTrace unreadable_trace(const std::string& path, const std::exception& e);

// Analyzes one trace: the process summary and its findings (unfiltered, unranked).
struct ProcessResult {
  ProcessSummary process;
  std::vector<Finding> findings;
};
// `marks` (the timeline): each flagged call, by its thread and start time (a host function's
// run: the run's), with the index of its finding in ProcessResult::findings; at most kMaxCallMarks.
struct CallMark {
  uint64_t start_ns;
  uint32_t tid;
  uint32_t finding;  // (16 bytes, not 24 with the time between the two: the HTML report's peak RSS on
                     // a trace with a million flagged calls, docs/performance.md)
};
inline constexpr size_t kMaxCallMarks = 16u << 20;
ProcessResult analyze_trace(const std::string& path, const Options& options, std::vector<CallMark>* marks = nullptr);
// The same on a trace already open and not yet walked: its one validating pass (stream_merged) indexes
// it too, so that a caller that walks it again (the timeline) does not read it once more to index it.
// (A consumer of the same walk, the HTML report's picture: analyze_trace_with, process_analyzer.h.)
class TraceFile;
ProcessResult analyze_trace(TraceFile& trace, const Options& options, std::vector<CallMark>* marks = nullptr);

// Merges processes into one ranked report, applying the group-level thresholds.
Report build_report(std::vector<ProcessResult> results, const Options& options);

// analyze_trace on each path + build_report. A trace that cannot be read (TraceError, or not
// enough memory) goes to Report::unreadable, after `unreadable` (the inputs' own); the others
// are reported.
Report analyze_traces(const std::vector<std::string>& paths, const Options& options,
                      std::vector<UnreadableTrace> unreadable = {});

// A kernel's name for messages: demangled, without argument list and return type.
std::string kernel_display_name(const std::string& mangled);

// "NAME" from "A=1;NAME=value;..." ("" when absent).
std::string cuda_env_value(const std::string& cuda_env, const std::string& name);

}  // namespace asyncwatch
