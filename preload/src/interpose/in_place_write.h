// Writing a call's record: in place in the thread's block, published in flight before the real
// call and completed after it (docs/trace-format.md, "The write protocol"), or whole after the
// call; and the runtime call's record that a driver wrapper under it fills.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "call_record.h"
#include "common.h"
#include "stack_policy.h"
#include "thread_state.h"
#include "trace/flight_ring.h"
#include "trace/site_summary.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

// Writes a finished call record (counted in records_lost when it cannot be written).
void write(AnyRecord& r) noexcept;

// The in-place write protocol (docs/trace-format.md): a call record of `type` reserved in the
// thread's block, its head filled (api, start_ns = now, kFlagInFlight; `stack_id` with
// kFlagStackCaptured when the stack was taken before the call; `caller_ra`, the application's
// return address, in end_ns until the call completes: the call site of a call still in flight
// when the process dies) and published before the real call. nullptr when it cannot be written
// (counted in records_lost when such calls count). `*start` gets the start time; `*gen` the trace
// generation the record belongs to.
// Inline: every recorded call makes it (a launch's stack_id is a constant 0).
AnyRecord* begin_in_place_lost(uint64_t* start) noexcept;  // no room: counted as lost
// The head of the record at `p`, in flight. The reserved bytes (and an idle slot's after its header)
// are zero (fresh file space, never handed out twice): only the head's known fields that are not
// zero are stored (a launch's stack id is a constant 0).
inline __attribute__((always_inline)) void in_flight_head(char* p, trace::Api api, const void* caller_ra,
                                                          uint32_t stack_id, uint64_t* start) noexcept {
  auto* h = reinterpret_cast<trace::CallHead*>(p);
  h->api = static_cast<uint16_t>(api);
  h->flags = trace::kFlagInFlight | (stack_id ? uint32_t{trace::kFlagStackCaptured} : 0u);
  if (stack_id) h->stack_id = stack_id;
  h->end_ns = reinterpret_cast<uintptr_t>(caller_ra);  // until completed: the caller (trace_format.h)
  *start = now_ns();
  h->start_ns = *start;
}
inline __attribute__((always_inline)) AnyRecord* begin_in_place(trace::RecordType type, trace::Api api,
                                                                const void* caller_ra, uint32_t stack_id,
                                                                uint64_t* start, uint32_t* gen) noexcept {
  const uint32_t size = trace::record_info(static_cast<uint16_t>(type)).fixed;
  // Summary mode: the thread's in-flight slot for the type (trace/site_summary.h), not while it may
  // hold the call a reentrant one interrupted.
  char* p = nullptr;
  if (site_summary::enabled() && !thread_state().reentrant) p = site_summary::slot(type, size, gen);
  // The generation the reserved bytes belong to (the one reserve_active compared with its cursors').
  if (AW_LIKELY(!p)) {
    p = thread_buffer::reserve_active(size, gen);
    if (AW_UNLIKELY(!p)) return begin_in_place_lost(start);
  }
  in_flight_head(p, api, caller_ra, stack_id, start);
  // Visible from here on, in flight (a slot's publication closes no reservation: `open` is 0, so
  // commit's closing leaves it so).
  thread_buffer::commit(p, type, size);
  return reinterpret_cast<AnyRecord*>(p);
}
// After the real call: whether the record may still be written (not if the process forked meanwhile:
// it belongs to the parent's trace).
inline bool in_place_valid(uint32_t gen) noexcept { return trace_writer::generation() == gen; }
// A published record that is not wanted after all: it becomes Padding of the same size.
void cancel_in_place(AnyRecord* r) noexcept;

// Completes it: result and end time, the stack policy, then the flags without kFlagInFlight as the
// last store (release order). Inline: the policy is decided here with the category a constant, so
// the common call (a launch that did not block, a pinned copy) takes no stack and makes no call;
// one whose stack was taken before the call keeps it. That store is the thread's last access to
// the record: the call's block may have been retired while it ran (a signal handler's calls, or
// its own stack, filled it), and the file thread unmaps such a block's segment once no record in
// it is in flight (trace_file.cpp, in_flight_left). So the flight recorder's copy (kRingCopy:
// summary mode) is made before it.
template <bool kRingCopy = false>
inline __attribute__((always_inline)) void complete_in_place(AnyRecord* r, Category c, int32_t result,
                                                             uint64_t end) noexcept {
  trace::CallHead& h = r->head;
  h.result = result;
  h.end_ns = end;
  if (takes_stacks(c) && wants_stack(*r, c, end - h.start_ns) && !(h.flags & trace::kFlagStackCaptured))
    capture_stack(h);
  if constexpr (kRingCopy) flight_ring::after_call(&h);
  __atomic_store_n(&h.flags, h.flags & ~uint32_t{trace::kFlagInFlight}, __ATOMIC_RELEASE);
}
inline __attribute__((always_inline)) void finish_in_place(AnyRecord* r, Category c, int32_t result,
                                                           uint64_t end) noexcept {
  if (const uint8_t m = site_summary::mode(); AW_UNLIKELY(m != site_summary::kOff)) {
    // Summary mode: the common call is folded before it is completed (site_summary::fold_in_flight;
    // with the ring, which copies every completed call, it folds none).
    if (site_summary::fold_in_flight(reinterpret_cast<char*>(r), c, result, end)) return;
    const uint64_t caller = r->head.end_ns;  // in flight: the caller's return address
    // Whether calls of this record from this caller take a stack after the call only when they block
    // (the stack policy's test without the blocked time, before complete_in_place may take one): the
    // site cache keeps it for fold_in_flight.
    const bool quiet = m == site_summary::kOn &&
                       !(takes_stacks(c) && wants_stack(*r, c, 0) && !(r->head.flags & trace::kFlagStackCaptured));
    complete_in_place<true>(r, c, result, end);
    // Folded into its signature's summary when it is the thread's slot.
    site_summary::after_call(reinterpret_cast<char*>(r), c, caller, end, quiet);
    return;
  }
  complete_in_place(r, c, result, end);
}

// Inside a traced runtime call (a driver wrapper before its real call): stores the stack into the
// runtime call's record when this driver call is the one whose record it is and it has none yet.
void stack_into_target(ThreadCallState& st, Category c) noexcept;
// A driver wrapper inside a runtime call: the record whose body it fills (the runtime call's, for
// the first driver call of the runtime call's category), or nullptr (the runtime's internals; also
// when the runtime call's record could not be reserved).
AnyRecord* adopt_target(ThreadCallState& st, Category c) noexcept;

}  // namespace asyncwatch::calls
