// cuGetProcAddress: how the CUDA runtime (static or shared), numba-cuda, cuda-python and most
// frameworks reach the driver. We call the real one and, when it returned a function we hook,
// hand back our wrapper for that *exact* symbol: dladdr names what the driver chose for the
// requested version and flags (cuMemcpyHtoDAsync_v2_ptsz for a per-thread-stream caller), so we
// never second-guess the driver's choice. NULL results and symbolStatus pass through untouched.
#include <dlfcn.h>

#include <cstring>

#include "common.h"
#include "cuda_abi.h"
#include "hook_entry.h"
#include "hook_table.h"
#include "real_functions.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;

namespace asyncwatch::proc_address {

// Replaces *pfn by our wrapper when it is a hooked driver function. `requested` is the name the
// caller asked for (used only when dladdr names an alias of the hooked symbol).
void substitute(const char* requested, void** pfn) noexcept {
  if (!pfn || !*pfn || real::is_own(*pfn)) return;
  // Most entry points are not hooked: no dladdr for those (a linear walk of the driver's symbols).
  if (requested && !hooks::any_starts_with(requested)) return;
  ErrnoKeeper keep;
  Dl_info info;
  Hook h = Hook::Count;
  if (dladdr(*pfn, &info) && info.dli_sname && info.dli_saddr == *pfn) {
    h = hooks::find(info.dli_sname);
    real::note_driver_object(*pfn);
  }
  if (h == Hook::Count && requested) {
    // An alias (two exported names at one address): accept a hooked row whose name is the
    // requested one plus a version/stream suffix and whose exported address is this function.
    size_t len = strlen(requested);
    for (size_t i = 0; i < hooks::kHookCount && h == Hook::Count; ++i) {
      const char* name = hooks::info(static_cast<Hook>(i)).name;
      if (strncmp(name, requested, len) != 0) continue;
      const char* rest = name + len;
      if (*rest && strcmp(rest, "_v2") && strcmp(rest, "_ptsz") && strcmp(rest, "_ptds") && strcmp(rest, "_v2_ptsz") &&
          strcmp(rest, "_v2_ptds"))
        continue;
      if (real::driver(static_cast<Hook>(i)) == *pfn) h = static_cast<Hook>(i);
    }
  }
  if (h == Hook::Count) return;
  // Not the function remembered for this name (a second libcuda): handed out unwrapped.
  if (real::remember_driver(h, *pfn)) *pfn = hooks::info(h).wrapper;
}

}  // namespace asyncwatch::proc_address

// The bodies: on x86-64 the exported stubs (hook_entry.h) jump to aw_traced_<sym>, or to
// aw_inrt_<sym> (the same function here) when the runtime calls it inside a traced runtime call;
// with ASYNCWATCH_DISABLE=1 they jump to the driver's function instead, which hands out the
// driver's functions themselves. Elsewhere these are the exported functions.
#if AW_ENTRY_STUBS
#define AW_PROC_ADDRESS_NAME(sym)  aw_traced_##sym
#define AW_PROC_ADDRESS_VISIBILITY __attribute__((visibility("hidden")))
#define AW_PROC_ADDRESS_INRT(sym) \
  extern "C" __attribute__((visibility("hidden"), alias("aw_traced_" #sym))) hooks::fn::sym aw_inrt_##sym;
#else
#define AW_PROC_ADDRESS_NAME(sym)  AW_ENTRY_NAME(sym)
#define AW_PROC_ADDRESS_VISIBILITY AW_ENTRY_VISIBILITY
#define AW_PROC_ADDRESS_INRT(sym)
#endif

extern "C" AW_PROC_ADDRESS_VISIBILITY CUresult AW_PROC_ADDRESS_NAME(cuGetProcAddress_v2)
    AW_PARAMS_cuGetProcAddress_v2(symbol, pfn, version, flags, symbol_status) {
  auto real = reinterpret_cast<hooks::fn::cuGetProcAddress_v2*>(real::driver(Hook::cuGetProcAddress_v2));
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, version, flags, symbol_status);
  if (r == CUDA_SUCCESS) proc_address::substitute(symbol, pfn);
  return r;
}
AW_PROC_ADDRESS_INRT(cuGetProcAddress_v2)

// The CUDA 11.3 form (four arguments), still returned for version 11030.
extern "C" AW_PROC_ADDRESS_VISIBILITY CUresult AW_PROC_ADDRESS_NAME(cuGetProcAddress)
    AW_PARAMS_cuGetProcAddress(symbol, pfn, version, flags) {
  auto real = reinterpret_cast<hooks::fn::cuGetProcAddress*>(real::driver(Hook::cuGetProcAddress));
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS) proc_address::substitute(symbol, pfn);
  return r;
}
AW_PROC_ADDRESS_INRT(cuGetProcAddress)
