// The names a trace file may take (trace_file.cpp tries them in order until one is free). The
// user's pattern first ("fixed.awtrace"), then ".1" .. ".15" inserted before the extension, as
// for the same pid after exec; from then on a name of the process's own (pid and the monotonic
// clock, as hex, ".p4711-1a2b3c4d5e6f"): no fixed number of names runs out when hundreds of
// processes share one pattern, or one process execs itself hundreds of times, and no process
// probes through every earlier one's name.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace asyncwatch::trace_name {

// Attempts with ".N" suffixes (attempt 0 is the plain name).
constexpr int kNumbered = 16;
// Attempts in all before the library gives up ("no free name"): only reached when every name of
// the process's own is taken too (a directory filled on purpose).
constexpr int kAttempts = kNumbered + 48;

// Attempt `attempt` (0 .. kAttempts-1) of `name` in `dir` into `out` ("DIR/NAME"). `pid` and
// `clock_ns` make the names from kNumbered on unique to the process and the moment.
void candidate(char* out, size_t cap, const char* dir, const char* name, int attempt, pid_t pid,
               uint64_t clock_ns) noexcept;

}  // namespace asyncwatch::trace_name
