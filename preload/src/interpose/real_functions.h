// Finding the real functions behind our wrappers without ever going through our own dlsym.
#pragma once

#include <atomic>

#include "common.h"
#include "hook_table.h"

namespace asyncwatch::real {

using DlsymFn = void* (*)(void*, const char*);
// glibc's dlsym: dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), falling back to "GLIBC_2.2.5".
DlsymFn dlsym_fn() noexcept;

// True for addresses inside libasyncwatch itself (a lookup that found our own export).
bool is_own(const void* p) noexcept;

// The driver's function for a hooked entry point: remembered from what dlsym/cuGetProcAddress
// returned, else looked up next after us and then in the loaded libcuda. Inline: every wrapper's
// first load. The exported stubs (entry_stubs.cpp) load it by its assembler name.
extern std::atomic<void*> g_real[hooks::kHookCount] __asm__("aw_driver_real");
__attribute__((noinline)) void* resolve(hooks::Hook h) noexcept;  // the first time one is missing
inline void* driver(hooks::Hook h) noexcept {
  void* p = g_real[static_cast<size_t>(h)].load(std::memory_order_acquire);
  if (AW_LIKELY(p)) return p;
  return resolve(h);
}
// Remember `fn` as the real function for `h` (the first one a lookup found). True when our wrapper
// calls `fn`: `fn` is what is remembered; false if `fn` is ours or another function than the one
// remembered (a second libcuda, a shim in front of it), which is then handed out unwrapped.
bool remember_driver(hooks::Hook h, void* fn) noexcept;
// Looks `fn` (a function the driver handed out) up to learn which libcuda is in use. The library
// keeps a reference to it (dlopen RTLD_NOLOAD): the driver is never unloaded under its wrappers.
void note_driver_object(void* fn) noexcept;
// Whether `ra` lies in the libcuda in use (a driver calling its own entry points: nested).
bool driver_text_contains(const void* ra) noexcept;

// A driver function we call for our own purposes (classification, evidence, names), looked up
// by name in the libcuda in use. nullptr until the application reached the driver.
void* driver_helper(const char* name) noexcept;

// A CUDA runtime function for the exported wrappers: next after us, or in the first libcudart*
// loaded RTLD_LOCAL (PyTorch). Keeps no reference to it (dlclose unloads it; runtime_hooks
// forgets it then).
void* runtime(const char* name) noexcept;

// The object (link map) containing `addr`, for RTLD_NEXT relative to a caller.
void* next_after_caller(const void* caller, const char* name) noexcept;

}  // namespace asyncwatch::real
