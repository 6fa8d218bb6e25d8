// The skeleton every driver wrapper shares: pass through when not recording, otherwise time the
// real call, let the wrapper fill its record, and emit it; inside a traced runtime call, hand the
// record to the runtime wrapper instead. One definition for the copy, launch, sync and memory
// wrappers. Not noexcept: a thread cancelled inside the real function (a cancellation point in
// the driver) unwinds through the wrapper as it would without us; the library's own work after
// the call is noexcept.
#pragma once

#include <new>
#include <type_traits>

#include "call_context.h"
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

// Runs `call` (the real function), timing it, then `fill(record, hook info, result, start, end)`
// completes the record. `prepare()` runs before the call, as the library's own code (host
// functions set up their context there). `call` appears once (so that it is inlined), whatever
// the way in.
template <class Prepare, class Call, class Fill>
cuda::CUresult traced_with(Caller c, hooks::Hook h, Category cat, Prepare&& prepare, Call&& call, Fill&& fill) {
  constexpr bool kPrepares = !std::is_same_v<std::decay_t<Prepare>, NoPrepare>;
  enum Way { kOuter, kInRuntime, kPass, kLost };
  ThreadCallState& st = thread_state();
  const uint32_t ph = st.phase;
  Way way;
  SavedCallState* reentrant = nullptr;  // set when this call interrupted a real function
  alignas(SavedCallState) unsigned char saved_storage[sizeof(SavedCallState)];
  if (AW_LIKELY(ph == 0)) {  // called by the application
    way = recording() ? kOuter : kPass;
  } else if (ph == 2 && st.outer == kOuterRuntime && nested_in_runtime(st, c.ra)) {
    // Called by the runtime inside a traced runtime call: the record is the runtime call's.
    way = kInRuntime;
  } else {
    switch (classify_nested(st, c)) {
      case Nested::PassThrough: way = kPass; break;
      case Nested::Lost: way = kLost; break;
      case Nested::Application: way = recording() ? kOuter : kPass; break;
      default:  // a call of its own, in a clean state (restored below)
        reentrant = new (saved_storage) SavedCallState;
        st.reentrant = true;
        way = recording() ? kOuter : kPass;
        break;
    }
  }
  uint64_t start = 0;
  uint32_t lost_phase = 0;
  if (way == kOuter) {
    st.phase = 1;
    signal_fence();
    st.caller = c;
    st.outer = kOuterDriver;
    if constexpr (kPrepares) prepare();
    start = now_ns();
    set_phase(st, 2);
  } else if (way == kInRuntime) {
    if constexpr (kPrepares) {
      st.phase = 3;
      signal_fence();
      prepare();
      set_phase(st, 4);
    } else {
      st.phase = 4;
    }
  } else if (way == kLost) {
    lost_phase = begin_lost(st);
  }
  cuda::CUresult r = call();
  if (AW_UNLIKELY(way >= kPass)) {
    if (way == kLost) st.phase = lost_phase;
    if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
    return r;
  }
  st.phase = way == kOuter ? 1 : 3;
  signal_fence();
  // No clock inside a runtime call: the runtime wrapper's start and end become the record's times.
  uint64_t end = way == kOuter ? now_ns() : 0;
  [&]() noexcept {
    ErrnoKeeper keep;
    AnyRecord rec{};
    fill(rec, hooks::info(h), r, start, end);
    if (r == cuda::CUDA_SUCCESS) note_driver_ready();
    if (way == kOuter) {
      apply_stack_policy(rec, cat);
      write(rec);
    } else {
      adopt(st, rec, cat);
    }
  }();
  set_phase(st, way == kOuter ? 0 : 2);
  if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
  return r;
}

template <class Call, class Fill>
cuda::CUresult traced(Caller c, hooks::Hook h, Category cat, Call&& call, Fill&& fill) {
  return traced_with(c, h, cat, NoPrepare{}, call, fill);
}

}  // namespace asyncwatch::calls
