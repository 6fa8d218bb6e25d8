// How an exported wrapper hands over to its traced body, out of line (docs/performance.md, "The
// disabled path"). The exported function loads the real function and tests the ASYNCWATCH_DISABLE
// bit: when set, it tail-calls the real function, having set up no frame and touched nothing else.
// Otherwise it calls the body with the same arguments, which an optimizing compiler makes a jump
// (a sibling call): the body then has the wrapper's return address and frame as its own, the
// application's call site (the key of the call-site cache, and how a driver call made by the
// runtime is told from the application's).
//
// Where the compiler does not make it a jump (unoptimized and sanitized builds), the body's return
// address lies in the wrapper, just after its start: the body then takes the call site the wrapper
// stored in `tl_entry_ra` before the call. (A signal handler's CUDA call between that store and the
// body's load would replace it: only in those builds, and only for that call's call site.)
#pragma once

#include <cstdint>

#include "call_context.h"
#include "common.h"
#include "real_functions.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

extern AW_TLS_SHARED const void* tl_entry_ra;

// A call from a wrapper's own code returns to within this many bytes of its start.
inline constexpr uintptr_t kWrapperSpan = 512;

// In the body: the call site. `own_ra` and `own_cfa` are the body's return address and canonical
// frame address; `wrapper` the exported function (or instance) that called or jumped to it. The
// frame is what __builtin_frame_address(0) gave in the wrapper (the CFA minus the return address
// and the saved frame pointer).
inline Caller entry_caller(const void* own_ra, const void* own_cfa, const void* wrapper) noexcept {
  const uintptr_t ra = reinterpret_cast<uintptr_t>(own_ra);
  const bool called = ra - reinterpret_cast<uintptr_t>(wrapper) < kWrapperSpan;
  return Caller{AW_LIKELY(!called) ? own_ra : tl_entry_ra, static_cast<const char*>(own_cfa) - 2 * sizeof(void*)};
}

}  // namespace asyncwatch::calls

// In the exported function, on the traced path only.
#define AW_NOTE_ENTRY() ::asyncwatch::calls::tl_entry_ra = __builtin_return_address(0)
// First statement of a body whose exported function (or instance) is `wrapper`.
#define AW_ENTRY_CALLER(wrapper)                                                   \
  const ::asyncwatch::calls::Caller aw_caller = ::asyncwatch::calls::entry_caller( \
      __builtin_return_address(0), __builtin_dwarf_cfa(), reinterpret_cast<const void*>(wrapper))

// Defines the exported driver wrapper `sym` (parameters `params`, forwarded as `args`) and its body,
// `aw_traced_<sym>` (hidden, out of line), whose statements follow `args`; in them `aw_caller` (the
// call site), `real` (the driver's function, its own type) and `call` (it, called with `args`) are in
// scope.
#define AW_DRIVER_HOOK(sym, params, args, ...)                                                                        \
  extern "C" AW_EXPORT ::asyncwatch::cuda::CUresult sym params;                                                       \
  extern "C" __attribute__((visibility("hidden"), noinline)) ::asyncwatch::cuda::CUresult aw_traced_##sym params {    \
    AW_ENTRY_CALLER(&::sym);                                                                                          \
    const auto real = reinterpret_cast<decltype(&::sym)>(::asyncwatch::real::driver(::asyncwatch::hooks::Hook::sym)); \
    if (!real) return ::asyncwatch::cuda::CUDA_ERROR_NOT_INITIALIZED;                                                 \
    [[maybe_unused]] auto call = [&] { return real args; };                                                           \
    __VA_ARGS__                                                                                                       \
  }                                                                                                                   \
  extern "C" AW_EXPORT ::asyncwatch::cuda::CUresult sym params {                                                      \
    const auto real = reinterpret_cast<decltype(&::sym)>(                                                             \
        ::asyncwatch::real::g_real[static_cast<size_t>(::asyncwatch::hooks::Hook::sym)].load(                         \
            std::memory_order_acquire));                                                                              \
    if (AW_UNLIKELY(::asyncwatch::trace_writer::disabled_now()) && AW_LIKELY(real)) return real args;                 \
    AW_NOTE_ENTRY();                                                                                                  \
    return aw_traced_##sym args;                                                                                      \
  }
