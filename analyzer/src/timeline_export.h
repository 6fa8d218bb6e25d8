// Chrome trace event JSON (opens in Perfetto UI, ui.perfetto.dev): one track per host thread
// with a complete event ("ph":"X") per intercepted call spanning the time the host was in
// it; one track per stream with the host functions/callbacks it ran; metadata names.
#pragma once

#include "analysis.h"
#include "options.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace asyncwatch {

struct TimelineStats {
  uint64_t traces = 0;  // exported
  uint64_t records = 0;
  uint64_t events = 0;
  // Host-function runs not shown: more than Limits::pending_callbacks were waiting for their
  // enqueue (or the reverse) at once. Streams beyond Limits::streams share one track.
  uint64_t host_functions_dropped = 0;
};

// Writes the timeline of `paths` to `out`. Every trace is read and checked before anything is
// written. A trace that cannot be read goes to `*unreadable` and the others are exported; with
// `unreadable` null, its TraceError is thrown instead. Nothing is written when no trace is read.
TimelineStats write_timeline(std::FILE* out, const std::vector<std::string>& paths, uint64_t min_blocked_ns,
                             const Limits& limits = {}, std::vector<UnreadableTrace>* unreadable = nullptr);

}  // namespace asyncwatch
