// The slice of the CUDA driver and runtime ABI that the hooks need. Declared here instead of
// including cuda.h because cuda.h #defines the very names we must define (cuMemcpyHtoD ->
// cuMemcpyHtoD_v2, cuGetProcAddress -> cuGetProcAddress_v2, ...), and so that the library
// builds without a CUDA toolkit. Layouts copied from CUDA 13.0's cuda.h; they are ABI-stable.
#pragma once

#include <cstddef>
#include <cstdint>

namespace asyncwatch::cuda {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;
using CUevent = void*;
using CUcontext = void*;
using CUfunction = void*;
using CUkernel = void*;
using CUarray = void*;
using CUgraph = void*;
using CUgraphExec = void*;
using CUdevice = int;
using cuuint64_t = uint64_t;
using CUhostFn = void (*)(void* userData);
using CUstreamCallback = void (*)(CUstream hStream, CUresult status, void* userData);

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUmemorytype
inline constexpr unsigned CU_MEMORYTYPE_HOST = 1;
inline constexpr unsigned CU_MEMORYTYPE_DEVICE = 2;
inline constexpr unsigned CU_MEMORYTYPE_ARRAY = 3;
inline constexpr unsigned CU_MEMORYTYPE_UNIFIED = 4;

// CUpointer_attribute
inline constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr int CU_POINTER_ATTRIBUTE_IS_MANAGED = 8;

// CUstreamCaptureStatus
inline constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
inline constexpr int CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;

inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;

struct CUDA_MEMCPY2D {
  size_t srcXInBytes, srcY;
  unsigned srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  unsigned dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
};

struct CUDA_MEMCPY3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  unsigned srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void* reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  unsigned dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void* reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  void* attrs;
  unsigned numAttrs;
};

// Version 3 hooks: prefetch, batch and 3D peer copies, graph construction.
using CUgraphNode = void*;
struct CUmemLocation {
  int type;  // CUmemLocationType
  int id;
};
inline constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
inline constexpr int CU_MEM_LOCATION_TYPE_HOST = 2;
inline constexpr CUdevice CU_DEVICE_CPU = -1;
// CUmemcpySrcAccessOrder
inline constexpr int CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 1;
struct CUmemcpyAttributes {
  int srcAccessOrder;  // CUmemcpySrcAccessOrder
  CUmemLocation srcLocHint;
  CUmemLocation dstLocHint;
  unsigned flags;
};
struct CUDA_MEMCPY3D_PEER {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  unsigned srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  CUcontext srcContext;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  unsigned dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  CUcontext dstContext;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};
struct CUoffset3D {
  size_t x, y, z;
};
struct CUextent3D {
  size_t width, height, depth;
};
inline constexpr int CU_MEMCPY_OPERAND_TYPE_POINTER = 1;
inline constexpr int CU_MEMCPY_OPERAND_TYPE_ARRAY = 2;
struct CUmemcpy3DOperand {
  int type;  // CUmemcpy3DOperandType
  union {
    struct {
      CUdeviceptr ptr;
      size_t rowLength, layerHeight;
      CUmemLocation locHint;
    } ptr;
    struct {
      CUarray array;
      CUoffset3D offset;
    } array;
  } op;
};
struct CUDA_MEMCPY3D_BATCH_OP {
  CUmemcpy3DOperand src, dst;
  CUextent3D extent;
  int srcAccessOrder;  // CUmemcpySrcAccessOrder
  unsigned flags;
};
static_assert(sizeof(CUDA_MEMCPY3D_PEER) == 200 && sizeof(CUmemcpyAttributes) == 24);
static_assert(sizeof(CUmemcpy3DOperand) == 40 && sizeof(CUDA_MEMCPY3D_BATCH_OP) == 112);

// Runtime side (only what the runtime wrappers forward).
using cudaError_t = int;
using cudaStream_t = void*;
using cudaEvent_t = void*;
inline constexpr cudaError_t cudaSuccess = 0;
inline constexpr cudaError_t cudaErrorUnknown = 999;
inline constexpr cudaError_t cudaErrorInitializationError = 3;
struct dim3 {
  unsigned x, y, z;
};
struct cudaPitchedPtr {
  void* ptr;
  size_t pitch, xsize, ysize;
};
struct cudaExtent {
  size_t width, height, depth;
};
// struct cudaMemLocation {int type, id;}, passed by value (cudaMemPrefetchAsync): forwarded as the
// one register it travels in.
using cudaMemLocation = uint64_t;
using cudaStreamCallback_t = void (*)(cudaStream_t, cudaError_t, void*);
using cudaHostFn_t = void (*)(void*);
// cudaMemcpyKind
inline constexpr int cudaMemcpyHostToHost = 0;
inline constexpr int cudaMemcpyHostToDevice = 1;
inline constexpr int cudaMemcpyDeviceToHost = 2;
inline constexpr int cudaMemcpyDeviceToDevice = 3;
inline constexpr int cudaMemcpyDefault = 4;

}  // namespace asyncwatch::cuda
