// The skeleton every driver wrapper shares: pass through when not recording, otherwise time the
// real call, let the wrapper fill its record, and emit it; inside a traced runtime call, hand the
// record to the runtime wrapper instead. One definition for the copy, launch, sync and memory
// wrappers. Not noexcept: a thread cancelled inside the real function (a cancellation point in
// the driver) unwinds through the wrapper as it would without us; the library's own work after
// the call is noexcept.
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "call_context.h"
#include "hook_entry.h"
#include "gpu_times/gpu_times.h"
#include "hook_table.h"
#include "real_functions.h"
#include "runtime_hooks.h"

namespace asyncwatch::calls {

// The real driver function behind a hook, as its own type.
template <class Fn>
inline Fn real_fn(hooks::Hook h) noexcept {
  return reinterpret_cast<Fn>(real::driver(h));
}

// A driver wrapper called by the runtime of the active runtime wrapper: from its code, or by a tail
// call from it (the return address is then our runtime wrapper's).
inline bool nested_in_runtime(const ThreadCallState& st, const void* ra) noexcept {
  return runtime_hooks::text_contains(st.rt_instance, ra) || real::is_own(ra);
}

struct NoPrepare {
  void operator()() const noexcept {}
};
// A prepare step that has nothing to do unless `wanted()` (a launch's GPU-times start event):
// inside a runtime call, the phase change around it is skipped too when it is not wanted.
template <class P, class = void>
struct HasWanted : std::false_type {};
template <class P>
struct HasWanted<P, std::void_t<decltype(std::declval<const P&>().wanted())>> : std::true_type {};
template <class P>
inline bool prepare_wanted(const P& p) noexcept {
  if constexpr (HasWanted<P>::value)
    return p.wanted();
  else
    return true;
}

// A driver wrapper called by the runtime inside a traced runtime call (the shared runtime's every
// copy and launch; the exported wrapper tested it: InRuntimeCaller): no clock, no reservation, only
// the runtime call's record body filled, in a body that holds nothing else, so no frame for the
// other ways is set up. The general traced_with below hands that case here too.
template <class Prepare, class Call, class Fill>
cuda::CUresult traced_with(InRuntimeCaller, hooks::Hook h, Category cat, Prepare&& prepare, Call&& call, Fill&& fill) {
  constexpr bool kPrepares = !std::is_same_v<std::decay_t<Prepare>, NoPrepare>;
  constexpr bool kPrepareDecidesStack = std::is_same_v<std::invoke_result_t<Prepare&>, bool>;
  if (AW_UNLIKELY(trace_writer::disabled_now())) return call();
  ThreadCallState& st = thread_state();
  if (kPrepares && (prepare_wanted(prepare) || stack_before(cat))) {
    st.phase = kPhaseLibraryInRuntime;
    signal_fence();
    bool early;
    if constexpr (kPrepareDecidesStack) {
      early = prepare();
    } else {
      prepare();
      early = stack_before(cat);
    }
    if (early) stack_into_target(st, cat);  // into the runtime call's record, before the call
    set_phase(st, kPhaseInRealInRuntime);
  } else if (!kPrepares && AW_UNLIKELY(stack_before(cat))) {
    st.phase = kPhaseLibraryInRuntime;
    signal_fence();
    stack_into_target(st, cat);
    set_phase(st, kPhaseInRealInRuntime);
  } else {
    st.phase = kPhaseInRealInRuntime;
  }
  cuda::CUresult r = call();
  st.phase = kPhaseLibraryInRuntime;
  signal_fence();
  {
    ThreadErrnoKeeper keep(st);
    const hooks::HookInfo& hi = hooks::info(h);
    AnyRecord* target = adopt_target(st, cat);
    AnyRecord scratch;  // not recorded; the fill's side effects (a failed enqueue frees its context) still run
    // An in-place target (target_generation not 0: not `pending`) of a trace that is still this one.
    if (AW_UNLIKELY(!target || (st.target_generation != 0 && !in_place_valid(st.target_generation)))) {
      scratch = AnyRecord{};
      target = &scratch;
    }
    target->head.driver_fn = static_cast<uint16_t>(hi.api);
    fill(*target, hi, r);
    if (r == cuda::CUDA_SUCCESS) note_driver_ready();
    if (cat == Category::Sync) gpu_times::drain();  // ASYNCWATCH_GPU_TIMES: the work waited for is done
  }
  set_phase(st, kPhaseInReal);
  return r;
}

// Runs `call` (the real function), timing it, and `fill(record, hook info, result)` fills the
// record's body (and flags, by |=; the head's api, result and times are set here). `prepare()` runs
// before the call, as the library's own code (host functions set up their context there; copies
// classify their sides there and return whether the call gets its stack before the call,
// call_context.h `copy_stack_before`; a prepare returning void leaves that to `stack_before(cat)`).
// `call` appears once (so that it is inlined), whatever the way in.
//
// When the trace is active (the hot path's one load, trace_writer::recording_now), the record is
// reserved in the thread's block and published in flight before the call, then completed in place
// (docs/trace-format.md, "The write protocol"). Otherwise (the process's first call, which opens the
// trace after it returned; a call after tracing stopped) it is built on the stack and written after
// the call, as one record.
template <class Prepare, class Call, class Fill>
cuda::CUresult traced_with(Caller c, hooks::Hook h, Category cat, Prepare&& prepare, Call&& call, Fill&& fill) {
  constexpr bool kPrepares = !std::is_same_v<std::decay_t<Prepare>, NoPrepare>;
  constexpr bool kPrepareDecidesStack = std::is_same_v<std::invoke_result_t<Prepare&>, bool>;
  enum Way { kInPlace, kOuter, kPass, kLost };
  if (AW_UNLIKELY(trace_writer::disabled_now())) return call();  // ASYNCWATCH_DISABLE=1: nothing else
  ThreadCallState& st = thread_state();
  const uint32_t ph = st.phase;
  Way way;
  SavedCallState* reentrant = nullptr;  // set when this call interrupted a real function
  alignas(SavedCallState) unsigned char saved_storage[sizeof(SavedCallState)];
  auto outer_way = []() noexcept { return trace_writer::recording_now() ? kInPlace : recording() ? kOuter : kPass; };
  if (AW_LIKELY(ph == kPhaseApplication)) {  // called by the application
    way = outer_way();
  } else if (ph == kPhaseInReal && st.outer == kOuterRuntime && nested_in_runtime(st, c.ra)) {
    // Called by the runtime inside a traced runtime call (by a tail call from our runtime wrapper,
    // or from a caller the exported wrapper did not test): the record is the runtime call's.
    return traced_with(InRuntimeCaller{c}, h, cat, prepare, call, fill);
  } else {
    switch (classify_nested(st, c)) {
      case Nested::PassThrough: way = kPass; break;
      case Nested::Lost: way = kLost; break;
      case Nested::Application: way = outer_way(); break;
      default:  // a call of its own, in a clean state (restored below)
        reentrant = new (saved_storage) SavedCallState;
        st.reentrant = true;
        way = outer_way();
        break;
    }
  }
  const hooks::HookInfo& hi = hooks::info(h);
  uint64_t start = 0;
  uint32_t lost_phase = 0, gen = 0;
  AnyRecord* rec = nullptr;
  // Whether the call gets its stack before the call (a constant false for launches).
  auto early_stack = [&]() noexcept {
    if constexpr (kPrepareDecidesStack)
      return prepare();
    else {
      if constexpr (kPrepares) prepare();
      return stack_before(cat);
    }
  };
  if (way <= kOuter) {
    st.phase = kPhaseLibrary;
    signal_fence();
    st.caller = c;
    st.outer = kOuterDriver;
    const bool early = early_stack();
    // In place only: a record written after the call (the process's first call: no trace yet)
    // takes its stack after it. Before the start time is read: not in the blocked time.
    if (way == kInPlace)
      rec = begin_in_place(cat, hi.api, c.ra, early ? stack_now() : 0, &start, &gen);
    else
      start = now_ns();
    set_phase(st, kPhaseInReal);
  } else if (way == kLost) {
    lost_phase = begin_lost(st);
  }
  cuda::CUresult r = call();
  if (AW_UNLIKELY(way >= kPass)) {
    if (way == kLost) st.phase = lost_phase;
    if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
    return r;
  }
  st.phase = kPhaseLibrary;
  signal_fence();
  uint64_t end = now_ns();
  [&]() noexcept {
    ThreadErrnoKeeper keep(st);
    if (way == kInPlace) {
      if (rec && AW_LIKELY(in_place_valid(gen))) {
        rec->head.driver_fn = static_cast<uint16_t>(hi.api);
        fill(*rec, hi, r);
        finish_in_place(rec, cat, r, end);
      }
    } else {  // kOuter
      AnyRecord tmp{};
      tmp.h = trace::RecordHeader{static_cast<uint16_t>(cat),
                                  static_cast<uint16_t>(trace::record_info(static_cast<uint16_t>(cat)).fixed)};
      tmp.head.api = tmp.head.driver_fn = static_cast<uint16_t>(hi.api);
      fill(tmp, hi, r);
      tmp.head.result = r;
      tmp.head.start_ns = start;
      tmp.head.end_ns = end;
      apply_stack_policy(tmp, cat);
      write(tmp);
    }
    if (r == cuda::CUDA_SUCCESS) note_driver_ready();
    if (cat == Category::Sync) gpu_times::drain();  // ASYNCWATCH_GPU_TIMES: the work waited for is done
  }();
  set_phase(st, kPhaseApplication);
  if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
  return r;
}

template <class C, class Call, class Fill>
cuda::CUresult traced(C c, hooks::Hook h, Category cat, Call&& call, Fill&& fill) {
  return traced_with(c, h, cat, NoPrepare{}, call, fill);
}

}  // namespace asyncwatch::calls
