// Summary mode (ASYNCWATCH_SUMMARY=1, docs/configuration.md): a call whose record is identical but for
// its times to earlier calls of this thread is folded into a SiteSummaryRecord (trace_format.h) instead
// of staying in the trace as a record of its own, so that the trace grows with the distinct calls of a
// run, not with its length. Per thread, no lock, no allocation: the thread's index of its signatures is
// thread-local, the summaries are records in the thread's own block, updated in place (MAP_SHARED: a
// SIGKILL leaves the counts of every call that returned, and the exemplars). A call keeps its record
// when it is one of its signature's first kSummaryFirstExemplars, when the thread's index is full, or
// when its record is not in the thread's current block any more; the slowest folded calls keep their
// times in the summary.
#pragma once

#include <atomic>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"

namespace asyncwatch::site_summary {

// Set when a trace opens in summary mode (trace_file.cpp, from the configuration).
extern std::atomic<bool> g_enabled;

// The calling thread's call record `rec` (in its current block, published, completed: result, end
// time and stack set, kFlagInFlight cleared) folded into its signature's summary, or left as it is.
// Called from the wrapper after the real call returned (no reservation of this thread open).
void fold(trace::CallHead* rec) noexcept;

// Inline in every wrapper: one test when summary mode is off (full mode's per-call instructions,
// docs/performance.md, stay as they were).
inline __attribute__((always_inline)) void after_call(trace::CallHead* rec) noexcept {
  if (AW_UNLIKELY(g_enabled.load(std::memory_order_relaxed))) fold(rec);
}

}  // namespace asyncwatch::site_summary
