// Every range the simulated driver knows about. Device memory is ordinary host memory tagged
// "device" here; pinned and registered host ranges are tagged so copies and pointer queries can tell
// them from pageable memory (anything not in the registry).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace aw_sim {

enum class MemoryKind {
  Device,          // cuMemAlloc
  PinnedHost,      // cuMemAllocHost / cuMemHostAlloc: allocated by us
  RegisteredHost,  // cuMemHostRegister: the program's memory, only tagged
  Managed,         // cuMemAllocManaged
};

struct Allocation {
  uintptr_t base = 0;
  std::size_t size = 0;
  MemoryKind kind = MemoryKind::Device;
  unsigned flags = 0;
  uint64_t buffer_id = 0;
  int device = 0;             // the owning device (host memory: the device current at allocation)
  bool is_array = false;      // backing store of a CUDA array (not addressable by pointer)
  void* pool = nullptr;       // SimMemPool of a stream-ordered allocation (cuMemAllocAsync)
  int managed_location = -1;  // managed memory: CU_DEVICE_CPU (-1) or the device it was prefetched to
  unsigned attach_flags = 0;  // managed memory: CU_MEM_ATTACH_* (cuStreamAttachMemAsync)
};

// Memory the simulator hands out as device, pinned or managed memory, and its release.
void* allocate_backing(std::size_t bytes);
void free_backing(const Allocation& a);

// What one side of a copy is, as the copy rules see it.
enum class MemorySide { Pageable, Pinned, Device, Managed };

class MemoryRegistry {
 public:
  void add(const Allocation& a);
  // Removes the allocation that starts exactly at `base`.
  std::optional<Allocation> remove(uintptr_t base);
  // The allocation containing `p` (interior pointers too).
  std::optional<Allocation> find(uintptr_t p) const;
  std::vector<Allocation> all() const;
  // Applies f to the allocation starting exactly at `base`; false if there is none.
  template <class F>
  bool update(uintptr_t base, F f) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_base_.find(base);
    if (it == by_base_.end()) return false;
    f(it->second);
    return true;
  }
  uint64_t next_buffer_id();

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, Allocation> by_base_;
  uint64_t next_id_ = 1;
};

MemoryRegistry& memory_registry();
MemorySide classify(uintptr_t p);
inline MemorySide classify(const void* p) { return classify(reinterpret_cast<uintptr_t>(p)); }
// The device owning the memory at `p`; -1 for memory the driver does not know.
int owner_device(const void* p);
bool is_host_side(MemorySide s);  // pageable or pinned

}  // namespace aw_sim
