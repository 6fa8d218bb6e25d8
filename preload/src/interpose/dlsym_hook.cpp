// dlsym: how programs that dlopen libcuda find cuGetProcAddress (the CUDA runtime, CuPy, XLA)
// or driver functions directly. Our dlsym asks glibc's, then hands out our wrapper for hooked
// driver (and runtime) names. Traps handled here:
//  - RTLD_NEXT must be resolved relative to the *caller* (glibc uses the return address, which
//    inside this function is us): we walk the link-map chain after the caller's object.
//  - Recursion: anything we call that calls dlsym (none should) goes straight to glibc.
#include <dlfcn.h>

#include <atomic>

#include "common.h"
#include "hook_table.h"
#include "real_functions.h"
#include "runtime_hooks.h"

using namespace asyncwatch;

namespace {
AW_TLS bool tl_in_dlsym;
}

extern "C" AW_EXPORT void* dlsym(void* handle, const char* name) noexcept {
  real::DlsymFn real_dlsym = real::dlsym_fn();
  if (!real_dlsym) return nullptr;
  void* caller = __builtin_return_address(0);
  ErrnoKeeper keep;  // dlerror state is separate from errno; errno must not change
  if (tl_in_dlsym) {
    return handle == RTLD_NEXT ? real::next_after_caller(caller, name) : real_dlsym(handle, name);
  }
  tl_in_dlsym = true;
  void* p = handle == RTLD_NEXT ? real::next_after_caller(caller, name) : real_dlsym(handle, name);
  if (p && !real::is_own(p)) {
    hooks::Hook h = hooks::find(name);
    if (h != hooks::Hook::Count) {
      real::note_driver_object(p);
      // Another function than the one remembered for this name (a second libcuda, a shim): handed
      // out as it is, so that the caller reaches exactly what it asked for.
      if (real::remember_driver(h, p)) p = hooks::info(h).wrapper;
    } else if (name[0] == 'c' && name[1] == 'u' && name[2] == 'd' && name[3] == 'a') {
      if (void* w = runtime_hooks::wrapper_for(name, p)) p = w;
    } else if (name[0] == '_' && name[1] == '_' && name[2] == 'c' && name[3] == 'u' && name[4] == 'd') {
      if (void* w = runtime_hooks::wrapper_for(name, p)) p = w;
    }
  }
  tl_in_dlsym = false;
  return p;
}

// dlclose: a runtime instance whose object this unloaded must not be called again (its slot
// serves the next object; the exported wrappers look their functions up anew).
namespace {
using DlcloseFn = int (*)(void*);
std::atomic<DlcloseFn> g_dlclose{nullptr};  // not a guarded static: see real::next_after_caller
}  // namespace

extern "C" AW_EXPORT int dlclose(void* handle) noexcept {
  DlcloseFn real_dlclose = g_dlclose.load(std::memory_order_acquire);
  if (!real_dlclose) {
    real_dlclose = reinterpret_cast<DlcloseFn>(real::dlsym_fn()(RTLD_NEXT, "dlclose"));
    g_dlclose.store(real_dlclose, std::memory_order_release);
  }
  if (!real_dlclose) return -1;
  int r = real_dlclose(handle);
  ErrnoKeeper keep;
  runtime_hooks::forget_unloaded();
  return r;
}
