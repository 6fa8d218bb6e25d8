// Chrome trace event JSON (opens in Perfetto UI, ui.perfetto.dev): one track per host thread
// with a complete event ("ph":"X") per intercepted call spanning the time the host was in
// it; one track per stream with the host functions/callbacks it ran; metadata names.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace asyncwatch {

struct TimelineStats {
  uint64_t records = 0;
  uint64_t events = 0;
};

// Writes the timeline of `paths` to `out`. Throws TraceError.
TimelineStats write_timeline(std::FILE* out, const std::vector<std::string>& paths, uint64_t min_blocked_ns);

}  // namespace asyncwatch
