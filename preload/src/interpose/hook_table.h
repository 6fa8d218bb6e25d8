// The one table of intercepted driver entry points: exact exported name, the Api id recorded
// for it, and whether it is a per-thread-default-stream (_ptsz/_ptds) variant. Each row has an
// exported wrapper of the same name (driver_hooks_*.cpp, proc_address.cpp); dlsym and
// cuGetProcAddress hand that wrapper out in place of the driver's function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "cuda_abi.h"

// The rows (symbol, api, per_thread, record, blocking, (parameter types)) and each row's
// AW_PARAMS_<symbol>: generated from driver_hooks.txt and the toolkit's cuda.h
// (preload/tools/gen_driver_hooks.py), which also writes the driver part of exports.map.
#include "driver_hook_table.inc"

#define AW_DRIVER_HOOKS(X) AW_DRIVER_HOOK_ROWS(X)
// The exported wrapper as the library's own pointers name it (HookInfo::wrapper, the runtime
// wrappers dlsym hands out): on x86-64 the exported stub's hidden alias (interpose/entry_stubs.cpp),
// bound at link time, so that the loader needs no symbol lookup for them (R_X86_64_RELATIVE).
#if defined(__x86_64__)
#define AW_EXPORTED_NAME(sym)  aw_stub_##sym
#define AW_EXPORTED_VISIBILITY __attribute__((visibility("hidden")))
#else
#define AW_EXPORTED_NAME(sym)  sym
#define AW_EXPORTED_VISIBILITY __attribute__((visibility("default")))
#endif

// The function type of each hooked entry point (its wrapper's and its real function's), as the
// table gives it: hooks::fn::cuMemcpyHtoD_v2.
namespace asyncwatch::hooks::fn {
using namespace asyncwatch::cuda;
#define AW_HOOK_FN_TYPE(sym, api, pt, record, blocking, types) using sym = CUresult types;
AW_DRIVER_HOOKS(AW_HOOK_FN_TYPE)
#undef AW_HOOK_FN_TYPE
}  // namespace asyncwatch::hooks::fn

namespace asyncwatch::hooks {

enum class Hook : uint16_t {
#define AW_HOOK_ENUM(sym, ...) sym,
  AW_DRIVER_HOOKS(AW_HOOK_ENUM)
#undef AW_HOOK_ENUM
      Count
};
inline constexpr size_t kHookCount = static_cast<size_t>(Hook::Count);

// The record a hook's wrapper writes and whether the host waits for the work by the API's contract
// (kFlagSynchronousApi), as constants: a wrapper passes its Hook as a template argument.
struct HookRow {
  trace::RecordType record;
  bool blocking;
};
namespace detail {
inline constexpr bool Sync = true, Async = false;  // the table's blocking column
inline constexpr HookRow kHookRows[] = {
#define AW_HOOK_ROW_CONSTANTS(sym, api, pt, record, blocking, types) {trace::RecordType::record, blocking},
    AW_DRIVER_HOOK_ROWS(AW_HOOK_ROW_CONSTANTS)
#undef AW_HOOK_ROW_CONSTANTS
};
}  // namespace detail
constexpr const HookRow& row(Hook h) { return detail::kHookRows[static_cast<size_t>(h)]; }

struct HookInfo {
  const char* name;
  trace::Api api;
  bool per_thread;
  void* wrapper;  // our exported function of the same name (AW_EXPORTED_NAME)
};

const HookInfo& info(Hook h) noexcept;
// Exact-name lookup (no prefix matching): returns Hook::Count when `name` is not hooked.
Hook find(const char* name) noexcept;
// Whether a hooked name starts with `prefix` (cuGetProcAddress's name: the function it returns is
// that name or a form of it, e.g. cuMemcpyHtoDAsync -> cuMemcpyHtoDAsync_v2_ptsz).
bool any_starts_with(const char* prefix) noexcept;

}  // namespace asyncwatch::hooks
