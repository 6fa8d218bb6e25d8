// The timeline of one or more traces, for Perfetto UI (ui.perfetto.dev): per process, one track per
// host thread with a slice per intercepted call (named as in the report: cudaLaunchKernel, not
// __cudaLaunchKernel), one track per stream with what ran on it (host functions; with
// ASYNCWATCH_GPU_TIMES=1 every timed copy, memset, kernel and host function where it ran on the
// device), a flow from each call to its GPU work, and the calls of every finding marked (category
// "flagged"; rule, message, call site and fix in the args). Written as Chrome trace event JSON or
// as a binary Perfetto trace (protobuf TrackEvent, timeline/perfetto_writer.h), optionally limited
// to a time window or to the flagged calls, and never larger than a limit. docs/timeline.md.
#pragma once

#include "findings/analysis.h"
#include "options.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace asyncwatch {

enum class TimelineFormat : uint8_t { Json, Perfetto };

struct TimelineOptions {
  TimelineFormat format = TimelineFormat::Json;
  uint64_t min_blocked_ns =
      kDefaultThresholds.min_blocked_ns;  // calls blocked this long also get the category "blocked"
  bool findings_only = false;             // only the flagged calls and their GPU work
  bool has_window = false;                // only what overlaps [window_start_ns, window_end_ns], in ns since
  uint64_t window_start_ns = 0;           // the earliest process start of the traces
  uint64_t window_end_ns = 0;
  uint64_t max_bytes = 0;     // 0: no limit; else nothing is written when the estimate exceeds it
  bool mark_findings = true;  // analyze each trace first (one more pass) to mark the flagged calls
};

struct TimelineStats {
  uint64_t traces = 0;  // exported
  uint64_t records = 0;
  uint64_t events = 0;
  uint64_t gpu_spans = 0;  // device intervals shown
  uint64_t flows = 0;      // call -> GPU work
  uint64_t flagged = 0;    // calls marked with their finding
  uint64_t bytes = 0;      // written
  // Host-function runs not shown: more than Limits::pending_callbacks were waiting for their
  // enqueue (or the reverse) at once. Streams beyond Limits::streams share one track.
  uint64_t host_functions_dropped = 0;
  uint64_t gpu_spans_unmatched = 0;  // GPU spans whose call was not found (shown without a flow)
  // Set when the estimate exceeded TimelineOptions::max_bytes: nothing was written.
  bool too_large = false;
  uint64_t estimated_bytes = 0;
  uint64_t estimated_events = 0;
};

// Writes the timeline of `paths` to `out`. Every trace is read and checked before anything is
// written. A trace that cannot be read goes to `*unreadable` and the others are exported; with
// `unreadable` null, its TraceError is thrown instead. Nothing is written when no trace is read.
TimelineStats write_timeline(std::FILE* out, const std::vector<std::string>& paths, const TimelineOptions& options,
                             const Limits& limits = {}, std::vector<UnreadableTrace>* unreadable = nullptr);
// JSON, every call, findings not marked (the fuzz and hostile-trace tests).
TimelineStats write_timeline(std::FILE* out, const std::vector<std::string>& paths, uint64_t min_blocked_ns,
                             const Limits& limits = {}, std::vector<UnreadableTrace>* unreadable = nullptr);

// Bytes per event of each format, for the size estimate (measured on the golden traces and the
// benchmark trace, asyncwatch_bench: JSON 266 bytes a record; Perfetto, its texts interned, 94 to
// 100: docs/performance.md).
inline constexpr uint64_t kJsonBytesPerEvent = 250;
inline constexpr uint64_t kPerfettoBytesPerEvent = 100;
inline constexpr uint64_t kFlaggedBytesPerEvent = 600;  // a flagged slice carries its finding's texts

}  // namespace asyncwatch
