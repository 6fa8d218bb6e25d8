// How an exported wrapper hands over to its traced body, out of line (docs/interception.md, "Every
// path to the driver"). On x86-64 the exported symbol is a stub in assembly (entry_stubs.cpp,
// made from the hook tables) that makes the entry's tests itself and jumps to the body they pick:
// with the ASYNCWATCH_DISABLE bit set, to the real function; a driver stub to `aw_inrt_<sym>` when
// `called_in_runtime` (below) holds, else to `aw_traced_<sym>`; a runtime stub to `aw_app_<sym>`
// when the application called it (phase 0) with the trace recording in place, else to
// `aw_traced_<sym>` (also while the real function is not known yet). Only jumps: the body has the
// application's return address and frame as its own (AW_STUB_CALLER_AS), in every build (-O0 and
// the sanitizer builds included), and no C++ frame moves the arguments (GCC's tail call with
// stack arguments reloads and stores each of them).
//
// The four ways into a driver wrapper, each kept for the GPU figure it buys (docs/performance.md's
// table; the instructions per call are bench/callgrind_per_call.sh's on the simulator when each
// was added):
//   - the stub (entry_stubs.cpp): the static runtime's way (the driver wrapper is the outer one):
//     launch 398 -> 317, 64 B pinned copy 359 -> 316 over a C++ entry. The static runtime's pinned
//     copy is at its target (+3.8 to +5.1 % of <= +5 %): kept.
//   - the in-runtime body (aw_inrt_<sym>, InRuntimeCaller): the shared runtime's every copy and
//     launch, launch 558 -> 418, pinned copy 580 -> 380: a larger saving than the stub's, on the
//     path whose copy is at +2.5 to +3.4 % of <= +5 %: kept.
//   - the prefill shim (AW_PREFILLED_DRIVER_HOOKS, below): the shared runtime's launch 317 -> 275
//     and pinned copy 316 -> 271. The one with margin (shared runtime: launch +0.9 to +1.3 % of
//     <= +3 %, copy +2.5 to +3.4 % of <= +5 %, measured with it); what those figures are without
//     it is not measured on a GPU (bench/run_paired.sh with a library built with an empty prefill
//     list would say): kept until that A/B shows the merge leaves both within target.
//   - the full in-runtime body (aw_inrt_full_<sym>): no trick of its own, the prefill's fallback
//     (the in-runtime body under another name): goes with the prefill shim.
//
// Elsewhere the exported function is a C++ entry (AW_ENTRY_NAME, the exported name itself) that
// makes the same tests and calls the body with the same arguments, which an optimizing compiler
// makes a jump (a sibling call); so are the entries of the runtime instances handed out by dlsym
// (runtime_hooks.cpp) on every target. Unoptimized and sanitized builds keep that a call (frame
// pointers everywhere there: -O0, and the sanitizer builds' -fno-omit-frame-pointer), and the body
// reads the entry's return address and frame one frame up. In optimized builds the entries live in
// a section of their own (contiguous in each object); should the compiler not have made the call
// a jump after all, the body's return address lies in its own entry (no entry calls another), and
// the body takes the return address the entry stored in `tl_entry_ra` before the call (a signal
// handler's CUDA call between that store and the body's load would replace it: that call's call
// site only).
#pragma once

#include <cstdint>
#include <type_traits>

#include "call_context.h"
#include "common.h"
#include "real_functions.h"
#include "runtime_hooks.h"
#include "trace/trace_writer.h"

// AW_ENTRY_STUBS: the exported symbols are entry_stubs.cpp's stubs, which dispatch to the bodies.
// Otherwise the exported symbol is the C++ entry, which makes the disabled test first
// (AW_ENTRY_PASS_IF_DISABLED: `real_expr` loads the real function, of type `fn_type`).
#if defined(__x86_64__)
#define AW_ENTRY_STUBS 1
#else
#define AW_ENTRY_STUBS      0
#define AW_ENTRY_NAME(sym)  sym
#define AW_ENTRY_VISIBILITY AW_EXPORT
#define AW_ENTRY_PASS_IF_DISABLED(fn_type, real_expr, args)                                           \
  {                                                                                                   \
    const auto real = reinterpret_cast<fn_type>(real_expr);                                           \
    if (AW_UNLIKELY(::asyncwatch::trace_writer::disabled_now()) && AW_LIKELY(real)) return real args; \
  }
#endif

// `aw_caller` of a body the exported stub jumped to: the body's own return address and frame are
// the application's (the frame as __builtin_frame_address(0) gives it: the canonical frame address
// less the return address and the saved frame pointer). Elsewhere the C++ entry's (below).
#if AW_ENTRY_STUBS
#define AW_STUB_CALLER_AS(type, wrapper)                                                               \
  const type aw_caller {                                                                               \
    ::asyncwatch::calls::Caller {                                                                      \
      __builtin_return_address(0), static_cast<const char*>(__builtin_dwarf_cfa()) - 2 * sizeof(void*) \
    }                                                                                                  \
  }
#else
#define AW_STUB_CALLER_AS(type, wrapper) AW_ENTRY_CALLER_AS(type, wrapper)
#endif

#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AW_ENTRY_ATTRS  __attribute__((optimize("no-optimize-sibling-calls")))
#define AW_NOTE_ENTRY() static_cast<void>(0)
#define AW_ENTRY_CALLER_AS(type, wrapper)                                                                         \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wframe-address\"")                            \
      const type aw_caller{::asyncwatch::calls::Caller{__builtin_return_address(1), __builtin_frame_address(1)}}; \
  _Pragma("GCC diagnostic pop")
#else
#define AW_ENTRY_ATTRS  __attribute__((section(".text.asyncwatch_entries")))
// In the entry, on the traced path only.
#define AW_NOTE_ENTRY() ::asyncwatch::calls::tl_entry_ra = __builtin_return_address(0)
// `aw_caller`, the call site. Reached by a jump, the body's return address and frame are the
// entry's (the frame as __builtin_frame_address(0) gave it there: the canonical frame address
// less the return address and the saved frame pointer).
#define AW_ENTRY_CALLER_AS(type, wrapper)                                                                             \
  const type aw_caller {                                                                                              \
    ::asyncwatch::calls::Caller {                                                                                     \
      AW_LIKELY(!::asyncwatch::calls::called_by(__builtin_return_address(0), reinterpret_cast<const void*>(wrapper))) \
      ? __builtin_return_address(0) : ::asyncwatch::calls::tl_entry_ra,                                               \
          static_cast<const char*>(__builtin_dwarf_cfa()) - 2 * sizeof(void*)                                         \
    }                                                                                                                 \
  }
#endif

namespace asyncwatch::calls {
extern AW_TLS_SHARED const void* tl_entry_ra;  // AW_NOTE_ENTRY

// A call from an entry's own code returns to within this many bytes of its start (an optimized
// entry is a few dozen instructions).
inline constexpr uintptr_t kWrapperSpan = 256;
inline bool called_by(const void* own_ra, const void* wrapper) noexcept {
  return reinterpret_cast<uintptr_t>(own_ra) - reinterpret_cast<uintptr_t>(wrapper) < kWrapperSpan;
}

// The driver entry's first test: called by the runtime (a return address in its object)
// inside a traced runtime call. Then the short body (`aw_inrt_<sym>`) runs; otherwise the
// full one, which also finds the runtime's tail calls from our own runtime wrapper (traced_call.h).
// The x86-64 stubs make it in assembly (entry_stubs.cpp): the same fields, the same order.
inline bool called_in_runtime(const void* ra) noexcept {
  const ThreadCallState& st = tl_locals.call;
  return st.phase == kPhaseInReal && st.outer == kOuterRuntime && runtime_hooks::text_contains(st.rt_instance, ra);
}
}  // namespace asyncwatch::calls

// Defines the exported driver wrapper `sym` (its parameters named `args`, typed by its row of the
// hook table: AW_PARAMS_<sym>, driver_hook_table.inc): its entry and its body, `aw_traced_<sym>`
// (hidden, out of line), whose statements follow `args`; in them `aw_caller` (the call site),
// `real` (the driver's function, its own type) and `call` (it, called with `args`) are in scope.
// The two bodies: `aw_traced_<sym>` (every way in) and `aw_inrt_<sym>` (called by the runtime inside
// a traced runtime call: `aw_caller` an InRuntimeCaller, so that the short path is all it holds).
#define AW_DRIVER_BODY(caller_type, sym, args, ...)                                                                \
  AW_STUB_CALLER_AS(caller_type, &::AW_ENTRY_NAME(sym));                                                           \
  const auto real =                                                                                                \
      reinterpret_cast<::asyncwatch::hooks::fn::sym*>(::asyncwatch::real::driver(::asyncwatch::hooks::Hook::sym)); \
  if (!real) return ::asyncwatch::cuda::CUDA_ERROR_NOT_INITIALIZED;                                                \
  [[maybe_unused]] auto call = [&] { return real args; };                                                          \
  __VA_ARGS__
// (`inrt`: the in-runtime body's name, aw_inrt_<sym> but for a prefilled wrapper's, below.)
#define AW_DRIVER_BODIES_AS(sym, inrt, params, args, ...)                                                          \
  extern "C" AW_EXPORT ::asyncwatch::cuda::CUresult sym params;                                                    \
  extern "C" __attribute__((visibility("hidden"), noinline)) ::asyncwatch::cuda::CUresult aw_traced_##sym params { \
    AW_DRIVER_BODY(::asyncwatch::calls::Caller, sym, args, __VA_ARGS__)                                            \
  }                                                                                                                \
  extern "C" __attribute__((visibility("hidden"), noinline)) ::asyncwatch::cuda::CUresult inrt params {            \
    AW_DRIVER_BODY(::asyncwatch::calls::InRuntimeCaller, sym, args, __VA_ARGS__)                                   \
  }
#define AW_DRIVER_BODIES(sym, params, args, ...) AW_DRIVER_BODIES_AS(sym, aw_inrt_##sym, params, args, __VA_ARGS__)
#define AW_DRIVER_HOOK(sym, args, ...)           AW_DRIVER_HOOK_WITH(sym, AW_PARAMS_##sym args, args, __VA_ARGS__)
#if AW_ENTRY_STUBS
#define AW_DRIVER_HOOK_WITH(sym, params, args, ...) AW_DRIVER_BODIES(sym, params, args, __VA_ARGS__)
// A prefilled wrapper (AW_PREFILLED_DRIVER_HOOKS, below): its in-runtime body is aw_inrt_full_<sym>,
// which the shim aw_inrt_<sym> jumps to when its prefill step did nothing.
#define AW_DRIVER_HOOK_PREFILLED(sym, args, ...) \
  AW_DRIVER_BODIES_AS(sym, aw_inrt_full_##sym, AW_PARAMS_##sym args, args, __VA_ARGS__)
#else
#define AW_DRIVER_HOOK_WITH(sym, params, args, ...)                                                                 \
  extern "C" AW_ENTRY_VISIBILITY ::asyncwatch::cuda::CUresult AW_ENTRY_NAME(sym) params;                            \
  AW_DRIVER_BODIES(sym, params, args, __VA_ARGS__)                                                                  \
  extern "C" AW_ENTRY_VISIBILITY AW_ENTRY_ATTRS ::asyncwatch::cuda::CUresult AW_ENTRY_NAME(sym) params {            \
    AW_ENTRY_PASS_IF_DISABLED(::asyncwatch::hooks::fn::sym*,                                                        \
                              ::asyncwatch::real::g_real[static_cast<size_t>(::asyncwatch::hooks::Hook::sym)].load( \
                                  std::memory_order_acquire),                                                       \
                              args)                                                                                 \
    AW_NOTE_ENTRY();                                                                                                \
    if (AW_LIKELY(::asyncwatch::calls::called_in_runtime(__builtin_return_address(0)))) return aw_inrt_##sym args;  \
    return aw_traced_##sym args;                                                                                    \
  }
#define AW_DRIVER_HOOK_PREFILLED(sym, args, ...) AW_DRIVER_HOOK(sym, args, __VA_ARGS__)
#endif

// Prefilled driver wrappers (x86-64; what it buys: the top of this file): the driver stub's in-runtime target aw_inrt_<sym> is a shim in assembly (entry_stubs.cpp)
// that saves the six argument registers, calls `aw_prefill_<sym>(const StubArgs*)` and, with the
// registers restored, jumps to the address it returned: the real function, once the prefill step
// filled the runtime call's record and left the thread as it is inside the runtime (phase 2), so
// that nothing of ours runs after the real call and the application's arguments are never copied;
// or, when the call needs anything done after it (GPU times, a kernel name not cached yet, ...),
// the in-runtime body aw_inrt_full_<sym>, with nothing changed. Readers ignore the body of a
// record in flight (docs/trace-format.md), so filling it before the call changes no trace.
// (A name listed here without its aw_prefill_<sym>, or defined prefilled without being listed,
// fails to link: the shim's call, the stub's jump.)
#define AW_PREFILLED_DRIVER_HOOKS(X) \
  X(cuLaunchKernel)                  \
  X(cuLaunchKernel_ptsz)             \
  X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz)

namespace asyncwatch::calls {
// What every prefill step needs (with its own tests): the real function, the configuration
// without GPU times, no capture active, the runtime call's record of `cat` this call's to fill and
// of the trace of generation `gen`, the device's record written.
inline bool prefill_possible(const ThreadCallState& st, const void* real, const Config* cfg, Category cat,
                             uint32_t gen) noexcept {
  return real && cfg && !cfg->gpu_times && !any_capture_active() && !st.pending_valid && st.runtime_category == cat &&
         st.target && (st.target_generation == 0 || st.target_generation == gen) && device_info_written(gen);
}
// The prefill step itself: the runtime call's record adopted as the in-runtime body's would be,
// `fill(rec, hook info)` run on it, the thread left as inside the runtime (phase 2); returns the
// real function for the shim to jump to.
template <class Fill>
inline void* prefill_record(ThreadCallState& st, ::asyncwatch::hooks::Hook h, Fill&& fill) noexcept {
  st.phase = kPhaseLibraryInRuntime;
  signal_fence();
  st.driver_reached = true;  // adopt_target's
  st.pending_valid = true;
  AnyRecord& rec = *st.target;
  const ::asyncwatch::hooks::HookInfo& hi = ::asyncwatch::hooks::info(h);
  rec.head.driver_fn = static_cast<uint16_t>(hi.api);
  fill(rec, hi);
  set_phase(st, kPhaseInReal);
  // The real function again: set once (tested by prefill_possible), reloaded rather than kept
  // across set_phase's call.
  return ::asyncwatch::real::g_real[static_cast<size_t>(h)].load(std::memory_order_relaxed);
}

// The shim's save area: the argument registers as pushed, then the caller's return address and
// its stack arguments. Argument i of integer or pointer class (an `unsigned` in the low half of
// its register or slot; the upper half is undefined).
struct StubArgs {
  uint64_t reg[6];  // %rdi, %rsi, %rdx, %rcx, %r8, %r9
  const void* ra;
  uint64_t stack[8];
  template <class T>
  T get(unsigned i) const noexcept {
    const uint64_t v = i < 6 ? reg[i] : stack[i - 6];
    if constexpr (std::is_pointer_v<T>)
      return reinterpret_cast<T>(v);
    else
      return static_cast<T>(v);
  }
};
}  // namespace asyncwatch::calls
