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
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void* user,
                                                           unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user);
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                                        void** extra);
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                                 unsigned int gz, unsigned int bx, unsigned int by,
                                                                 unsigned int bz, unsigned int shared, CUstream s,
                                                                 void** params);
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
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus* status,
                                                                 cuuint64_t* id, CUgraph* graph,
                                                                 const CUgraphNode** deps,
                                                                 const CUgraphEdgeData** edges, size_t* num_deps);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s);

// Graph entry points whose old versions cuda.h hides behind macros (cudaTypedefs.h PFN_*_v10000 ...).
#undef cuGraphAddKernelNode
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphAddDependencies
#undef cuGraphExecUpdate
#undef cuGraphInstantiate
#undef cuStreamUpdateCaptureDependencies
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                                       const CUDA_KERNEL_NODE_PARAMS_v1* p);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node,
                                                                 const CUDA_KERNEL_NODE_PARAMS_v1* p);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                                         size_t n);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode* error_node,
                                                    CUgraphExecUpdateResult* result);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node, char* log,
                                                     size_t log_size);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node,
                                                        char* log, size_t log_size);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph g,
                                                                    CUDA_GRAPH_INSTANTIATE_PARAMS* p);
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec exec, CUstream s);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                                   const CUgraphEdgeData* edges, size_t n,
                                                                   CUstreamCaptureMode mode);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode* deps, size_t n,
                                                                    unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode* deps, size_t n,
                                                                         unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream s, CUgraphNode* deps,
                                                                            const CUgraphEdgeData* edges, size_t n,
                                                                            unsigned int flags);
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream s, CUdevice* dev);

// Copies: per-thread variants and the CUDA 12.8 batch forms (cuda.h maps the names to _v2).
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#define AW_COPY_DECL(NAME, ...) AW_DRIVER_EXPORT CUresult CUDAAPI NAME(__VA_ARGS__);
AW_COPY_DECL(cuMemcpy3D_v2_ptds, const CUDA_MEMCPY3D* p)
AW_COPY_DECL(cuMemcpy3DAsync_v2_ptsz, const CUDA_MEMCPY3D* p, CUstream s)
AW_COPY_DECL(cuMemcpyPeer_ptds, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
AW_COPY_DECL(cuMemcpyPeerAsync_ptsz, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
             CUstream s)
AW_COPY_DECL(cuMemcpy3DPeer_ptds, const CUDA_MEMCPY3D_PEER* p)
AW_COPY_DECL(cuMemcpy3DPeerAsync_ptsz, const CUDA_MEMCPY3D_PEER* p, CUstream s)
AW_COPY_DECL(cuMemcpyHtoA_v2_ptds, CUarray dst, size_t off, const void* src, size_t n)
AW_COPY_DECL(cuMemcpyAtoH_v2_ptds, void* dst, CUarray src, size_t off, size_t n)
AW_COPY_DECL(cuMemcpyAtoA_v2_ptds, CUarray dst, size_t doff, CUarray src, size_t soff, size_t n)
AW_COPY_DECL(cuMemcpyDtoA_v2_ptds, CUarray dst, size_t off, CUdeviceptr src, size_t n)
AW_COPY_DECL(cuMemcpyAtoD_v2_ptds, CUdeviceptr dst, CUarray src, size_t off, size_t n)
AW_COPY_DECL(cuMemcpyHtoAAsync_v2_ptsz, CUarray dst, size_t off, const void* src, size_t n, CUstream s)
AW_COPY_DECL(cuMemcpyAtoHAsync_v2_ptsz, void* dst, CUarray src, size_t off, size_t n, CUstream s)
AW_COPY_DECL(cuMemsetD2D8_v2_ptds, CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h)
AW_COPY_DECL(cuMemsetD2D16_v2_ptds, CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h)
AW_COPY_DECL(cuMemsetD2D32_v2_ptds, CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h)
AW_COPY_DECL(cuMemsetD2D8Async_ptsz, CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s)
AW_COPY_DECL(cuMemsetD2D16Async_ptsz, CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s)
AW_COPY_DECL(cuMemsetD2D32Async_ptsz, CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s)
AW_COPY_DECL(cuMemcpyBatchAsync, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
             CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs, size_t* fail_idx, CUstream s)
AW_COPY_DECL(cuMemcpyBatchAsync_ptsz, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
             CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs, size_t* fail_idx, CUstream s)
AW_COPY_DECL(cuMemcpyBatchAsync_v2_ptsz, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
             CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs, CUstream s)
AW_COPY_DECL(cuMemcpy3DBatchAsync, size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx, unsigned long long flags,
             CUstream s)
AW_COPY_DECL(cuMemcpy3DBatchAsync_ptsz, size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
             unsigned long long flags, CUstream s)
AW_COPY_DECL(cuMemcpy3DBatchAsync_v2_ptsz, size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s)
// Simulator-private: records a runtime copy into a capturing stream as a memcpy node without
// reaching any public copy entry point (a real runtime's captured cudaMemcpyAsync reaches no
// cuMemcpy*: measured on an H200 with CUDA 13).
// Managed memory (api_managed.cpp)
#undef cuMemPrefetchAsync
#undef cuMemAdvise
AW_COPY_DECL(cuMemPrefetchAsync, CUdeviceptr p, size_t n, CUdevice dst, CUstream s)
AW_COPY_DECL(cuMemPrefetchAsync_ptsz, CUdeviceptr p, size_t n, CUdevice dst, CUstream s)
AW_COPY_DECL(cuMemPrefetchAsync_v2_ptsz, CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s)
AW_COPY_DECL(cuMemAdvise, CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
AW_COPY_DECL(cuStreamAttachMemAsync_ptsz, CUstream s, CUdeviceptr p, size_t n, unsigned int flags)
// Stream-ordered allocation (api_mempool.cpp)
AW_COPY_DECL(cuMemAllocAsync_ptsz, CUdeviceptr* p, size_t n, CUstream s)
AW_COPY_DECL(cuMemFreeAsync_ptsz, CUdeviceptr p, CUstream s)
AW_COPY_DECL(cuMemAllocFromPoolAsync_ptsz, CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s)
