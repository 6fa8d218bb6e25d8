// What kind of memory a host-side pointer of a copy is: pageable, pinned, managed or device.
// Fast path: the ranges this process pinned through calls we intercepted (cuMemAllocHost,
// cuMemHostAlloc, cuMemHostRegister), read without locks. Miss: the driver's
// cuPointerGetAttributes (never the runtime's cudaPointerGetAttributes, whose failure would
// overwrite the application's cudaGetLastError state).
#pragma once

#include <atomic>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"

namespace asyncwatch::classify {

// The registry of pinned ranges. Writers (alloc/free/register/unregister, rare) take a mutex and
// bump a sequence counter; readers retry while a write is in progress. Arrays only grow and old
// arrays are never freed, so a reader racing a writer never touches freed memory.
class PinnedRangeRegistry {
 public:
  void add(uint64_t begin, uint64_t size) noexcept;
  // Removes the range that starts at `begin` (free and unregister take the base pointer).
  bool remove(uint64_t begin) noexcept;
  // True when `addr` lies inside a registered range (interior pointers included).
  bool contains(uint64_t addr) const noexcept;
  uint64_t size() const noexcept;
  void clear() noexcept;
};

PinnedRangeRegistry& pinned_ranges() noexcept;

// pthread_atfork handlers (lifecycle.cpp): the forking thread holds the writers' lock across fork(),
// so the child never inherits it held by a thread that does not exist there (a deadlock at the
// child's first cuMemHostAlloc) nor a write half done (an odd sequence count: every reader spins).
void lock_for_fork() noexcept;
void unlock_after_fork() noexcept;

// The real cuPointerGetAttributes, set once the driver is known (interpose/real_driver.cpp).
using PointerGetAttributesFn = int (*)(unsigned numAttributes, int* attributes, void** data, uint64_t ptr);
void set_pointer_query(PointerGetAttributesFn fn) noexcept;

namespace detail {
// The pinned range this thread found last (not in reentrant calls), valid while the registry's
// sequence number is the one it was found under (every add and remove changes it): a loop copying
// from one pinned buffer skips the search (docs/performance.md).
struct LastHit {
  uint64_t seq, begin, end;
};
extern AW_TLS_SHARED LastHit tl_last_hit;
extern AW_TLS_SHARED bool tl_registry_only;  // RegistryOnlyScope
extern std::atomic<uint64_t> g_seq;          // odd while a writer is changing the registry
}  // namespace detail

// classify_pointer's first test: `addr` in the pinned range this thread found last (Pinned).
// Inline, no call: the copies' hot path (a prefilled copy, hook_entry.h) makes it alone.
inline bool last_pinned_hit(uint64_t addr) noexcept {
  const detail::LastHit& last = detail::tl_last_hit;
  return AW_LIKELY(addr - last.begin < last.end - last.begin) &&
         last.seq == detail::g_seq.load(std::memory_order_acquire) && !detail::tl_registry_only;
}

// Registry first, then the driver. Never fails: Unknown when nothing could tell.
trace::MemoryKind classify_pointer(uint64_t addr) noexcept;

// Set while the calling thread records a call that interrupted a driver function (a signal
// handler's, interpose/thread_state.h): the driver is not asked (the interrupted function may hold the very
// locks the query needs); pointers not in the registry are Unknown.
class RegistryOnlyScope {
 public:
  RegistryOnlyScope() noexcept;
  ~RegistryOnlyScope();
  RegistryOnlyScope(const RegistryOnlyScope&) = delete;
  RegistryOnlyScope& operator=(const RegistryOnlyScope&) = delete;

 private:
  bool saved_;
};

}  // namespace asyncwatch::classify
