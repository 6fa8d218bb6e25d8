// Managed memory (prefetch, advice; stream attachment is in streams.cpp) and stream-ordered
// allocation with memory pools: mappings onto the driver (the runtime structures and enums share
// the driver's layout and values).
#include "driver_table.h"
#include "runtime_errors.h"
#include "stream_api_macro.h"

using namespace aw_rt;

namespace {
CUmemLocation cu(cudaMemLocation l) {
  CUmemLocation out;
  out.type = static_cast<CUmemLocationType>(l.type);
  out.id = l.id;
  return out;
}
CUmemoryPool cu(cudaMemPool_t p) { return reinterpret_cast<CUmemoryPool>(p); }
CUstream cu(cudaStream_t s) { return reinterpret_cast<CUstream>(s); }
CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
}  // namespace

// CUDA 13 signature: a location and flags (12.x's device-ordinal form is gone from the 13.0 header).
AW_STREAM_API(cudaMemPrefetchAsync,
              (const void* p, size_t count, cudaMemLocation loc, unsigned int flags, cudaStream_t s),
              d.mem_prefetch_async(dptr(p), count, cu(loc), flags, cu(s)))

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemAdvise(const void* p, size_t count, cudaMemoryAdvise advice,
                                                      cudaMemLocation loc) {
  AW_RT_INIT();
  return record(drv().mem_advise(dptr(p), count, static_cast<CUmem_advise>(advice), cu(loc)));
}

// ---- stream-ordered allocation ----
AW_STREAM_API(cudaMallocAsync, (void** p, size_t size, cudaStream_t s),
              d.mem_alloc_async(reinterpret_cast<CUdeviceptr*>(p), size, cu(s)))
AW_STREAM_API(cudaFreeAsync, (void* p, cudaStream_t s), d.mem_free_async(dptr(p), cu(s)))
AW_STREAM_API(cudaMallocFromPoolAsync, (void** p, size_t size, cudaMemPool_t pool, cudaStream_t s),
              d.mem_alloc_from_pool_async(reinterpret_cast<CUdeviceptr*>(p), size, cu(pool), cu(s)))

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  AW_RT_DRIVER();
  return record(drv().device_get_default_mem_pool(reinterpret_cast<CUmemoryPool*>(pool), device));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  AW_RT_DRIVER();
  return record(drv().device_get_mem_pool(reinterpret_cast<CUmemoryPool*>(pool), device));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  AW_RT_DRIVER();
  return record(drv().device_set_mem_pool(device, cu(pool)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  AW_RT_INIT();
  return record(
      drv().mem_pool_create(reinterpret_cast<CUmemoryPool*>(pool), reinterpret_cast<const CUmemPoolProps*>(props)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t pool) {
  AW_RT_INIT();
  return record(drv().mem_pool_destroy(cu(pool)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  AW_RT_INIT();
  return record(drv().mem_pool_trim_to(cu(pool), keep));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  AW_RT_INIT();
  return record(drv().mem_pool_set_attribute(cu(pool), static_cast<CUmemPool_attribute>(attr), value));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  AW_RT_INIT();
  return record(drv().mem_pool_get_attribute(cu(pool), static_cast<CUmemPool_attribute>(attr), value));
}
