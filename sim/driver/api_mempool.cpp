// Memory pools and stream-ordered allocation (mem_pool.h).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "driver_state.h"
#include "exports.h"
#include "mem_pool.h"
#include "sim_config.h"

using namespace aw_sim;

namespace {

struct SimMemPool {
  int device = 0;
  std::mutex mutex;
  std::multimap<size_t, uintptr_t> free_blocks;  // size -> base: still mapped, not in the registry
  size_t free_bytes = 0;
  cuuint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  cuuint64_t release_threshold = 0;
  int reuse[3] = {1, 1, 1};  // REUSE_FOLLOW_EVENT_DEPENDENCIES, ALLOW_OPPORTUNISTIC, ALLOW_INTERNAL_DEPENDENCIES
  bool destroyed = false;    // cuMemPoolDestroy'ed while blocks were in use: deleted with the last one
};

std::mutex& pools_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::set<SimMemPool*>& pools() {
  static auto* s = new std::set<SimMemPool*>();
  return *s;
}
SimMemPool** default_pools() {
  static auto** d = new SimMemPool*[kMaxDevices]();
  return d;
}
SimMemPool** current_pools() {
  static auto** c = new SimMemPool*[kMaxDevices]();
  return c;
}
// Any pool holds free blocks: keeps synchronize calls free of pool work otherwise.
std::atomic<bool> g_free_blocks{false};

SimMemPool* new_pool(int device) {
  auto* p = new SimMemPool();
  p->device = device;
  std::lock_guard<std::mutex> lock(pools_mutex());
  pools().insert(p);
  return p;
}

SimMemPool* default_pool(int device) {
  std::lock_guard<std::mutex> lock(pools_mutex());
  SimMemPool*& d = default_pools()[device];
  if (!d) {
    d = new SimMemPool();
    d->device = device;
    pools().insert(d);
  }
  if (!current_pools()[device]) current_pools()[device] = d;
  return d;
}

SimMemPool* pool_of(CUmemoryPool h) {
  std::lock_guard<std::mutex> lock(pools_mutex());
  auto* p = reinterpret_cast<SimMemPool*>(h);
  return pools().count(p) ? p : nullptr;
}

// Frees free blocks until the pool reserves at most `keep` bytes (or has no free block left); with
// `to_threshold`, at most max(release threshold, bytes in use).
void trim(SimMemPool* p, cuuint64_t keep, bool to_threshold = false) {
  std::lock_guard<std::mutex> lock(p->mutex);
  if (to_threshold) keep = std::max(p->release_threshold, p->used);
  while (p->reserved > keep && !p->free_blocks.empty()) {
    auto it = std::prev(p->free_blocks.end());  // largest first
    Allocation a;
    a.base = it->second;
    a.size = it->first;
    free_backing(a);
    p->reserved -= it->first;
    p->free_bytes -= it->first;
    p->free_blocks.erase(it);
  }
}

CUresult alloc_async(CUdeviceptr* out, size_t bytes, SimMemPool* pool, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!out || !bytes) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return unsupported("stream-ordered allocation during capture (memory alloc nodes)");
  if (!pool) pool = default_pool(s->device());
  uintptr_t base = 0;
  size_t size = bytes;
  {
    std::lock_guard<std::mutex> lock(pool->mutex);
    auto it = pool->free_blocks.lower_bound(bytes);
    if (it != pool->free_blocks.end() && it->first <= 2 * bytes) {  // reuse a block freed in stream order
      size = it->first;
      base = it->second;
      pool->free_bytes -= size;
      pool->free_blocks.erase(it);
    }
  }
  if (!base) {
    void* p = allocate_backing(bytes);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    base = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(pool->mutex);
    pool->reserved += size;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  }
  {
    std::lock_guard<std::mutex> lock(pool->mutex);
    pool->used += size;
    pool->used_high = std::max(pool->used_high, pool->used);
  }
  Allocation a;
  a.base = base;
  a.size = size;
  a.kind = MemoryKind::Device;
  a.buffer_id = memory_registry().next_buffer_id();
  a.device = pool->device;
  a.pool = pool;
  memory_registry().add(a);
  *out = base;
  return CUDA_SUCCESS;
}

// A block of `pool` is no longer in use (`lock` holds `pool->mutex`). `reusable` (cuMemFreeAsync): it
// goes back into the pool, or to the system once the pool is destroyed; otherwise (cuMemFree) the
// caller frees it. The last block of a destroyed pool deletes the pool.
void release_block(SimMemPool* pool, std::unique_lock<std::mutex>& lock, const Allocation& a, bool reusable) {
  pool->used -= a.size;
  if (reusable && !pool->destroyed) {
    pool->free_blocks.emplace(a.size, a.base);
    pool->free_bytes += a.size;
    g_free_blocks = true;
    return;
  }
  pool->reserved -= a.size;
  const bool last = pool->destroyed && pool->used == 0;
  lock.unlock();
  if (reusable) free_backing(a);
  if (last) delete pool;
}

CUresult free_async(CUdeviceptr ptr, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  auto a = memory_registry().find(ptr);
  if (!a || a->base != ptr || !a->pool) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return unsupported("stream-ordered free during capture (memory free nodes)");
  // The block goes back to its pool when the stream reaches the free: work queued before may use it.
  StreamOp op;
  op.what = "free async";
  op.body = [base = a->base] {
    auto entry = memory_registry().remove(base);
    if (!entry) return;
    auto* pool = static_cast<SimMemPool*>(entry->pool);
    std::unique_lock<std::mutex> lock(pool->mutex);
    release_block(pool, lock, *entry, true);
  };
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

}  // namespace

namespace aw_sim {

void forget_pool_allocation(const Allocation& a) {
  auto* pool = static_cast<SimMemPool*>(a.pool);
  std::unique_lock<std::mutex> lock(pool->mutex);
  release_block(pool, lock, a, false);
}

void trim_pools_after_synchronize() {
  if (!g_free_blocks.exchange(false)) return;
  // Under the pools' lock: a pool being destroyed is either still listed or already trimmed.
  std::lock_guard<std::mutex> lock(pools_mutex());
  for (SimMemPool* p : pools()) trim(p, 0, true);
}

}  // namespace aw_sim

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* out, size_t bytes, CUstream s) {
  return alloc_async(out, bytes, nullptr, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* out, size_t bytes, CUstream s) {
  return alloc_async(out, bytes, nullptr, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* out, size_t bytes, CUmemoryPool pool,
                                                          CUstream s) {
  if (CUresult r = check_context()) return r;
  SimMemPool* p = pool_of(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(out, bytes, p, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* out, size_t bytes, CUmemoryPool pool,
                                                               CUstream s) {
  if (CUresult r = check_context()) return r;
  SimMemPool* p = pool_of(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(out, bytes, p, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  return free_async(p, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
  return free_async(p, s, DefaultStream::PerThread);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* out, CUdevice dev) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!primary_context(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *out = reinterpret_cast<CUmemoryPool>(default_pool(dev));
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* out, CUdevice dev) {
  if (CUresult r = cuDeviceGetDefaultMemPool(out, dev)) return r;
  std::lock_guard<std::mutex> lock(pools_mutex());
  *out = reinterpret_cast<CUmemoryPool>(current_pools()[dev]);
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!primary_context(dev)) return CUDA_ERROR_INVALID_DEVICE;
  SimMemPool* p = pool_of(pool);
  if (!p || p->device != dev) return CUDA_ERROR_INVALID_VALUE;
  default_pool(dev);
  std::lock_guard<std::mutex> lock(pools_mutex());
  current_pools()[dev] = p;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* out, const CUmemPoolProps* props) {
  if (CUresult r = check_context()) return r;
  if (!out || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !primary_context(props->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE) return unsupported("memory pools with shareable handles (IPC)");
  *out = reinterpret_cast<CUmemoryPool>(new_pool(props->location.id));
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  SimMemPool* p = pool_of(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(pools_mutex());
    if (default_pools()[p->device] == p) return CUDA_ERROR_INVALID_VALUE;  // the default pool stays
    if (current_pools()[p->device] == p) current_pools()[p->device] = default_pools()[p->device];
  }
  {
    // The handle is invalid from now on (and no synchronize trims it any more).
    std::lock_guard<std::mutex> lock(pools_mutex());
    pools().erase(p);
  }
  // Its free blocks go back to the system. Blocks still allocated from it stay valid until freed (the
  // CUDA docs allow destroying a pool in use): the last of them deletes the pool (release_block).
  std::multimap<size_t, uintptr_t> blocks;
  bool unused;
  {
    std::lock_guard<std::mutex> lock(p->mutex);
    p->destroyed = true;
    blocks.swap(p->free_blocks);
    p->reserved -= p->free_bytes;
    p->free_bytes = 0;
    unused = p->used == 0;
  }
  for (const auto& [size, base] : blocks) {
    Allocation a;
    a.base = base;
    a.size = size;
    free_backing(a);
  }
  if (unused) delete p;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  SimMemPool* p = pool_of(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  trim(p, keep);
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  SimMemPool* p = pool_of(pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(p->mutex);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *static_cast<int*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = *static_cast<cuuint64_t*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      // Only resetting to zero is allowed: the high-water mark restarts at the current value.
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
        p->reserved_high = p->reserved;
      else
        p->used_high = p->used;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  SimMemPool* p = pool_of(pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(p->mutex);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = p->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *static_cast<cuuint64_t*>(value) = p->reserved; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *static_cast<cuuint64_t*>(value) = p->reserved_high; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *static_cast<cuuint64_t*>(value) = p->used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *static_cast<cuuint64_t*>(value) = p->used_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
