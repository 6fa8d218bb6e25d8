// The skeleton every driver wrapper shares: pass through when not recording, otherwise time the
// real call, let the wrapper fill its record, and emit it. One definition for the copy, launch,
// sync and memory wrappers.
#pragma once

#include "call_context.h"
#include "hook_table.h"
#include "real_functions.h"

namespace asyncwatch::calls {

// The real driver function behind a hook, as its own type.
template <class Fn>
inline Fn real_fn(hooks::Hook h) noexcept {
  return reinterpret_cast<Fn>(real::driver(h));
}

// Runs `call`, timing it, then `fill(record, hook info, result, start, end)` completes the record.
template <class Call, class Fill>
cuda::CUresult traced(hooks::Hook h, Category cat, Call&& call, Fill&& fill) noexcept {
  if (!should_record()) return call();
  DriverScope scope;
  DriverClock clock;
  uint64_t start = clock.now();
  cuda::CUresult r = call();
  uint64_t end = clock.now();
  ErrnoKeeper keep;
  AnyRecord rec{};
  fill(rec, hooks::info(h), r, start, end);
  if (r == cuda::CUDA_SUCCESS) note_driver_ready();
  emit(rec, cat);
  return r;
}

}  // namespace asyncwatch::calls
