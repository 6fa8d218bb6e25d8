// The loaded object (its link map) that contains an address.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include "common.h"

namespace asyncwatch {

// The address range its segments were mapped to: from its first loaded segment's page to its last
// one's end (the loader's own record of it), and its unwind tables (PT_GNU_EH_FRAME, or null).
// Not dladdr/dladdr1: they also look for the nearest symbol by walking the object's whole dynamic
// symbol table (thousands of symbols in a real libcuda; four such calls were ~12 us of a traced
// process's start-up on the development VM).
struct LoadedObject {
  link_map* map;
  uintptr_t low, high;  // [low, high)
  const void* eh_frame;
};

// glibc's _dl_find_object (2.35) where the running glibc has it: a lock-free search of the loader's
// sorted table of mappings, async-signal-safe, made for unwinders. Looked up by version when the
// library loads (the library itself needs glibc 2.28 only); on an older glibc, a dl_iterate_phdr
// walk instead, which takes the loader's lock (as libgcc's unwinder does there) and finds link maps
// of the initial namespace only. libgcc's static unwinder reaches this too (the stack capture's
// _Unwind_Backtrace: -Wl,--wrap=_dl_find_object, cmake/AsyncwatchGlibc228.cmake).
// Not instrumented: next_after_caller calls these from our dlsym while a sanitizer runtime starts up.
AW_NO_SANITIZE_EARLY bool find_loaded_object(const void* addr, LoadedObject* out) noexcept;

// Its link map alone (nullptr: no loaded object holds `addr`).
AW_NO_SANITIZE_EARLY inline link_map* loaded_object(const void* addr) noexcept {
  LoadedObject o;
  return find_loaded_object(addr, &o) ? o.map : nullptr;
}

namespace loaded_objects {
// Which search find_loaded_object uses (glibc's, or the dl_iterate_phdr walk); tests compare them.
bool have_dl_find_object() noexcept;
AW_NO_SANITIZE_EARLY bool find_by_phdr_walk(const void* addr, LoadedObject* out) noexcept;
}  // namespace loaded_objects

}  // namespace asyncwatch
