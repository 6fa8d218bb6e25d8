// The loaded object (its link map) that contains an address.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include "common.h"

namespace asyncwatch {

// glibc's _dl_find_object (2.35; this library needs 2.35): a search of the loader's sorted table
// of mappings, async-signal-safe, made for unwinders. Not dladdr/dladdr1: they also look for the
// nearest symbol by walking the object's whole dynamic symbol table (thousands of symbols in a
// real libcuda; four such calls were ~12 us of a traced process's start-up on the development VM).
// With the address range its segments were mapped to: from its first loaded segment's page to its
// last one's end (the loader's own record of it), instead of a dl_iterate_phdr walk of every
// object's program headers.
// Not instrumented: next_after_caller calls these from our dlsym while a sanitizer runtime starts up.
struct LoadedObject {
  link_map* map;
  uintptr_t low, high;  // [low, high)
};
AW_NO_SANITIZE_EARLY inline bool find_loaded_object(const void* addr, LoadedObject* out) noexcept {
  dl_find_object found;
  if (_dl_find_object(const_cast<void*>(addr), &found) != 0) return false;
  *out = {found.dlfo_link_map, reinterpret_cast<uintptr_t>(found.dlfo_map_start),
          reinterpret_cast<uintptr_t>(found.dlfo_map_end)};
  return true;
}

// Its link map alone (nullptr: no loaded object holds `addr`).
AW_NO_SANITIZE_EARLY inline link_map* loaded_object(const void* addr) noexcept {
  LoadedObject o;
  return find_loaded_object(addr, &o) ? o.map : nullptr;
}

}  // namespace asyncwatch
