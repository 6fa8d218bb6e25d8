// Reading the traces of a job (one or many processes) into one report: a trace named twice is
// read once, traces are read in parallel and merged in a fixed order (the same report as one by
// one), and processes and findings can be selected (--pid, --rank, --rule).
#pragma once

#include "findings/analysis.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace asyncwatch {

class PictureWalk;  // report_html_timeline.h

// `paths` without the ones that name a file already named (same device and inode: `d d/*.awtrace`,
// a symlink), in their first position. Paths that cannot be stat()ed stay (their error comes later).
std::vector<std::string> unique_traces(const std::vector<std::string>& paths);

struct ReportSelection {
  std::vector<uint64_t> pids;       // processes by pid (empty: all)
  std::vector<int64_t> ranks;       // processes by rank (empty: all)
  std::vector<FindingId> rules;     // findings by rule (empty: all)
  std::vector<std::string> ranges;  // findings with calls in one of these NVTX ranges (empty: all)
  bool keeps(const ProcessSummary& p) const;
};

// The flagged calls of one trace, for the HTML report's timeline (report_html_timeline.h): each by
// its thread and start time; CallMark::finding indexes `keys`, the Finding::key of its group (the
// report's findings are merged by that key).
struct TraceMarks {
  std::string trace;
  std::vector<CallMark> marks;
  std::vector<std::string> keys;
  // The trace as the analysis left it, indexed by its pass (null in a report of more than kKeptTraces
  // traces: each kept one holds its file, its mapping and one of the reader's 256 SIGBUS-guard slots,
  // read/mapping_guard.h): the picture walks it without reading it once more to index it.
  std::shared_ptr<TraceFile> file;
  // The picture's groups of calls, made by the analysis' own walk when the trace is kept (one pass:
  // report_html_timeline.h), null otherwise.
  std::shared_ptr<PictureWalk> picture;
};
inline constexpr size_t kKeptTraces = 16;

// analyze_traces with `jobs` traces read at once (0: one per core, at most one per trace); the
// processes not selected are left out before the findings are merged. The result does not depend
// on `jobs`. `marks` (optional): the flagged calls of every trace read, in the order of `paths`.
Report analyze_job(const std::vector<std::string>& paths, const Options& options,
                   std::vector<UnreadableTrace> unreadable, const ReportSelection& selection, unsigned jobs,
                   std::vector<TraceMarks>* marks = nullptr);

}  // namespace asyncwatch
