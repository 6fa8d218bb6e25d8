// Allocation, host registration and pointer queries (copies and memsets: api_copy.cpp).
#include <cstdlib>
#include <cstring>

#include "driver_state.h"
#include "mem_pool.h"
#include "exports.h"
#include "memory_registry.h"

using namespace aw_sim;

namespace {

CUresult allocate(void** out, size_t bytes, MemoryKind kind, unsigned flags) {
  if (CUresult r = check_context()) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = allocate_backing(bytes);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = bytes;
  a.kind = kind;
  a.flags = flags;
  a.buffer_id = memory_registry().next_buffer_id();
  a.device = current()->ordinal;
  memory_registry().add(a);
  *out = p;
  return CUDA_SUCCESS;
}

// Freeing waits for all queued work first, as cudaFree implicitly synchronizes the device; it also
// keeps a worker from touching freed memory.
CUresult release(uintptr_t base, MemoryKind expected, bool free_memory) {
  if (CUresult r = check_context()) return r;
  auto a = memory_registry().find(base);
  // cuMemFree frees device and managed memory alike.
  const bool kind_ok = a && (a->kind == expected || (expected == MemoryKind::Device && a->kind == MemoryKind::Managed));
  if (!a || a->base != base || !kind_ok || a->is_array) return CUDA_ERROR_INVALID_VALUE;
  synchronize_all_devices();
  memory_registry().remove(base);
  if (a->pool) forget_pool_allocation(*a);  // cudaFree of cudaMallocAsync memory
  if (free_memory) free_backing(*a);
  return CUDA_SUCCESS;
}

}  // namespace

// ---- allocation ----

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  void* p = nullptr;
  CUresult r = allocate(&p, bytes, MemoryKind::Device, 0);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  if (dptr == 0) return check_context();
  return release(dptr, MemoryKind::Device, true);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  void* p = nullptr;
  CUresult r = allocate(&p, bytes, MemoryKind::Managed, flags);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytes) {
  return allocate(pp, bytes, MemoryKind::PinnedHost, 0);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  return allocate(pp, bytes, MemoryKind::PinnedHost, flags);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemFreeHost(void* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return release(reinterpret_cast<uintptr_t>(p), MemoryKind::PinnedHost, true);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytes, unsigned int flags) {
  if (CUresult r = check_context()) return r;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto base = reinterpret_cast<uintptr_t>(p);
  for (const Allocation& a : memory_registry().all())
    if (base < a.base + a.size && a.base < base + bytes) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  Allocation a;
  a.base = base;
  a.size = bytes;
  a.kind = MemoryKind::RegisteredHost;
  a.flags = flags;
  a.buffer_id = memory_registry().next_buffer_id();
  a.device = current()->ordinal;
  memory_registry().add(a);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemHostUnregister(void* p) {
  if (CUresult r = check_context()) return r;
  auto a = memory_registry().find(reinterpret_cast<uintptr_t>(p));
  if (!a || a->base != reinterpret_cast<uintptr_t>(p) || a->kind != MemoryKind::RegisteredHost)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return release(a->base, MemoryKind::RegisteredHost, false);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned int flags) {
  if (CUresult r = check_context()) return r;
  if (!dptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto a = memory_registry().find(reinterpret_cast<uintptr_t>(p));
  if (!a || (a->kind != MemoryKind::PinnedHost && a->kind != MemoryKind::RegisteredHost))
    return CUDA_ERROR_INVALID_VALUE;
  *dptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: same address
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  if (CUresult r = check_context()) return r;
  auto a = memory_registry().find(p);
  if (!a || a->kind != MemoryKind::Device || a->is_array) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = a->base;
  if (size) *size = a->size;
  return CUDA_SUCCESS;
}

// ---- pointer attributes (docs/simulator.md, "Pointer attributes") ----

namespace {

// Writes one attribute of `ptr`. Boolean attributes are written as one byte (C bool).
CUresult pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr, bool for_plural) {
  auto a = memory_registry().find(ptr);
  if (a && a->is_array) a.reset();  // CUDA arrays are not addressable by pointer
  if (!a) {
    // Memory the driver does not know: the plural query reports type 0 and succeeds, the
    // singular query fails, as the real driver does.
    if (!for_plural) return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data) = 0; break;
      case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = nullptr; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = 0; break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER: *static_cast<void**>(data) = nullptr; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = -2; break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      case CU_POINTER_ATTRIBUTE_MAPPED:
      case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<bool*>(data) = false; break;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data) = 0; break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = 0; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = 0; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  }
  const bool host = a->kind == MemoryKind::PinnedHost || a->kind == MemoryKind::RegisteredHost;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<bool*>(data) = a->kind == MemoryKind::Managed; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = handle_of(primary_context(a->device)); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a->kind == MemoryKind::Device) {
        if (!for_plural) return CUDA_ERROR_INVALID_VALUE;
        *static_cast<void**>(data) = nullptr;
      } else {
        *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      }
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = a->device; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<bool*>(data) = true; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<bool*>(data) = false; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data) = a->buffer_id; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = a->base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = a->size; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  return pointer_attribute(data, attr, ptr, false);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs, void** data,
                                                         CUdeviceptr ptr) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = pointer_attribute(data[i], attrs[i], ptr, true)) return r;
  }
  return CUDA_SUCCESS;
}

// Pitched allocation: rows padded to 512 bytes (an H200's texture pitch alignment).
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                                     unsigned int elem_size) {
  if (!dptr || !pitch || !width || !height) return CUDA_ERROR_INVALID_VALUE;
  if (elem_size != 4 && elem_size != 8 && elem_size != 16) return CUDA_ERROR_INVALID_VALUE;
  const size_t p = (width + 511) / 512 * 512;
  CUresult r = cuMemAlloc_v2(dptr, p * height);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}
