// How an exported wrapper hands over to its traced body, out of line (docs/performance.md, "The
// disabled path"). The exported function only loads the real function and tests the
// ASYNCWATCH_DISABLE bit: when set, it tail-calls the real function, having set up no frame and
// touched nothing else. Otherwise it notes its call site (return address and frame, the key of the
// call-site cache) on this thread's small entry stack and calls the body with the same arguments,
// which the compiler makes a jump that passes the arguments on untouched. The body takes the call
// site off the stack first thing.
//
// A stack rather than one slot: a signal handler that makes a CUDA call between the push and the
// pop pushes and pops its own entry above ours. The depth is raised before the slot is written and
// lowered after it is read, so a handler running at any point in between uses another slot.
#pragma once

#include <cstdint>

#include "call_context.h"
#include "common.h"
#include "real_functions.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

struct EntryStack {
  uint32_t depth;
  uint8_t instance[8];  // the runtime instance of a runtime wrapper (runtime_hooks.cpp), else 0
  Caller caller[8];
};
extern AW_TLS_SHARED EntryStack tl_entry;

// In the exported function: its own return address and frame (the frame as AW_NOTE_CALLER's
// __builtin_frame_address(0) would give it, without making the function set up a frame pointer).
#define AW_PUSH_ENTRY(inst)                                                                                   \
  ::asyncwatch::calls::push_entry(__builtin_return_address(0),                                              \
                                  static_cast<const char*>(__builtin_dwarf_cfa()) - 2 * sizeof(void*), inst)
inline void push_entry(const void* ra, const void* frame, uint8_t inst) noexcept {
  EntryStack& e = tl_entry;
  const uint32_t i = e.depth;
  e.depth = i + 1;
  signal_fence();
  e.caller[i & 7] = Caller{ra, frame};
  e.instance[i & 7] = inst;
}
// In the body, before anything else.
inline Caller pop_entry(uint8_t* inst = nullptr) noexcept {
  EntryStack& e = tl_entry;
  const uint32_t i = e.depth - 1;
  const Caller c = e.caller[i & 7];
  if (inst) *inst = e.instance[i & 7];
  signal_fence();
  e.depth = i;
  return c;
}

}  // namespace asyncwatch::calls

#define AW_UNPAREN(...) __VA_ARGS__

// Defines the exported driver wrapper `sym` (parameters `params`, forwarded as `args`) and its body,
// `aw_traced_<sym>` (hidden, out of line), whose statements follow `args`; in them `aw_caller` (the
// call site), `real` (the driver's function, its own type) and `call` (it, called with `args`) are in
// scope.
#define AW_DRIVER_HOOK(sym, params, args, ...)                                                                  \
  extern "C" AW_EXPORT ::asyncwatch::cuda::CUresult sym params;                                                 \
  extern "C" __attribute__((visibility("hidden"), noinline)) ::asyncwatch::cuda::CUresult aw_traced_##sym params { \
    const ::asyncwatch::calls::Caller aw_caller = ::asyncwatch::calls::pop_entry();                             \
    const auto real = reinterpret_cast<decltype(&::sym)>(::asyncwatch::real::driver(::asyncwatch::hooks::Hook::sym)); \
    if (!real) return ::asyncwatch::cuda::CUDA_ERROR_NOT_INITIALIZED;                                           \
    [[maybe_unused]] auto call = [&] { return real args; };                                                     \
    __VA_ARGS__                                                                                                 \
  }                                                                                                             \
  extern "C" AW_EXPORT ::asyncwatch::cuda::CUresult sym params {                                                \
    const auto real = reinterpret_cast<decltype(&::sym)>(                                                       \
        ::asyncwatch::real::g_real[static_cast<size_t>(::asyncwatch::hooks::Hook::sym)].load(std::memory_order_acquire)); \
    if (AW_UNLIKELY(::asyncwatch::trace_writer::disabled_now()) && AW_LIKELY(real)) return real args;           \
    AW_PUSH_ENTRY(0);                                                                                           \
    return aw_traced_##sym args;                                                                                \
  }
