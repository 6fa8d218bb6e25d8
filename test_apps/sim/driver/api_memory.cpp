// Allocation, pointer queries, and the copy/memset entry points (legacy and per-thread variants).
#include <cstdlib>
#include <cstring>

#include "copy_engine.h"
#include "driver_state.h"
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
  memory_registry().add(
      Allocation{reinterpret_cast<uintptr_t>(p), bytes, kind, flags, memory_registry().next_buffer_id()});
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
  if (!a || a->base != base || !kind_ok) return CUDA_ERROR_INVALID_VALUE;
  stream_table().synchronize_all();
  memory_registry().remove(base);
  if (free_memory) free_backing(*a);
  return CUDA_SUCCESS;
}

bool device_reachable(uintptr_t p) { return memory_registry().find(p).has_value(); }

CUresult checked_copy(const CopyShape& s, bool dst_is_device, bool src_is_device, CUstream h, DefaultStream mode,
                      CopyCall call) {
  if (CUresult r = check_context()) return r;
  if (s.bytes() == 0) return CUDA_SUCCESS;
  if (dst_is_device && !device_reachable(reinterpret_cast<uintptr_t>(s.dst))) return CUDA_ERROR_INVALID_VALUE;
  if (src_is_device && !device_reachable(reinterpret_cast<uintptr_t>(s.src))) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, h, mode, call);
}

void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream h, DefaultStream mode, CopyCall call) {
  if (CUresult r = check_context()) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  auto address = [](CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t pitch,
                    const void** out) -> CUresult {
    switch (type) {
      case CU_MEMORYTYPE_HOST: *out = static_cast<const char*>(host) + y * pitch + x; return CUDA_SUCCESS;
      case CU_MEMORYTYPE_DEVICE:
      case CU_MEMORYTYPE_UNIFIED: *out = reinterpret_cast<const char*>(device) + y * pitch + x; return CUDA_SUCCESS;
      default: return unsupported("cuMemcpy2D with CUDA arrays");
    }
  };
  const void* src = nullptr;
  const void* dst = nullptr;
  if (CUresult r = address(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch, &src)) return r;
  if (CUresult r = address(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch, &dst)) return r;
  CopyShape s;
  s.dst = static_cast<char*>(const_cast<void*>(dst));
  s.src = static_cast<const char*>(src);
  s.width = p->WidthInBytes;
  s.height = p->Height;
  s.dst_pitch = p->Height > 1 ? p->dstPitch : p->WidthInBytes;
  s.src_pitch = p->Height > 1 ? p->srcPitch : p->WidthInBytes;
  if (p->Height > 1 && (s.dst_pitch < s.width || s.src_pitch < s.width)) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, h, mode, call);
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
  memory_registry().add(Allocation{base, bytes, MemoryKind::RegisteredHost, flags, memory_registry().next_buffer_id()});
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
  if (!a || (a->kind != MemoryKind::PinnedHost && a->kind != MemoryKind::RegisteredHost)) return CUDA_ERROR_INVALID_VALUE;
  *dptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: same address
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  if (CUresult r = check_context()) return r;
  auto a = memory_registry().find(p);
  if (!a || a->kind != MemoryKind::Device) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = a->base;
  if (size) *size = a->size;
  return CUDA_SUCCESS;
}

// ---- pointer attributes (FACTS.md table) ----

namespace {

// Writes one attribute of `ptr`. Boolean attributes are written as one byte (C bool).
CUresult pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr, bool for_plural) {
  auto a = memory_registry().find(ptr);
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
    case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(primary_context()); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a->kind == MemoryKind::Device) {
        if (!for_plural) return CUDA_ERROR_INVALID_VALUE;
        *static_cast<void**>(data) = nullptr;
      } else {
        *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      }
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = 0; break;
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

// ---- copies ----

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, s, DefaultStream::Legacy, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, s, DefaultStream::PerThread, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, s, DefaultStream::Legacy, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, s, DefaultStream::PerThread, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, s, DefaultStream::Legacy, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, s, DefaultStream::PerThread, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, s, DefaultStream::Legacy, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, s, DefaultStream::PerThread, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s) {
  return copy_2d(p, s, DefaultStream::Legacy, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* p, CUstream s) {
  return copy_2d(p, s, DefaultStream::PerThread, CopyCall::Async);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, nullptr, DefaultStream::Legacy, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, nullptr, DefaultStream::PerThread, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, nullptr, DefaultStream::Legacy, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, nullptr, DefaultStream::PerThread, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, nullptr, DefaultStream::Legacy, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, nullptr, DefaultStream::PerThread, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, nullptr, DefaultStream::Legacy, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, nullptr, DefaultStream::PerThread, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return copy_2d(p, nullptr, DefaultStream::Legacy, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* p) {
  return copy_2d(p, nullptr, DefaultStream::PerThread, CopyCall::Sync);
}

// Simulator-private entry point: how the simulated runtime records cudaMemcpyAsync into a capturing
// stream without reaching any cuMemcpy* entry point (a real runtime adds a graph memcpy node).
AW_DRIVER_EXPORT CUresult CUDAAPI cuSimCaptureMemcpy(void* dst, const void* src, size_t n, CUstream s,
                                                     int per_thread_default_stream) {
  if (CUresult r = check_context()) return r;
  return record_captured_copy(linear_copy(dst, src, n), s,
                              per_thread_default_stream ? DefaultStream::PerThread : DefaultStream::Legacy);
}

// ---- memsets ----
#define AW_MEMSET(NAME, T, SIZE, CALL, MODE)                                                           \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, T v, size_t n) {                             \
    if (CUresult r = check_context()) return r;                                                        \
    return aw_sim::memset(dst, v, SIZE, n, nullptr, DefaultStream::MODE, CopyCall::CALL);              \
  }
#define AW_MEMSET_ASYNC(NAME, T, SIZE, MODE)                                                           \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, T v, size_t n, CUstream s) {                 \
    if (CUresult r = check_context()) return r;                                                        \
    return aw_sim::memset(dst, v, SIZE, n, s, DefaultStream::MODE, CopyCall::Async);                   \
  }
AW_MEMSET(cuMemsetD8_v2, unsigned char, 1, Sync, Legacy)
AW_MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1, Sync, PerThread)
AW_MEMSET(cuMemsetD16_v2, unsigned short, 2, Sync, Legacy)
AW_MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2, Sync, PerThread)
AW_MEMSET(cuMemsetD32_v2, unsigned int, 4, Sync, Legacy)
AW_MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4, Sync, PerThread)
AW_MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1, Legacy)
AW_MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, PerThread)
AW_MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2, Legacy)
AW_MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, PerThread)
AW_MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4, Legacy)
AW_MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, PerThread)
