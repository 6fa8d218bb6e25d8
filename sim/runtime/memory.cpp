// Allocation, pointer attributes, copies and memsets; each maps to the driver entry point the real
// runtime uses (docs/simulator.md, "Runtime -> driver mapping").
#include <cstdio>
#include <cstring>

#include "copy_params.h"
#include "driver_table.h"
#include "fatbin_registry.h"
#include "runtime_errors.h"
#include "stream_api_macro.h"

using namespace aw_rt;

namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// A one-row host->host copy: the real runtime routes host->host cudaMemcpy[Async] through cuMemcpy2D.
// Copies into a capturing stream take the same entry points as any other (the H200's runtime called
// cuMemcpyDtoHAsync_v2 / cuMemcpyHtoDAsync_v2 for captured cudaMemcpyAsync, measured with
// sim/probe); the driver turns them into memcpy nodes.
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
  p.srcMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                    : src_device              ? CU_MEMORYTYPE_DEVICE
                                              : CU_MEMORYTYPE_HOST;
  p.dstMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                    : dst_device              ? CU_MEMORYTYPE_DEVICE
                                              : CU_MEMORYTYPE_HOST;
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
  if (is_managed)
    attributes->type = cudaMemoryTypeManaged;
  else if (memory_type == CU_MEMORYTYPE_DEVICE)
    attributes->type = cudaMemoryTypeDevice;
  else if (memory_type == CU_MEMORYTYPE_HOST)
    attributes->type = cudaMemoryTypeHost;
  else
    attributes->type = cudaMemoryTypeUnregistered;
  attributes->device = ordinal;
  attributes->devicePointer = reinterpret_cast<void*>(device_pointer);
  attributes->hostPointer = host_pointer;
  return cudaSuccess;
}

// ---- copies ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                                        enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                                        enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                                             enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(dst, src, count, kind, stream, true);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                                           size_t offset, enum cudaMemcpyKind kind) {
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
                                                                size_t offset, enum cudaMemcpyKind kind,
                                                                cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, s, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                                                     size_t offset, enum cudaMemcpyKind kind,
                                                                     cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(address, src, count, kind == cudaMemcpyHostToDevice ? kind : cudaMemcpyDefault, s, true);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                                  size_t offset, enum cudaMemcpyKind kind,
                                                                  cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, s, false);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                                                       size_t offset, enum cudaMemcpyKind kind,
                                                                       cudaStream_t s) {
  char* address = nullptr;
  if (cudaError_t e = symbol_address(symbol, offset, count, &address)) return e;
  return memcpy_async(dst, address, count, kind == cudaMemcpyDeviceToHost ? kind : cudaMemcpyDefault, s, true);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                     size_t width, size_t height, enum cudaMemcpyKind kind) {
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
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count,
                                                             cudaStream_t stream) {
  AW_RT_INIT();
  return record(stream_api(true).memset_d8_async(dptr(devPtr), static_cast<unsigned char>(value), count, stream));
}

// ---- pitched and 3D allocation ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  AW_RT_INIT();
  if (!ptr || !pitch) return record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  CUresult r = drv().mem_alloc_pitch(&p, pitch, width, height, 4);
  *ptr = reinterpret_cast<void*>(p);
  return record(r);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMalloc3D(cudaPitchedPtr* out, cudaExtent extent) {
  AW_RT_INIT();
  if (!out) return record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CUresult r = drv().mem_alloc_pitch(&p, &pitch, extent.width, extent.height * extent.depth, 4);
  if (r != CUDA_SUCCESS) return record(r);
  *out = cudaPitchedPtr{reinterpret_cast<void*>(p), pitch, extent.width, extent.height};
  return cudaSuccess;
}

// ---- 3D, peer and CUDA-array copies ----
namespace {
cudaError_t copy_3d(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async, bool per_thread) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  if (cudaError_t e = to_driver(*p, &c)) return record(e);
  if (c.WidthInBytes == 0 || c.Height == 0 || c.Depth == 0) return cudaSuccess;
  const StreamEntryPoints& d = stream_api(per_thread);
  if (!async) return record(d.memcpy_3d(&c));
  return record(d.memcpy_3d_async(&c, reinterpret_cast<CUstream>(stream)));
}

cudaError_t contexts_of(int dst_device, int src_device, CUcontext* dst, CUcontext* src) {
  if (cudaError_t e = primary_context_of(dst_device, dst)) return e;
  return primary_context_of(src_device, src);
}

cudaError_t copy_3d_peer(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, bool async, bool per_thread) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  cudaMemcpy3DParms q{};
  q.srcArray = p->srcArray, q.srcPos = p->srcPos, q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray, q.dstPos = p->dstPos, q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  q.kind = cudaMemcpyDeviceToDevice;
  CUDA_MEMCPY3D c;
  if (cudaError_t e = to_driver(q, &c)) return record(e);
  CUDA_MEMCPY3D_PEER peer;
  std::memset(&peer, 0, sizeof peer);
  if (cudaError_t e = contexts_of(p->dstDevice, p->srcDevice, &peer.dstContext, &peer.srcContext)) return record(e);
  peer.srcXInBytes = c.srcXInBytes, peer.srcY = c.srcY, peer.srcZ = c.srcZ;
  peer.srcMemoryType = c.srcMemoryType, peer.srcDevice = c.srcDevice, peer.srcArray = c.srcArray;
  peer.srcPitch = c.srcPitch, peer.srcHeight = c.srcHeight;
  peer.dstXInBytes = c.dstXInBytes, peer.dstY = c.dstY, peer.dstZ = c.dstZ;
  peer.dstMemoryType = c.dstMemoryType, peer.dstDevice = c.dstDevice, peer.dstArray = c.dstArray;
  peer.dstPitch = c.dstPitch, peer.dstHeight = c.dstHeight;
  peer.WidthInBytes = c.WidthInBytes, peer.Height = c.Height, peer.Depth = c.Depth;
  const StreamEntryPoints& d = stream_api(per_thread);
  return record(async ? d.memcpy_3d_peer_async(&peer, reinterpret_cast<CUstream>(stream)) : d.memcpy_3d_peer(&peer));
}

// Host <-> array and array <-> array copies as 2D descriptors (offsets in bytes and rows): the
// synchronous ones through cuMemcpy2D_v2, the asynchronous ones through cuMemcpy3DAsync_v2 (what the
// H200's runtime called for cudaMemcpy2DToArrayAsync and cudaMemcpy2DFromArrayAsync, measured with
// sim/probe; the synchronous forms were not probed).
cudaError_t array_copy_2d(cudaArray_t dst_array, size_t dst_x, size_t dst_y, void* dst, size_t dpitch,
                          cudaArray_const_t src_array, size_t src_x, size_t src_y, const void* src, size_t spitch,
                          size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                          bool per_thread) {
  AW_RT_INIT();
  if (!valid_kind(kind)) return record(cudaErrorInvalidMemcpyDirection);
  if (width == 0 || height == 0) return cudaSuccess;
  CUDA_MEMCPY2D c = pitched_copy(dst, dpitch, src, spitch, width, height, kind);
  if (src_array) {
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = reinterpret_cast<CUarray>(const_cast<cudaArray_t>(src_array));
    c.srcXInBytes = src_x;
    c.srcY = src_y;
  }
  if (dst_array) {
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = reinterpret_cast<CUarray>(dst_array);
    c.dstXInBytes = dst_x;
    c.dstY = dst_y;
  }
  const StreamEntryPoints& d = stream_api(per_thread);
  if (!async) return record(d.memcpy_2d(&c));
  CUDA_MEMCPY3D c3;
  std::memset(&c3, 0, sizeof c3);
  c3.srcXInBytes = c.srcXInBytes, c3.srcY = c.srcY;
  c3.srcMemoryType = c.srcMemoryType, c3.srcHost = c.srcHost, c3.srcDevice = c.srcDevice, c3.srcArray = c.srcArray;
  c3.srcPitch = c.srcPitch;
  c3.dstXInBytes = c.dstXInBytes, c3.dstY = c.dstY;
  c3.dstMemoryType = c.dstMemoryType, c3.dstHost = c.dstHost, c3.dstDevice = c.dstDevice, c3.dstArray = c.dstArray;
  c3.dstPitch = c.dstPitch;
  c3.WidthInBytes = c.WidthInBytes, c3.Height = c.Height, c3.Depth = 1;
  return record(d.memcpy_3d_async(&c3, reinterpret_cast<CUstream>(stream)));
}

// cudaMemcpyToArray / FromArray (deprecated) copy `count` bytes in one row.
size_t row_bytes(cudaArray_const_t a) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  drv().array_3d_get_descriptor(&d, reinterpret_cast<CUarray>(const_cast<cudaArray_t>(a)));
  return d.Width * array_element_size(a);
}
}  // namespace

AW_SYNC_API(cudaMemcpy3D, (const cudaMemcpy3DParms* p), copy_3d(p, nullptr, false, &d == &stream_api(true)))
AW_STREAM_API(cudaMemcpy3DAsync, (const cudaMemcpy3DParms* p, cudaStream_t s),
              copy_3d(p, s, true, &d == &stream_api(true)))
AW_SYNC_API(cudaMemcpy3DPeer, (const cudaMemcpy3DPeerParms* p),
            copy_3d_peer(p, nullptr, false, &d == &stream_api(true)))
AW_STREAM_API(cudaMemcpy3DPeerAsync, (const cudaMemcpy3DPeerParms* p, cudaStream_t s),
              copy_3d_peer(p, s, true, &d == &stream_api(true)))

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                                                       size_t count) {
  AW_RT_INIT();
  if (count == 0) return cudaSuccess;
  CUcontext dctx = nullptr, sctx = nullptr;
  if (cudaError_t e = contexts_of(dst_device, src_device, &dctx, &sctx)) return record(e);
  return record(stream_api(false).memcpy_peer(dptr(dst), dctx, dptr(src), sctx, count));
}

namespace {
cudaError_t memcpy_peer_async(const StreamEntryPoints& d, void* dst, int dst_device, const void* src, int src_device,
                              size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  CUcontext dctx = nullptr, sctx = nullptr;
  if (cudaError_t e = contexts_of(dst_device, src_device, &dctx, &sctx)) return e;
  return to_runtime_error(
      d.memcpy_peer_async(dptr(dst), dctx, dptr(src), sctx, count, reinterpret_cast<CUstream>(stream)));
}
}  // namespace

AW_STREAM_API(cudaMemcpyPeerAsync,
              (void* dst, int dst_device, const void* src, int src_device, size_t count, cudaStream_t stream),
              memcpy_peer_async(d, dst, dst_device, src, src_device, count, stream))

AW_SYNC_API(cudaMemcpy2DToArray,
            (cudaArray_t dst, size_t w, size_t h, const void* src, size_t spitch, size_t width, size_t height,
             cudaMemcpyKind kind),
            array_copy_2d(dst, w, h, nullptr, 0, nullptr, 0, 0, src, spitch, width, height, kind, nullptr, false,
                          &d == &stream_api(true)))
AW_STREAM_API(cudaMemcpy2DToArrayAsync,
              (cudaArray_t dst, size_t w, size_t h, const void* src, size_t spitch, size_t width, size_t height,
               cudaMemcpyKind kind, cudaStream_t s),
              array_copy_2d(dst, w, h, nullptr, 0, nullptr, 0, 0, src, spitch, width, height, kind, s, true,
                            &d == &stream_api(true)))
AW_SYNC_API(cudaMemcpy2DFromArray,
            (void* dst, size_t dpitch, cudaArray_const_t src, size_t w, size_t h, size_t width, size_t height,
             cudaMemcpyKind kind),
            array_copy_2d(nullptr, 0, 0, dst, dpitch, src, w, h, nullptr, 0, width, height, kind, nullptr, false,
                          &d == &stream_api(true)))
AW_STREAM_API(cudaMemcpy2DFromArrayAsync,
              (void* dst, size_t dpitch, cudaArray_const_t src, size_t w, size_t h, size_t width, size_t height,
               cudaMemcpyKind kind, cudaStream_t s),
              array_copy_2d(nullptr, 0, 0, dst, dpitch, src, w, h, nullptr, 0, width, height, kind, s, true,
                            &d == &stream_api(true)))
AW_SYNC_API(cudaMemcpy2DArrayToArray,
            (cudaArray_t dst, size_t dw, size_t dh, cudaArray_const_t src, size_t sw, size_t sh, size_t width,
             size_t height, cudaMemcpyKind kind),
            array_copy_2d(dst, dw, dh, nullptr, 0, src, sw, sh, nullptr, 0, width, height, kind, nullptr, false,
                          &d == &stream_api(true)))
AW_SYNC_API(cudaMemcpyToArray,
            (cudaArray_t dst, size_t w, size_t h, const void* src, size_t count, cudaMemcpyKind kind),
            (count > row_bytes(dst) ? cudaErrorInvalidValue
                                    : array_copy_2d(dst, w, h, nullptr, 0, nullptr, 0, 0, src, count, count, 1, kind,
                                                    nullptr, false, &d == &stream_api(true))))
AW_SYNC_API(cudaMemcpyFromArray,
            (void* dst, cudaArray_const_t src, size_t w, size_t h, size_t count, cudaMemcpyKind kind),
            (count > row_bytes(src) ? cudaErrorInvalidValue
                                    : array_copy_2d(nullptr, 0, 0, dst, count, src, w, h, nullptr, 0, count, 1, kind,
                                                    nullptr, false, &d == &stream_api(true))))
AW_SYNC_API(cudaMemcpyArrayToArray,
            (cudaArray_t dst, size_t dw, size_t dh, cudaArray_const_t src, size_t sw, size_t sh, size_t count,
             cudaMemcpyKind kind),
            array_copy_2d(dst, dw, dh, nullptr, 0, src, sw, sh, nullptr, 0, count, 1, kind, nullptr, false,
                          &d == &stream_api(true)))

// ---- CUDA arrays ----
namespace {
CUarray_format array_format(const cudaChannelFormatDesc& d, unsigned* channels, cudaError_t* error) {
  const int bits[4] = {d.x, d.y, d.z, d.w};
  int width = 0;
  *channels = 0;
  for (int b : bits) {
    if (!b) continue;
    if (width && b != width) *error = cudaErrorInvalidChannelDescriptor;
    width = b;
    ++*channels;
  }
  if (!*channels || *channels == 3) *error = cudaErrorInvalidChannelDescriptor;
  switch (d.f) {
    case cudaChannelFormatKindFloat: return width == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
    case cudaChannelFormatKindSigned:
      return width == 8    ? CU_AD_FORMAT_SIGNED_INT8
             : width == 16 ? CU_AD_FORMAT_SIGNED_INT16
                           : CU_AD_FORMAT_SIGNED_INT32;
    default:
      return width == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
             : width == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                           : CU_AD_FORMAT_UNSIGNED_INT32;
  }
}

cudaError_t malloc_array(cudaArray_t* out, const cudaChannelFormatDesc* desc, size_t w, size_t h, size_t depth,
                         unsigned flags) {
  AW_RT_INIT();
  if (!out || !desc) return record(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  std::memset(&d, 0, sizeof d);
  cudaError_t error = cudaSuccess;
  d.Format = array_format(*desc, &d.NumChannels, &error);
  if (error) return record(error);
  d.Width = w;
  d.Height = h;
  d.Depth = depth;
  d.Flags = flags;
  return record(drv().array_3d_create(reinterpret_cast<CUarray*>(out), &d));
}
}  // namespace

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t* out, const cudaChannelFormatDesc* desc, size_t w,
                                                        size_t h, unsigned int flags) {
  return malloc_array(out, desc, w, h, 0, flags);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t* out, const cudaChannelFormatDesc* desc,
                                                          cudaExtent extent, unsigned int flags) {
  return malloc_array(out, desc, extent.width, extent.height, extent.depth, flags);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t a) {
  AW_RT_INIT();
  if (!a) return cudaSuccess;
  return record(drv().array_destroy(reinterpret_cast<CUarray>(a)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent,
                                                         unsigned int* flags, cudaArray_t a) {
  AW_RT_INIT();
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (CUresult r = drv().array_3d_get_descriptor(&d, reinterpret_cast<CUarray>(a))) return record(r);
  if (extent) *extent = cudaExtent{d.Width, d.Height, d.Depth};
  if (flags) *flags = d.Flags;
  if (desc) {
    const int bits = static_cast<int>(array_element_size(a) / d.NumChannels * 8);
    const cudaChannelFormatKind kind =
        d.Format == CU_AD_FORMAT_FLOAT || d.Format == CU_AD_FORMAT_HALF ? cudaChannelFormatKindFloat
        : d.Format == CU_AD_FORMAT_SIGNED_INT8 || d.Format == CU_AD_FORMAT_SIGNED_INT16 ||
                d.Format == CU_AD_FORMAT_SIGNED_INT32
            ? cudaChannelFormatKindSigned
            : cudaChannelFormatKindUnsigned;
    *desc = cudaChannelFormatDesc{bits, d.NumChannels > 1 ? bits : 0, d.NumChannels > 2 ? bits : 0,
                                  d.NumChannels > 3 ? bits : 0, kind};
  }
  return cudaSuccess;
}

// ---- batches (CUDA 12.8+; the runtime structures share the driver's layout) ----
AW_STREAM_API(cudaMemcpyBatchAsync,
              (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
               cudaMemcpyAttributes* attrs, size_t* idxs, size_t num_attrs, cudaStream_t s),
              d.memcpy_batch_async(reinterpret_cast<CUdeviceptr*>(const_cast<void**>(dsts)),
                                   reinterpret_cast<CUdeviceptr*>(const_cast<void**>(srcs)), const_cast<size_t*>(sizes),
                                   count, reinterpret_cast<CUmemcpyAttributes*>(attrs), idxs, num_attrs,
                                   reinterpret_cast<CUstream>(s)))
AW_STREAM_API(cudaMemcpy3DBatchAsync, (size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long flags, cudaStream_t s),
              d.memcpy_3d_batch_async(n, reinterpret_cast<CUDA_MEMCPY3D_BATCH_OP*>(ops), flags,
                                      reinterpret_cast<CUstream>(s)))

// ---- 2D and 3D memsets ----
namespace {
cudaError_t memset_3d(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t stream, bool async, bool per_thread) {
  AW_RT_INIT();
  if (!e.width || !e.height || !e.depth) return cudaSuccess;
  const StreamEntryPoints& d = stream_api(per_thread);
  const unsigned char v = static_cast<unsigned char>(value);
  // Rows are evenly spaced across slices when the extent covers whole slices: one 2D memset.
  const bool whole_slices = e.depth == 1 || e.height == p.ysize;
  const size_t slices = whole_slices ? 1 : e.depth;
  const size_t rows = whole_slices ? e.height * e.depth : e.height;
  for (size_t z = 0; z < slices; ++z) {
    CUdeviceptr base = dptr(static_cast<char*>(p.ptr) + z * p.pitch * p.ysize);
    CUresult r = async ? d.memset_d2d8_async(base, p.pitch, v, e.width, rows, reinterpret_cast<CUstream>(stream))
                       : d.memset_d2d8(base, p.pitch, v, e.width, rows);
    if (r != CUDA_SUCCESS) return record(r);
  }
  return cudaSuccess;
}
}  // namespace

AW_SYNC_API(cudaMemset2D, (void* p, size_t pitch, int value, size_t w, size_t h),
            d.memset_d2d8(dptr(p), pitch, static_cast<unsigned char>(value), w, h))
AW_STREAM_API(cudaMemset2DAsync, (void* p, size_t pitch, int value, size_t w, size_t h, cudaStream_t s),
              d.memset_d2d8_async(dptr(p), pitch, static_cast<unsigned char>(value), w, h,
                                  reinterpret_cast<CUstream>(s)))
AW_SYNC_API(cudaMemset3D, (cudaPitchedPtr p, int value, cudaExtent e),
            memset_3d(p, value, e, nullptr, false, &d == &stream_api(true)))
AW_STREAM_API(cudaMemset3DAsync, (cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s),
              memset_3d(p, value, e, s, true, &d == &stream_api(true)))

// What cudaCreateChannelDesc<T>() (channel_descriptor.h) calls.
AW_RUNTIME_EXPORT cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w,
                                                                        cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}
