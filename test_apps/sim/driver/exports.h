// Declarations of the exported entry points that cuda.h only declares under internal macros:
// the per-thread-default-stream variants (_ptsz: async calls, _ptds: synchronous calls) and the
// older versions of versioned names. proc_address.cpp takes their addresses.
#pragma once
#include <cuda.h>

// cuda.h maps these names to their newest versions; the simulator exports the old ones too.
#undef cuGetProcAddress
#undef cuEventElapsedTime

#define AW_DRIVER_EXPORT extern "C" __attribute__((visibility("default")))

AW_DRIVER_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* p);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* p, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void* user, unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream s, unsigned int* flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream s, int* priority);
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                      unsigned int bx, unsigned int by, unsigned int bz,
                                                      unsigned int shmem, CUstream s, void** params, void** extra);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph* graph);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* status);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                                                                 CUgraph* graph, const CUgraphNode** deps,
                                                                 const CUgraphEdgeData** edges, size_t* num_deps);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s);
// Simulator-private: records a runtime cudaMemcpyAsync into a capturing stream (see proc_address.cpp).
AW_DRIVER_EXPORT CUresult CUDAAPI cuSimCaptureMemcpy(void* dst, const void* src, size_t n, CUstream s,
                                                     int per_thread_default_stream);
