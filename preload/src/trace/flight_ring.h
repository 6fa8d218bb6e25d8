// The flight recorder (ASYNCWATCH_TRACE_LIMIT, docs/configuration.md): besides the whole run's summary
// (summary mode, site_summary.h), a copy of every completed call record goes into a ring of trace
// blocks (magic kBlockMagicRing) reused oldest-first, so that the trace keeps the last SIZE bytes of
// raw records and a kill leaves the last minutes in full detail.
//
// Why copies into blocks of their own rather than recycling the thread's blocks: the thread's blocks
// hold what every record refers to (stacks, kernel names, modules, summaries); reusing them would
// lose those. The ring holds only call records, so the rest of the file is exactly a summary trace
// and reads as one; the ring is a window of raw records on top of it.
//
// Per thread, no lock: a thread holds one ring block at a time and writes into it alone. Taking a
// block is one fetch-add on the ring's sequence (once per 64 KiB of records); a block is reused only
// after its thread let it go (it was full, or the thread exited), so no two threads ever write into
// one block, and a block held by a thread that stays idle is skipped, not taken from it.
#pragma once

#include <atomic>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"

namespace asyncwatch::flight_ring {

// The ring's in-process table covers the largest limit (asyncwatch::trace::kMaxTraceLimit).
inline constexpr uint64_t kMaxRingBlocks = trace::kMaxTraceLimit / trace::kBlockSize;

// Set while the open trace has a ring.
extern std::atomic<bool> g_enabled;

// A new trace opens with a ring of `blocks` blocks (0: none): nothing taken yet. Called by the file
// thread while it makes the file, before any writer of that trace.
void start(uint64_t blocks) noexcept;

// The calling thread's completed call record `rec` (its last store, the flags', still to come: the
// copy is without kFlagInFlight), copied into its ring block. A copy that cannot be made (every ring block held by a thread, tracing stopped, a signal
// handler's call while this thread copies) is counted in FileHeader::flight_copies_missed: the call
// is still in the summary.
void copy(const trace::CallHead* rec) noexcept;

// In the wrapper as each call completes (calls::complete_in_place): one test when there is no ring.
inline __attribute__((always_inline)) void after_call(const trace::CallHead* rec) noexcept {
  if (AW_UNLIKELY(g_enabled.load(std::memory_order_relaxed))) copy(rec);
}

// The calling thread exits (thread_buffer::release_thread): its ring block may be reused.
void release_thread() noexcept;

}  // namespace asyncwatch::flight_ring
