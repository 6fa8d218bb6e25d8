// Allocation, pointer attributes, copies and memsets; each maps to the driver entry point the real
// runtime uses (FACTS.md, "Runtime -> driver mapping").
#include <cstdio>
#include <cstring>

#include "driver_table.h"
#include "fatbin_registry.h"
#include "runtime_errors.h"

using namespace aw_rt;

namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// A one-row host->host copy: the real runtime routes host->host cudaMemcpy[Async] through cuMemcpy2D.
CUDA_MEMCPY2D host_to_host(void* dst, const void* src, size_t n) {
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = src;
  p.srcPitch = n;
  p.dstMemoryType = CU_MEMORYTYPE_HOST;
  p.dstHost = dst;
  p.dstPitch = n;
  p.WidthInBytes = n;
  p.Height = 1;
  return p;
}

cudaError_t memcpy_sync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, bool per_thread) {
  AW_RT_INIT();
  const StreamEntryPoints& d = stream_api(per_thread);
  if (n == 0) return cudaSuccess;
  switch (kind) {
    case cudaMemcpyHostToDevice: return record(d.memcpy_htod(dptr(dst), src, n));
    case cudaMemcpyDeviceToHost: return record(d.memcpy_dtoh(dst, dptr(src), n));
    case cudaMemcpyDeviceToDevice: return record(d.memcpy_dtod(dptr(dst), dptr(src), n));
    case cudaMemcpyDefault: return record(d.memcpy_default(dptr(dst), dptr(src), n));
    case cudaMemcpyHostToHost: {
      CUDA_MEMCPY2D p = host_to_host(dst, src, n);
      return record(d.memcpy_2d(&p));
    }
  }
  return record(cudaErrorInvalidMemcpyDirection);
}

cudaError_t memcpy_async(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                         bool per_thread) {
  AW_RT_INIT();
  const StreamEntryPoints& d = stream_api(per_thread);
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return record(cudaErrorInvalidMemcpyDirection);
  if (n == 0) return cudaSuccess;
  // A copy into a capturing stream becomes a graph node and reaches no cuMemcpy* entry point.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult r = d.stream_is_capturing(stream, &status)) return record(r);
  if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
    return record(drv().sim_capture_memcpy(dst, src, n, stream, per_thread ? 1 : 0));
  switch (kind) {
    case cudaMemcpyHostToDevice: return record(d.memcpy_htod_async(dptr(dst), src, n, stream));
    case cudaMemcpyDeviceToHost: return record(d.memcpy_dtoh_async(dst, dptr(src), n, stream));
    case cudaMemcpyDeviceToDevice: return record(d.memcpy_dtod_async(dptr(dst), dptr(src), n, stream));
    case cudaMemcpyDefault: return record(d.memcpy_async(dptr(dst), dptr(src), n, stream));
    case cudaMemcpyHostToHost: {
      CUDA_MEMCPY2D p = host_to_host(dst, src, n);
      return record(d.memcpy_2d_async(&p, stream));
    }
  }
  return record(cudaErrorInvalidMemcpyDirection);
}

CUDA_MEMCPY2D pitched_copy(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                           cudaMemcpyKind kind) {
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof p);
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  p.srcMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : src_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  p.dstMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : dst_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  p.srcHost = src;
  p.srcDevice = dptr(src);
  p.srcPitch = spitch;
  p.dstHost = dst;
  p.dstDevice = dptr(dst);
  p.dstPitch = dpitch;
  p.WidthInBytes = width;
  p.Height = height;
  return p;
}

cudaError_t memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                      cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread) {
  AW_RT_INIT();
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return record(cudaErrorInvalidMemcpyDirection);
  if (width == 0 || height == 0) return cudaSuccess;
  const StreamEntryPoints& d = stream_api(per_thread);
  CUDA_MEMCPY2D p = pitched_copy(dst, dpitch, src, spitch, width, height, kind);
  if (!async) return record(d.memcpy_2d(&p));
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult r = d.stream_is_capturing(stream, &status)) return record(r);
  if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    std::fprintf(stderr, "asyncwatch-sim: cudaMemcpy2DAsync into a capturing stream is not supported by the simulator\n");
    return record(cudaErrorNotSupported);
  }
  return record(d.memcpy_2d_async(&p, stream));
}

cudaError_t symbol_address(const void* symbol, size_t offset, size_t count, char** address) {
  void* base = nullptr;
  size_t size = 0;
  if (cudaError_t e = device_address_of_symbol(symbol, &base, &size)) return e;
  if (offset + count > size) return record(cudaErrorInvalidValue);
  *address = static_cast<char*>(base) + offset;
  return cudaSuccess;
}

}  // namespace

// ---- allocation ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  AW_RT_INIT();
  if (!devPtr) return record(cudaErrorInvalidValue);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  CUresult r = drv().mem_alloc(&p, size);
  *devPtr = reinterpret_cast<void*>(p);
  return record(r);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  AW_RT_INIT();  // cudaFree(0) is the customary way to initialize the runtime
  if (!devPtr) return cudaSuccess;
  return record(drv().mem_free(dptr(devPtr)));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  AW_RT_INIT();
  if (!devPtr) return record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  CUresult r = drv().mem_alloc_managed(&p, size, flags);
  *devPtr = reinterpret_cast<void*>(p);
  return record(r);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  AW_RT_INIT();
  if (!pHost) return record(cudaErrorInvalidValue);
  return record(drv().mem_host_alloc(pHost, size, flags));  // cudaHostAlloc* flags == CU_MEMHOSTALLOC_*
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  AW_RT_INIT();
  if (!ptr) return cudaSuccess;
  return record(drv().mem_free_host(ptr));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  AW_RT_INIT();
  return record(drv().mem_host_register(ptr, size, flags));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
  AW_RT_INIT();
  return record(drv().mem_host_unregister(ptr));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  AW_RT_INIT();
  if (!pDevice) return record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  CUresult r = drv().mem_host_get_device_pointer(&p, pHost, flags);
  *pDevice = reinterpret_cast<void*>(p);
  return record(r);
}

// ---- pointer attributes ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                                                 const void* ptr) {
  AW_RT_INIT();
  if (!attributes) return record(cudaErrorInvalidValue);  // a failing query sets the last error
  unsigned memory_type = 0;
  bool is_managed = false;
  int ordinal = -2;
  CUdeviceptr device_pointer = 0;
  void* host_pointer = nullptr;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER};
  void* data[] = {&memory_type, &is_managed, &ordinal, &device_pointer, &host_pointer};
  if (CUresult r = drv().pointer_get_attributes(5, attrs, data, dptr(ptr))) return record(r);
  if (is_managed) attributes->type = cudaMemoryTypeManaged;
  else if (memory_type == CU_MEMORYTYPE_DEVICE) attributes->type = cudaMemoryTypeDevice;
  else if (memory_type == CU_MEMORYTYPE_HOST) attributes->type = cudaMemoryTypeHost;
  else attributes->type = cudaMemoryTypeUnregistered;
  attributes->device = ordinal;
  attributes->devicePointer = reinterpret_cast<void*>(device_pointer);
  attributes->hostPointer = host_pointer;
  return cudaSuccess;
}

// ---- copies ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                                        cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                                             enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, true);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                                           enum cudaMemcpyKind kind) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_sync(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                                                size_t offset, enum cudaMemcpyKind kind) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_sync(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                                             enum cudaMemcpyKind kind) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_sync(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count,
                                                                  size_t offset, enum cudaMemcpyKind kind) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_sync(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  return device_address_of_symbol(symbol, devPtr, nullptr);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetSymbolSize(size_t* size, const void* symbol) {
  return device_address_of_symbol(symbol, nullptr, size);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                                                size_t offset, enum cudaMemcpyKind kind, cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, s, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                                                     size_t offset, enum cudaMemcpyKind kind, cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, s, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                                  size_t offset, enum cudaMemcpyKind kind, cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, s, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                                                       size_t offset, enum cudaMemcpyKind kind, cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, s, true);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                                     size_t height, enum cudaMemcpyKind kind) {
  return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                          size_t width, size_t height, enum cudaMemcpyKind kind) {
  return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                          size_t width, size_t height, enum cudaMemcpyKind kind,
                                                          cudaStream_t stream) {
  return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                               size_t width, size_t height, enum cudaMemcpyKind kind,
                                                               cudaStream_t stream) {
  return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, true);
}

// ---- memsets ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  AW_RT_INIT();
  return record(stream_api(false).memset_d8(dptr(devPtr), static_cast<unsigned char>(value), count));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count) {
  AW_RT_INIT();
  return record(stream_api(true).memset_d8(dptr(devPtr), static_cast<unsigned char>(value), count));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  AW_RT_INIT();
  return record(stream_api(false).memset_d8_async(dptr(devPtr), static_cast<unsigned char>(value), count, stream));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  AW_RT_INIT();
  return record(stream_api(true).memset_d8_async(dptr(devPtr), static_cast<unsigned char>(value), count, stream));
}
