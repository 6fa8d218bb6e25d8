#include "loaded_object.h"

#include <sys/auxv.h>

#include <atomic>
#include <cstdint>

namespace asyncwatch {
namespace {

using FindFn = int (*)(void*, dl_find_object*);
constexpr uintptr_t kMissing = 1;         // the running glibc has no _dl_find_object
std::atomic<uintptr_t> g_find{0};         // 0: not looked up yet
std::atomic<link_map*> g_first{nullptr};  // the initial namespace's first link map (the walk's)
std::atomic<uintptr_t> g_page{4096};

// Once, on the library's first use of it: the first caller is on_load (module_map::init_own_range)
// or our dlsym while a sanitizer runtime starts up, before any hook or signal handler of ours can
// run (dlvsym takes the loader's lock).
AW_NO_SANITIZE_EARLY uintptr_t lookup() noexcept {
  uintptr_t f = g_find.load(std::memory_order_acquire);
  if (AW_LIKELY(f)) return f;
  ErrnoKeeper keep;
  void* p = dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35");
  if (!p) {
    dlerror();  // the failed lookup's message is not the application's to find
    void* main_program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
    link_map* first = nullptr;
    if (main_program && dlinfo(main_program, RTLD_DI_LINKMAP, &first) == 0) g_first.store(first);
    if (unsigned long page = getauxval(AT_PAGESZ)) g_page.store(page);
  }
  f = p ? reinterpret_cast<uintptr_t>(p) : kMissing;
  g_find.store(f, std::memory_order_release);
  return f;
}

struct Search {
  uintptr_t addr;
  LoadedObject* out;
  bool found;
};

// The object whose mapping holds the address, with the bounds the loader records for it (l_map_start,
// l_map_end: its first load segment's page to its last one's end) and its link map, the one of the
// same load address and name string (dl_iterate_phdr passes the link map's own l_name).
AW_NO_SANITIZE_EARLY int on_object(dl_phdr_info* info, size_t, void* arg) {
  auto* s = static_cast<Search*>(arg);
  const uintptr_t page = g_page.load(std::memory_order_relaxed);
  uintptr_t low = UINTPTR_MAX, high = 0;
  const void* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      uintptr_t start = info->dlpi_addr + (ph.p_vaddr & ~(page - 1)), end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
      if (start < low) low = start;
      if (end > high) high = end;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<const void*>(info->dlpi_addr + ph.p_vaddr);
    }
  }
  if (s->addr < low || s->addr >= high) return 0;
  link_map* map = nullptr;
  for (link_map* l = g_first.load(std::memory_order_relaxed); l; l = l->l_next)
    if (l->l_addr == info->dlpi_addr && l->l_name == info->dlpi_name) {
      map = l;
      break;
    }
  *s->out = {map, low, high, eh_frame};
  s->found = true;
  return 1;
}

}  // namespace

namespace loaded_objects {
bool have_dl_find_object() noexcept { return lookup() != kMissing; }

// The loader's list is stable while dl_iterate_phdr holds its lock: the link maps are read then.
bool find_by_phdr_walk(const void* addr, LoadedObject* out) noexcept {
  if (!g_first.load(std::memory_order_relaxed)) {  // (a test, where glibc has _dl_find_object)
    void* main_program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
    link_map* first = nullptr;
    if (main_program && dlinfo(main_program, RTLD_DI_LINKMAP, &first) == 0) g_first.store(first);
  }
  Search s{reinterpret_cast<uintptr_t>(addr), out, false};
  dl_iterate_phdr(&on_object, &s);
  return s.found;
}
}  // namespace loaded_objects

bool find_loaded_object(const void* addr, LoadedObject* out) noexcept {
  uintptr_t f = lookup();
  if (AW_LIKELY(f != kMissing)) {
    dl_find_object found;
    if (reinterpret_cast<FindFn>(f)(const_cast<void*>(addr), &found) != 0) return false;
    *out = {found.dlfo_link_map, reinterpret_cast<uintptr_t>(found.dlfo_map_start),
            reinterpret_cast<uintptr_t>(found.dlfo_map_end), found.dlfo_eh_frame};
    return true;
  }
  return loaded_objects::find_by_phdr_walk(addr, out) && out->map;
}

}  // namespace asyncwatch

// libgcc's static unwinder (_Unwind_Find_FDE, GCC 12 built on glibc 2.35 or later) calls
// _dl_find_object for every frame it unwinds and, unlike its dl_iterate_phdr path, has no fallback:
// -Wl,--wrap=_dl_find_object sends it here. What glibc's buys: the full unwind that the first call
// from each call site pays ("a few us", docs/performance.md, "What makes it cost more"), a lock-free
// binary search per frame where the walk visits every loaded object's program headers under the
// loader's lock. The callgrind per-call figures (launch, pinned copy: no stack) do not include it.
// (Unused in builds without the glibc 2.28 pins, whose unwinder calls glibc's directly.)
extern "C" __attribute__((visibility("hidden"))) AW_NO_SANITIZE_EARLY int __wrap__dl_find_object(
    void* addr, dl_find_object* result) {
  using namespace asyncwatch;
  uintptr_t f = lookup();
  if (AW_LIKELY(f != kMissing)) return reinterpret_cast<FindFn>(f)(addr, result);
  LoadedObject o;
  if (!loaded_objects::find_by_phdr_walk(addr, &o)) return -1;
  *result = {};
  result->dlfo_map_start = reinterpret_cast<void*>(o.low);
  result->dlfo_map_end = reinterpret_cast<void*>(o.high);
  result->dlfo_link_map = o.map;
  result->dlfo_eh_frame = const_cast<void*>(o.eh_frame);
  return 0;
}
