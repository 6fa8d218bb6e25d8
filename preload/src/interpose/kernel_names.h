// Kernel names of launches (and other interned text) as StringRecords, each written once per
// trace: a per-thread direct-mapped cache whose hit is inline (every launch asks), a process-wide
// table behind it.
#pragma once

#include <cstdint>

#include "common.h"
#include "cuda_abi.h"
#include "thread_state.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

// Kernel name of a CUfunction/CUkernel, interned as a StringRecord; *first = first launch of
// this function in the process.
struct NameCacheEntry {
  void* fn;
  uint32_t id;
  uint32_t generation;
};
inline constexpr uint32_t kNameCacheSize = 128;
inline uint32_t name_cache_slot(const void* f) noexcept {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(f) >> 4) % kNameCacheSize);
}
extern AW_TLS_SHARED NameCacheEntry* tl_kernel_names;  // kNameCacheSize entries, or nullptr
uint32_t kernel_name_id_slow(cuda::CUfunction f, bool* first) noexcept;
// Any other interned text (NVTX range names): the id of its StringRecord (written on first use),
// in the kernel names' id space; 0 when it cannot be interned. Takes the name table's lock.
uint32_t string_id(const char* text, uint32_t len) noexcept;
// The cache's hit alone (`gen`: the trace's generation): `*id` set when `f` is cached for this trace
// and the call is not reentrant; otherwise false and nothing done (kernel_name_id_slow's case).
inline bool kernel_name_cached(cuda::CUfunction f, uint32_t gen, uint32_t* id) noexcept {
  const NameCacheEntry* names = tl_kernel_names;
  if (AW_LIKELY(names && f)) {
    const NameCacheEntry& e = names[name_cache_slot(f)];
    if (AW_LIKELY(e.fn == f && e.generation == gen && !tl_locals.call.reentrant)) {
      *id = e.id;
      return true;
    }
  }
  return false;
}
inline uint32_t kernel_name_id(cuda::CUfunction f, bool* first) noexcept {
  uint32_t id;
  if (AW_LIKELY(kernel_name_cached(f, trace_writer::generation(), &id))) {
    *first = false;
    return id;
  }
  return kernel_name_id_slow(f, first);
}
// Frees the calling thread's cache (release_thread).
void release_kernel_name_cache() noexcept;

}  // namespace asyncwatch::calls
