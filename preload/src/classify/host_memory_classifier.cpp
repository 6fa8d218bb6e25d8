#include "host_memory_classifier.h"

#include <atomic>
#include <mutex>

#include "cuda_abi.h"

namespace asyncwatch::classify {
namespace detail {
std::atomic<uint64_t> g_seq{0};
AW_TLS_SHARED bool tl_registry_only;
AW_TLS_SHARED LastHit tl_last_hit;
}  // namespace detail
namespace {

struct Range {
  std::atomic<uint64_t> begin;
  std::atomic<uint64_t> end;
};

struct Array {
  Range* ranges;
  uint64_t capacity;
};

// Sorted by begin, non-overlapping (the driver never hands out overlapping pinned ranges).
std::atomic<Range*> g_ranges{nullptr};
std::atomic<uint64_t> g_count{0};
std::atomic<uint64_t> g_capacity{0};
std::mutex& write_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::atomic<PointerGetAttributesFn> g_query{nullptr};

PinnedRangeRegistry g_registry;
using detail::g_seq;
using detail::tl_registry_only;

void begin_write() { g_seq.fetch_add(1, std::memory_order_acq_rel); }
void end_write() { g_seq.fetch_add(1, std::memory_order_release); }

// Index of the first range with begin > addr.
uint64_t upper_bound(Range* r, uint64_t n, uint64_t addr) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = (lo + hi) / 2;
    if (r[mid].begin.load(std::memory_order_relaxed) <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

void PinnedRangeRegistry::add(uint64_t begin, uint64_t size) noexcept {
  if (!begin || !size) return;
  std::lock_guard<std::mutex> lock(write_mutex());
  uint64_t n = g_count.load();
  uint64_t cap = g_capacity.load();
  Range* r = g_ranges.load();
  if (n + 1 > cap) {
    // Grow into a new array; the old one is leaked on purpose (a concurrent reader may still be
    // searching it). Geometric growth keeps the total leaked below the final size.
    uint64_t ncap = cap ? cap * 2 : 256;
    Range* nr = new (std::nothrow) Range[ncap];
    if (!nr) return;
    for (uint64_t i = 0; i < n; ++i) {
      nr[i].begin.store(r[i].begin.load());
      nr[i].end.store(r[i].end.load());
    }
    begin_write();
    g_ranges.store(nr);
    g_capacity.store(ncap);
    end_write();
    r = nr;
  }
  begin_write();
  uint64_t pos = upper_bound(r, n, begin);
  for (uint64_t i = n; i > pos; --i) {
    r[i].begin.store(r[i - 1].begin.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r[i].end.store(r[i - 1].end.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  r[pos].begin.store(begin, std::memory_order_relaxed);
  r[pos].end.store(begin + size, std::memory_order_relaxed);
  g_count.store(n + 1);
  end_write();
}

bool PinnedRangeRegistry::remove(uint64_t begin) noexcept {
  std::lock_guard<std::mutex> lock(write_mutex());
  uint64_t n = g_count.load();
  Range* r = g_ranges.load();
  if (!r || !n) return false;
  uint64_t pos = upper_bound(r, n, begin);
  if (pos == 0 || r[pos - 1].begin.load() != begin) return false;
  begin_write();
  for (uint64_t i = pos - 1; i + 1 < n; ++i) {
    r[i].begin.store(r[i + 1].begin.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r[i].end.store(r[i + 1].end.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  g_count.store(n - 1);
  end_write();
  return true;
}

bool PinnedRangeRegistry::contains(uint64_t addr) const noexcept {
  for (;;) {
    uint64_t s0 = g_seq.load(std::memory_order_acquire);
    if (s0 & 1) continue;
    Range* r = g_ranges.load(std::memory_order_acquire);
    uint64_t n = g_count.load(std::memory_order_acquire);
    uint64_t cap = g_capacity.load(std::memory_order_acquire);
    bool found = false;
    if (r && n && n <= cap) {
      uint64_t pos = upper_bound(r, n, addr);
      found = pos > 0 && addr < r[pos - 1].end.load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_seq.load(std::memory_order_relaxed) == s0) return found;
  }
}

uint64_t PinnedRangeRegistry::size() const noexcept { return g_count.load(); }

void PinnedRangeRegistry::clear() noexcept {
  std::lock_guard<std::mutex> lock(write_mutex());
  begin_write();
  g_count.store(0);
  end_write();
}

PinnedRangeRegistry& pinned_ranges() noexcept { return g_registry; }

void lock_for_fork() noexcept { write_mutex().lock(); }
void unlock_after_fork() noexcept { write_mutex().unlock(); }

void set_pointer_query(PointerGetAttributesFn fn) noexcept { g_query.store(fn, std::memory_order_release); }

RegistryOnlyScope::RegistryOnlyScope() noexcept : saved_(tl_registry_only) { tl_registry_only = true; }
RegistryOnlyScope::~RegistryOnlyScope() { tl_registry_only = saved_; }

namespace {
using detail::LastHit;
using detail::tl_last_hit;

bool contains_remembering(uint64_t addr) noexcept {
  for (;;) {
    uint64_t s0 = g_seq.load(std::memory_order_acquire);
    if (s0 & 1) continue;
    Range* r = g_ranges.load(std::memory_order_acquire);
    uint64_t n = g_count.load(std::memory_order_acquire);
    uint64_t cap = g_capacity.load(std::memory_order_acquire);
    uint64_t begin = 0, end = 0;
    if (r && n && n <= cap) {
      uint64_t pos = upper_bound(r, n, addr);
      if (pos > 0) {
        begin = r[pos - 1].begin.load(std::memory_order_relaxed);
        end = r[pos - 1].end.load(std::memory_order_relaxed);
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_seq.load(std::memory_order_relaxed) != s0) continue;
    if (addr < begin || addr >= end) return false;
    if (!tl_registry_only) tl_last_hit = LastHit{s0, begin, end};
    return true;
  }
}
}  // namespace

trace::MemoryKind classify_pointer(uint64_t addr) noexcept {
  using trace::MemoryKind;
  // Not in a reentrant call (a signal handler's, registry only): it may have interrupted this
  // thread's own update of the remembered range.
  if (AW_LIKELY(last_pinned_hit(addr))) return MemoryKind::Pinned;
  if (contains_remembering(addr)) return MemoryKind::Pinned;
  PointerGetAttributesFn q = g_query.load(std::memory_order_acquire);
  if (!q || tl_registry_only) return MemoryKind::Unknown;
  int attrs[2] = {cuda::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, cuda::CU_POINTER_ATTRIBUTE_IS_MANAGED};
  unsigned mem_type = 0;
  int is_managed = 0;  // CU_POINTER_ATTRIBUTE_IS_MANAGED is a bool returned in an int-sized slot
  void* data[2] = {&mem_type, &is_managed};
  int rc = q(2, attrs, data, addr);
  if (rc == cuda::CUDA_ERROR_INVALID_VALUE) return MemoryKind::Pageable;  // pre-CUDA-11 drivers
  if (rc != cuda::CUDA_SUCCESS) return MemoryKind::Unknown;
  if (is_managed) return MemoryKind::Managed;
  switch (mem_type) {
    case 0: return MemoryKind::Pageable;
    case cuda::CU_MEMORYTYPE_HOST: return MemoryKind::Pinned;
    case cuda::CU_MEMORYTYPE_DEVICE: return MemoryKind::Device;
    case cuda::CU_MEMORYTYPE_ARRAY: return MemoryKind::Array;
    case cuda::CU_MEMORYTYPE_UNIFIED: return MemoryKind::Managed;
    default: return MemoryKind::Unknown;
  }
}

}  // namespace asyncwatch::classify
