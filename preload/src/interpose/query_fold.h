// Queries recorded cheaply: a polling loop calls cudaEventQuery/cudaStreamQuery
// millions of times. A query whose handle, API and result are those of this thread's previous
// record, a query record written with nothing after it, is folded into that record (its `repeat`
// counts the calls, its end_ns becomes this call's), so a polling loop leaves one Sync record per
// change of result instead of one per call. A query is not published in flight: it is made first
// and recorded after it returned (a query does not block). Under ASYNCWATCH_STACKS=all, inside
// another wrapper, in a signal handler or while the trace is not active, the ordinary path records it.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "call_context.h"
#include "config.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::query_fold {

// Inline, every one: a polling loop's folded query runs nothing else of ours (bench/poll_loop.sh,
// the instructions a polled query and the loop's speed traced over bare on the GPU).
namespace detail {
// This thread's last query record, while it may still take more calls.
struct Last {
  trace::SyncRecord* rec;  // in the thread's block (published)
  const char* end;         // where the next record would start if nothing was written since
  uint32_t generation;
  uint16_t api;
  uint8_t per_thread;
  int32_t result;
  uint64_t handle;
};
extern AW_TLS_SHARED Last tl_last;
// Folds between two refreshes of the folded record's end time: at ~0.15 us a query, its end lags the
// last query by a few microseconds at most, and the next record of the thread bounds it exactly.
inline constexpr uint32_t kEndRefresh = 32;
}  // namespace detail

// Whether the folding path may take this call (else the caller takes its ordinary path).
inline bool eligible() noexcept {
  const calls::ThreadCallState& st = calls::thread_state();
  return st.phase == calls::kPhaseApplication && trace_writer::recording_now() &&
         config_fast().stacks != StackPolicy::All;
}

// Whether this query may fold into the thread's last record (same API, handle and entry form),
// asked before the call so that a query that then folds reads no clock at all.
inline bool may_fold(trace::Api api, uint64_t handle, bool per_thread) noexcept {
  const detail::Last& l = detail::tl_last;
  return l.rec && l.handle == handle && l.api == static_cast<uint16_t>(api) && l.per_thread == per_thread;
}

// Folds a query that returned `result` into the thread's last record when nothing was written since
// and the result is the same: the repeat count goes up; the record's end time is refreshed from the
// clock every kEndRefresh folds (and set exactly when the run of results ends: record()). Returns
// false when it could not fold (the caller then records it).
inline bool fold(int32_t result) noexcept {
  detail::Last& l = detail::tl_last;
  // The position test before any read of the record: a record the thread's writing has moved past
  // may lie in a block that is no longer mapped.
  const uint32_t gen = trace_writer::generation();
  if (!l.rec || l.result != result || l.generation != gen || !thread_buffer::wrote_nothing_since(l.end, gen) ||
      l.rec->repeat == UINT32_MAX)
    return false;
  const uint32_t repeat = l.rec->repeat + 1;
  if (repeat % detail::kEndRefresh == 0) __atomic_store_n(&l.rec->end_ns, now_ns(), __ATOMIC_RELAXED);
  // Relaxed stores: a reader of the live mapping sees either count (each field is one store).
  __atomic_store_n(&l.rec->repeat, repeat, __ATOMIC_RELAXED);
  return true;
}

// Records a query that returned `result` after [start, end]: folded into the previous record when it
// can be, else a new Sync record (repeat 1) that later queries may fold into.
void record(trace::Api api, trace::Api driver_fn, uint64_t handle, trace::StreamKind kind, bool per_thread,
            int32_t result, uint64_t start, uint64_t end) noexcept;

// Runs `call` (the real query) as a passive outer call (nested driver wrappers pass through), then
// records it. `eligible()` must have returned true.
template <class Call>
auto run(uint8_t rt_instance, calls::Caller c, trace::Api api, trace::Api driver_fn, uint64_t handle,
         trace::StreamKind kind, bool per_thread, Call&& call) {
  calls::ThreadCallState& st = calls::thread_state();
  st.phase = calls::kPhaseLibrary;
  calls::signal_fence();
  st.caller = c;
  st.outer = calls::kOuterRuntimePassive;
  st.rt_instance = rt_instance;
  // A polling loop's queries fold into one record: those read no clock (on the H100, bench/poll_loop.sh:
  // static runtime 0.83 / 0.75 of bare's queries with two clock reads a query, 0.92 / 0.94 without). A query that does
  // not fold takes its start from the clock after the call: queries do not block.
  const bool foldable = may_fold(api, handle, per_thread);
  const uint64_t start = foldable ? 0 : now_ns();
  calls::set_phase(st, calls::kPhaseInReal);
  auto r = call();
  st.phase = calls::kPhaseLibrary;
  calls::signal_fence();
  // A fold calls nothing that sets errno; only recording may.
  if (!foldable || !fold(static_cast<int32_t>(r))) {
    ErrnoKeeper keep;
    const uint64_t end = now_ns();
    record(api, driver_fn, handle, kind, per_thread, static_cast<int32_t>(r), foldable ? end : start, end);
  }
  calls::set_phase(st, calls::kPhaseApplication);
  return r;
}

}  // namespace asyncwatch::query_fold
