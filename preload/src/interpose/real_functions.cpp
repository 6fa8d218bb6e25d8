#include "real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "classify/host_memory_classifier.h"
#include "call_context.h"
#include "common.h"
#include "loaded_object.h"
#include "stacks/module_map.h"

namespace asyncwatch::real {
std::atomic<void*> g_real[hooks::kHookCount];
namespace {

std::atomic<DlsymFn> g_dlsym{nullptr};
std::atomic<void*> g_driver_handle{nullptr};
std::atomic<uintptr_t> g_driver_lo{0}, g_driver_hi{0};  // address range of the libcuda in use

void* open_noload(const char* path) { return dlopen(path, RTLD_LAZY | RTLD_NOLOAD); }

// The address range of the loaded object containing `fn`.
void note_driver_range(const void* fn) noexcept {
  if (g_driver_hi.load(std::memory_order_acquire)) return;
  LoadedObject o;
  if (!find_loaded_object(fn, &o)) return;
  g_driver_lo.store(o.low, std::memory_order_relaxed);
  g_driver_hi.store(o.high, std::memory_order_release);
}

void* driver_handle() {
  void* h = g_driver_handle.load(std::memory_order_acquire);
  if (h) return h;
  // The application reached one of our driver wrappers, so a libcuda is loaded: find it by
  // soname without loading anything new.
  h = open_noload("libcuda.so.1");
  if (!h) h = open_noload("libcuda.so");
  if (h) {
    void* expected = nullptr;
    if (!g_driver_handle.compare_exchange_strong(expected, h)) h = expected;
    classify::set_pointer_query(
        reinterpret_cast<classify::PointerGetAttributesFn>(dlsym_fn()(h, "cuPointerGetAttributes")));
  }
  return h;
}

int find_cudart(dl_phdr_info* info, size_t, void* arg) {
  const char* name = info->dlpi_name;
  if (name && strstr(name, "libcudart")) {
    *static_cast<const char**>(arg) = name;
    return 1;
  }
  return 0;
}

}  // namespace

DlsymFn dlsym_fn() noexcept {
  DlsymFn f = g_dlsym.load(std::memory_order_acquire);
  if (AW_LIKELY(f)) return f;
  f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
  if (!f) f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
  g_dlsym.store(f, std::memory_order_release);
  return f;
}

bool is_own(const void* p) noexcept { return module_map::is_own_address(reinterpret_cast<uint64_t>(p)); }

bool remember_driver(hooks::Hook h, void* fn) noexcept {
  if (!fn || is_own(fn)) return false;
  void* expected = nullptr;
  if (g_real[static_cast<size_t>(h)].compare_exchange_strong(expected, fn)) return true;
  return expected == fn;
}

bool driver_text_contains(const void* ra) noexcept {
  uintptr_t a = reinterpret_cast<uintptr_t>(ra), lo = g_driver_lo.load(std::memory_order_relaxed);
  return a - lo < g_driver_hi.load(std::memory_order_acquire) - lo;
}

void note_driver_object(void* fn) noexcept {
  note_driver_range(fn);
  if (g_driver_handle.load(std::memory_order_acquire)) return;
  const link_map* lm = loaded_object(fn);
  if (!lm || !lm->l_name) return;
  void* h = open_noload(lm->l_name);
  if (!h) return;
  void* expected = nullptr;
  if (g_driver_handle.compare_exchange_strong(expected, h)) {
    classify::set_pointer_query(
        reinterpret_cast<classify::PointerGetAttributesFn>(dlsym_fn()(h, "cuPointerGetAttributes")));
  }
}

namespace {
// Linked with -lcuda: the application called our export; the driver comes after us (else it is
// the loaded libcuda).
// `pin`: also note the driver object (its address range, dlopen RTLD_NOLOAD); not when this thread
// interrupted the library's own code (a handler the library did not see being installed, e.g.
// under a sanitizer runtime, whose dlopen interceptor holds a lock of its own meanwhile).
void resolve_one(hooks::Hook h, bool pin) noexcept {
  const char* name = hooks::info(h).name;
  void* p = dlsym_fn()(RTLD_NEXT, name);
  if ((!p || is_own(p)) && pin) {
    void* dh = driver_handle();
    p = dh ? dlsym_fn()(dh, name) : nullptr;
  }
  if (!p || is_own(p)) return;
  if (pin) note_driver_object(p);
  remember_driver(h, p);
}

std::atomic<bool> g_all_resolved{false};

}  // namespace

// Every entry point at once, the first time one is missing: the loader's lock is taken here, so
// this runs as the library's own code (a signal meanwhile is held back), and a later first call of
// another entry point, perhaps from a signal handler, finds its function without a lookup.
void* resolve(hooks::Hook want) noexcept {
  bool interrupted = calls::in_library(calls::thread_state().phase);
  calls::LibraryScope scope;
  ErrnoKeeper keep;
  if (interrupted) {
    resolve_one(want, false);
  } else if (!g_all_resolved.exchange(true)) {
    for (size_t i = 0; i < hooks::kHookCount; ++i)
      if (!g_real[i].load(std::memory_order_acquire)) resolve_one(static_cast<hooks::Hook>(i), true);
  } else if (!g_real[static_cast<size_t>(want)].load(std::memory_order_acquire)) {
    resolve_one(want, true);
  }
  return g_real[static_cast<size_t>(want)].load(std::memory_order_acquire);
}

void* driver_helper(const char* name) noexcept {
  void* h = driver_handle();
  if (!h) return nullptr;
  void* p = dlsym_fn()(h, name);
  return is_own(p) ? nullptr : p;
}

void* runtime(const char* name) noexcept {
  ErrnoKeeper keep;
  void* p = dlsym_fn()(RTLD_NEXT, name);
  if (p && !is_own(p)) return p;
  // PyTorch loads libcudart with RTLD_LOCAL: not in the global scope, so RTLD_NEXT misses it. The
  // reference the lookup takes is given back at once (the application may unload it).
  const char* path = nullptr;
  dl_iterate_phdr(find_cudart, &path);
  void* h = path ? open_noload(path) : nullptr;
  if (!h) return nullptr;
  p = dlsym_fn()(h, name);
  static auto real_dlclose = reinterpret_cast<int (*)(void*)>(dlsym_fn()(RTLD_NEXT, "dlclose"));
  if (real_dlclose) real_dlclose(h);  // not ours: that would scan the runtime instances again
  return is_own(p) ? nullptr : p;
}

AW_NO_SANITIZE_EARLY void* next_after_caller(const void* caller, const char* name) noexcept {
  link_map* lm = caller ? loaded_object(caller) : nullptr;
  if (lm && !is_own(caller)) {
    // What glibc's RTLD_NEXT means for the caller: the first definition in an object loaded
    // after the caller's. Calling the real dlsym(RTLD_NEXT) from here would search after *us*.
    // A link_map is not a valid dlsym handle for objects loaded at startup (their search list
    // is not set up), so each object is reopened with RTLD_NOLOAD, and a definition found in one
    // of its dependencies rather than in the object itself is skipped.
    // A caller loaded before us (another preloaded library, e.g. the ASan runtime resolving its
    // interceptors during its own start-up, when even dlopen is not usable yet): the objects
    // after it begin with us, and we define no function it looks up there but our own
    // interposers, so glibc's RTLD_NEXT from here (after us) gives the same answer.
    // Our own link map, found once. Not a static initialized by a lambda: its guard calls
    // __cxa_guard_acquire/release, which the TSan runtime intercepts, and this runs while the TSan
    // runtime resolves its interceptors, before it can handle one (the atomic below is constant-
    // initialized, without a guard). Two threads may both look it up; they store the same value.
    static std::atomic<link_map*> g_self{nullptr};
    link_map* self = g_self.load(std::memory_order_relaxed);
    if (!self) {
      self = loaded_object(reinterpret_cast<const void*>(&next_after_caller));
      g_self.store(self, std::memory_order_relaxed);
    }
    // (Not for the main program, always first in the list: RTLD_NEXT from it must find us.)
    for (link_map* next = lm->l_prev ? lm->l_next : nullptr; next && self; next = next->l_next)
      if (next == self) return dlsym_fn()(RTLD_NEXT, name);
    for (link_map* next = lm->l_next; next; next = next->l_next) {
      void* h = open_noload(next->l_name && *next->l_name ? next->l_name : nullptr);
      if (!h) continue;
      void* p = dlsym_fn()(h, name);
      if (p && loaded_object(p) == next) return p;
    }
    return nullptr;
  }
  return dlsym_fn()(RTLD_NEXT, name);
}

}  // namespace asyncwatch::real
