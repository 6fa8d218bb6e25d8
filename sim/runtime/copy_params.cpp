#include "copy_params.h"

#include <cstring>

#include "driver_table.h"

namespace aw_rt {

bool valid_kind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

CUmemorytype memory_type(cudaMemcpyKind kind, bool source) {
  if (kind == cudaMemcpyDefault) return CU_MEMORYTYPE_UNIFIED;
  const bool device = source ? (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
                             : (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice);
  return device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
}

size_t array_element_size(cudaArray_const_t a) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (!a || drv().array_3d_get_descriptor(&d, reinterpret_cast<CUarray>(const_cast<cudaArray_t>(a))) != CUDA_SUCCESS)
    return 0;
  size_t channel = 0;
  switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: channel = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: channel = 2; break;
    default: channel = 4; break;
  }
  return channel * d.NumChannels;
}

namespace {
// One side of a driver copy descriptor: the source's or the destination's fields of CUDA_MEMCPY3D.
template <class Host>
struct DriverSide {
  CUmemorytype& type;
  CUarray& array;
  Host& host;
  CUdeviceptr& device;
  size_t& pitch;
  size_t& height;
  size_t& x_bytes;
  size_t& y;
  size_t& z;
};
// Fills `d` from one side of the runtime's parameters (`elem`: an array's element size).
template <class Host>
void fill_side(DriverSide<Host> d, cudaArray_t array, const cudaPitchedPtr& ptr, const cudaPos& pos, size_t elem,
               CUmemorytype host_or_device) {
  if (array) {
    d.type = CU_MEMORYTYPE_ARRAY;
    d.array = reinterpret_cast<CUarray>(array);
    d.x_bytes = pos.x * elem;
  } else {
    d.type = host_or_device;
    d.host = ptr.ptr;
    d.device = reinterpret_cast<CUdeviceptr>(ptr.ptr);
    d.pitch = ptr.pitch;
    d.height = ptr.ysize;
    d.x_bytes = pos.x;
  }
  d.y = pos.y;
  d.z = pos.z;
}
}  // namespace

cudaError_t to_driver(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out) {
  if (!valid_kind(p.kind)) return cudaErrorInvalidMemcpyDirection;
  if ((p.srcArray && p.srcPtr.ptr) || (p.dstArray && p.dstPtr.ptr)) return cudaErrorInvalidValue;
  size_t elem = 1;
  if (p.srcArray || p.dstArray) {
    elem = array_element_size(p.srcArray ? p.srcArray : p.dstArray);
    if (!elem) return cudaErrorInvalidResourceHandle;
  }
  CUDA_MEMCPY3D d;
  std::memset(&d, 0, sizeof d);
  fill_side(DriverSide<const void*>{d.srcMemoryType, d.srcArray, d.srcHost, d.srcDevice, d.srcPitch, d.srcHeight,
                                    d.srcXInBytes, d.srcY, d.srcZ},
            p.srcArray, p.srcPtr, p.srcPos, elem, memory_type(p.kind, true));
  fill_side(DriverSide<void*>{d.dstMemoryType, d.dstArray, d.dstHost, d.dstDevice, d.dstPitch, d.dstHeight,
                              d.dstXInBytes, d.dstY, d.dstZ},
            p.dstArray, p.dstPtr, p.dstPos, elem, memory_type(p.kind, false));
  d.WidthInBytes = p.extent.width * elem;
  d.Height = p.extent.height;
  d.Depth = p.extent.depth;
  *out = d;
  return cudaSuccess;
}

CUDA_MEMCPY3D pitched_3d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  CUDA_MEMCPY3D d;
  std::memset(&d, 0, sizeof d);
  d.srcMemoryType = memory_type(kind, true);
  d.srcHost = src;
  d.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  d.srcPitch = spitch;
  d.dstMemoryType = memory_type(kind, false);
  d.dstHost = dst;
  d.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  d.dstPitch = dpitch;
  d.WidthInBytes = width;
  d.Height = height;
  d.Depth = 1;
  return d;
}

CUDA_MEMCPY3D linear_3d(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return pitched_3d(dst, n, src, n, n, 1, kind);
}

}  // namespace aw_rt
