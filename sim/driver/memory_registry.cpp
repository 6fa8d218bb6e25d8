#include "memory_registry.h"

#include <sys/mman.h>

#include <cstdlib>

namespace aw_sim {

void MemoryRegistry::add(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mutex_);
  by_base_[a.base] = a;
}

std::optional<Allocation> MemoryRegistry::remove(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  Allocation a = it->second;
  by_base_.erase(it);
  return a;
}

std::optional<Allocation> MemoryRegistry::find(uintptr_t p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_base_.upper_bound(p);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  if (p >= a.base && p < a.base + (a.size ? a.size : 1)) return a;
  return std::nullopt;
}

std::vector<Allocation> MemoryRegistry::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Allocation> out;
  for (const auto& kv : by_base_) out.push_back(kv.second);
  return out;
}

uint64_t MemoryRegistry::next_buffer_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_++;
}

namespace {
// Large blocks come from mmap with transparent huge pages: first-touch page faults dominate the cost
// of copying gigabytes (the seed copies 2 GiB) and would distort the timing model.
constexpr std::size_t kMmapThreshold = 2u << 20;
constexpr std::size_t kAlignment = 256;  // cudaMalloc's guaranteed alignment
}  // namespace

void* allocate_backing(std::size_t bytes) {
  if (bytes >= kMmapThreshold) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
  }
  return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}

void free_backing(const Allocation& a) {
  if (a.kind == MemoryKind::RegisteredHost) return;  // the program's memory
  if (a.size >= kMmapThreshold)
    munmap(reinterpret_cast<void*>(a.base), a.size);
  else
    std::free(reinterpret_cast<void*>(a.base));
}

MemoryRegistry& memory_registry() {
  static MemoryRegistry* registry = new MemoryRegistry();  // leaked: workers may run at exit
  return *registry;
}

MemorySide classify(uintptr_t p) {
  auto a = memory_registry().find(p);
  if (!a) return MemorySide::Pageable;
  switch (a->kind) {
    case MemoryKind::Device: return MemorySide::Device;
    case MemoryKind::Managed: return MemorySide::Managed;
    case MemoryKind::PinnedHost:
    case MemoryKind::RegisteredHost: return MemorySide::Pinned;
  }
  return MemorySide::Pageable;
}

int owner_device(const void* p) {
  auto a = memory_registry().find(reinterpret_cast<uintptr_t>(p));
  return a ? a->device : -1;
}

bool is_host_side(MemorySide s) { return s == MemorySide::Pageable || s == MemorySide::Pinned; }

}  // namespace aw_sim
