// The one table of intercepted CUDA runtime entry points (runtime_hooks.cpp defines their wrappers,
// entry_stubs.cpp their exported stubs). Only the macro: the fallbacks are expanded in
// runtime_hooks.cpp, where their names are in scope.
#pragma once

// X(symbol, Api, Category (the record type it writes), per_thread, (parameters), (arguments), fallback-or-nullptr). A fallback
// (and a Query) is evaluated in the wrapper's body, where `aw_per_thread` is the row's per_thread.
// AW_RT_BOTH(X, base, suffix, ...): the legacy entry point `base` and its per-thread-default-stream
// form `base##suffix` (_ptds, _ptsz), recorded as the same Api.
#define AW_RT_BOTH(X, base, suffix, cat, params, args, fb) \
  X(base, base, cat, 0, params, args, fb) X(base##suffix, base, cat, 1, params, args, fb)
#define AW_RUNTIME_HOOKS(X)                                                                                            \
  AW_RT_BOTH(X, cudaMemcpy, _ptds, Copy, (void* dst, const void* src, size_t n, int kind), (dst, src, n, kind),        \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, src, n, kind, nullptr, aw_per_thread); })         \
  AW_RT_BOTH(X, cudaMemcpyAsync, _ptsz, Copy, (void* dst, const void* src, size_t n, int kind, cudaStream_t st),       \
             (dst, src, n, kind, st),                                                                                  \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, src, n, kind, st, aw_per_thread); })              \
  AW_RT_BOTH(X, cudaMemcpy2D, _ptds, Copy,                                                                             \
             (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, int kind),                         \
             (dst, dp, src, sp, w, h, kind),                                                                           \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, src, w * h, kind, nullptr, aw_per_thread); })     \
  AW_RT_BOTH(X, cudaMemcpy2DAsync, _ptsz, Copy,                                                                        \
             (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, int kind, cudaStream_t st),        \
             (dst, dp, src, sp, w, h, kind, st),                                                                       \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, src, w * h, kind, st, aw_per_thread); })          \
  AW_RT_BOTH(X, cudaMemcpy3D, _ptds, Copy, (const void* p), (p), nullptr)                                              \
  AW_RT_BOTH(X, cudaMemcpy3DAsync, _ptsz, Copy, (const void* p, cudaStream_t st), (p, st), nullptr)                    \
  X(cudaMemcpyPeer, cudaMemcpyPeer, Copy, 0, (void* dst, int dd, const void* src, int sd, size_t n),                   \
    (dst, dd, src, sd, n), nullptr)                                                                                    \
  AW_RT_BOTH(X, cudaMemcpyPeerAsync, _ptsz, Copy,                                                                      \
             (void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t st), (dst, dd, src, sd, n, st),       \
             nullptr)                                                                                                  \
  AW_RT_BOTH(X, cudaMemcpyToSymbol, _ptds, Copy, (const void* sym, const void* src, size_t n, size_t off, int kind),   \
             (sym, src, n, off, kind),                                                                                 \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, nullptr, src, n, kind, nullptr, aw_per_thread); })     \
  AW_RT_BOTH(X, cudaMemcpyToSymbolAsync, _ptsz, Copy,                                                                  \
             (const void* sym, const void* src, size_t n, size_t off, int kind, cudaStream_t st),                      \
             (sym, src, n, off, kind, st),                                                                             \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, nullptr, src, n, kind, st, aw_per_thread); })          \
  AW_RT_BOTH(X, cudaMemcpyFromSymbol, _ptds, Copy, (void* dst, const void* sym, size_t n, size_t off, int kind),       \
             (dst, sym, n, off, kind),                                                                                 \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, nullptr, n, kind, nullptr, aw_per_thread); })     \
  AW_RT_BOTH(X, cudaMemcpyFromSymbolAsync, _ptsz, Copy,                                                                \
             (void* dst, const void* sym, size_t n, size_t off, int kind, cudaStream_t st),                            \
             (dst, sym, n, off, kind, st),                                                                             \
             [&](calls::AnyRecord& rec) { return fill_copy(rec, dst, nullptr, n, kind, st, aw_per_thread); })          \
  AW_RT_BOTH(X, cudaMemcpy2DToArray, _ptds, Copy,                                                                      \
             (void* a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, int kind),                \
             (a, wo, ho, src, sp, w, h, kind), nullptr)                                                                \
  AW_RT_BOTH(                                                                                                          \
      X, cudaMemcpy2DToArrayAsync, _ptsz, Copy,                                                                        \
      (void* a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, int kind, cudaStream_t st),      \
      (a, wo, ho, src, sp, w, h, kind, st), nullptr)                                                                   \
  AW_RT_BOTH(X, cudaMemcpy2DFromArray, _ptds, Copy,                                                                    \
             (void* dst, size_t dp, const void* a, size_t wo, size_t ho, size_t w, size_t h, int kind),                \
             (dst, dp, a, wo, ho, w, h, kind), nullptr)                                                                \
  AW_RT_BOTH(                                                                                                          \
      X, cudaMemcpy2DFromArrayAsync, _ptsz, Copy,                                                                      \
      (void* dst, size_t dp, const void* a, size_t wo, size_t ho, size_t w, size_t h, int kind, cudaStream_t st),      \
      (dst, dp, a, wo, ho, w, h, kind, st), nullptr)                                                                   \
  AW_RT_BOTH(X, cudaMemset, _ptds, Memset, (void* p, int v, size_t n), (p, v, n),                                      \
             [&](calls::AnyRecord& rec) { return fill_memset(rec, p, n, nullptr, aw_per_thread); })                    \
  AW_RT_BOTH(X, cudaMemsetAsync, _ptsz, Memset, (void* p, int v, size_t n, cudaStream_t st), (p, v, n, st),            \
             [&](calls::AnyRecord& rec) { return fill_memset(rec, p, n, st, aw_per_thread); })                         \
  AW_RT_BOTH(X, cudaMemset2D, _ptds, Memset, (void* p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h),  \
             [&](calls::AnyRecord& rec) { return fill_memset(rec, p, w * h, nullptr, aw_per_thread); })                \
  AW_RT_BOTH(X, cudaMemset2DAsync, _ptsz, Memset, (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t st), \
             (p, pitch, v, w, h, st),                                                                                  \
             [&](calls::AnyRecord& rec) { return fill_memset(rec, p, w * h, st, aw_per_thread); })                     \
  AW_RT_BOTH(X, cudaMemset3D, _ptds, Memset, (cudaPitchedPtr p, int v, cudaExtent e), (p, v, e),                       \
             [&](calls::AnyRecord& rec) {                                                                              \
               return fill_memset(rec, p.ptr, e.width * e.height * e.depth, nullptr, aw_per_thread);                   \
             })                                                                                                        \
  AW_RT_BOTH(                                                                                                          \
      X, cudaMemset3DAsync, _ptsz, Memset, (cudaPitchedPtr p, int v, cudaExtent e, cudaStream_t st), (p, v, e, st),    \
      [&](calls::AnyRecord& rec) { return fill_memset(rec, p.ptr, e.width * e.height * e.depth, st, aw_per_thread); }) \
  AW_RT_BOTH(X, cudaLaunchKernel, _ptsz, Launch,                                                                       \
             (const void* f, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t st),                             \
             (f, g, b, args, shared, st),                                                                              \
             [&](calls::AnyRecord& rec) { return fill_launch(rec, g, b, shared, st, aw_per_thread); })                 \
  AW_RT_BOTH(X, cudaLaunchKernelExC, _ptsz, Launch, (const void* cfg, const void* f, void** args), (cfg, f, args),     \
             nullptr)                                                                                                  \
  AW_RT_BOTH(X, cudaLaunchCooperativeKernel, _ptsz, Launch,                                                            \
             (const void* f, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t st),                             \
             (f, g, b, args, shared, st),                                                                              \
             [&](calls::AnyRecord& rec) { return fill_launch(rec, g, b, shared, st, aw_per_thread); })                 \
  AW_RT_BOTH(X, __cudaLaunchKernel, _ptsz, Launch,                                                                     \
             (void* k, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t st), (k, g, b, args, shared, st),      \
             [&](calls::AnyRecord& rec) { return fill_launch(rec, g, b, shared, st, aw_per_thread); })                 \
  AW_RT_BOTH(X, cudaGraphLaunch, _ptsz, GraphLaunch, (void* g, cudaStream_t st), (g, st), nullptr)                     \
  AW_RT_BOTH(X, cudaStreamAddCallback, _ptsz, HostFuncEnqueue,                                                         \
             (cudaStream_t st, cudaStreamCallback_t cb, void* d, unsigned fl), (st, cb, d, fl), nullptr)               \
  AW_RT_BOTH(X, cudaLaunchHostFunc, _ptsz, HostFuncEnqueue, (cudaStream_t st, cudaHostFn_t fn, void* d), (st, fn, d),  \
             nullptr)                                                                                                  \
  AW_RT_BOTH(X, cudaStreamSynchronize, _ptsz, Sync, (cudaStream_t st), (st), nullptr)                                  \
  X(cudaEventSynchronize, cudaEventSynchronize, Sync, 0, (cudaEvent_t e), (e), nullptr)                                \
  X(cudaDeviceSynchronize, cudaDeviceSynchronize, Sync, 0, (), (), nullptr)                                            \
  AW_RT_BOTH(X, cudaStreamWaitEvent, _ptsz, Sync, (cudaStream_t st, cudaEvent_t e, unsigned fl), (st, e, fl), nullptr) \
  AW_RT_BOTH(X, cudaStreamQuery, _ptsz, Sync, (cudaStream_t st), (st),                                                 \
             (Query{reinterpret_cast<uint64_t>(st), calls::stream_kind(st, aw_per_thread), aw_per_thread,              \
                    Api::cuStreamQuery}))                                                                              \
  X(cudaEventQuery, cudaEventQuery, Sync, 0, (cudaEvent_t e), (e),                                                     \
    (Query{reinterpret_cast<uint64_t>(e), trace::StreamKind::Unknown, false, Api::cuEventQuery}))                      \
  X(cudaMalloc, cudaMalloc, MemoryOp, 0, (void** p, size_t n), (p, n),                                                 \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Device, p ? *p : nullptr, n, 0); })               \
  /* cudaFree(0), the customary runtime initialization, reaches no cuMemFree: recorded here */                         \
  X(cudaFree, cudaFree, MemoryOp, 0, (void* p), (p),                                                                   \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Device, p, 0, 0); })                              \
  X(cudaMallocHost, cudaMallocHost, MemoryOp, 0, (void** p, size_t n), (p, n),                                         \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Pinned, p ? *p : nullptr, n, 0); })               \
  X(cudaHostAlloc, cudaHostAlloc, MemoryOp, 0, (void** p, size_t n, unsigned fl), (p, n, fl),                          \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Pinned, p ? *p : nullptr, n, fl); })              \
  X(cudaFreeHost, cudaFreeHost, MemoryOp, 0, (void* p), (p),                                                           \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Pinned, p, 0, 0); })                              \
  X(cudaHostRegister, cudaHostRegister, MemoryOp, 0, (void* p, size_t n, unsigned fl), (p, n, fl), nullptr)            \
  X(cudaHostUnregister, cudaHostUnregister, MemoryOp, 0, (void* p), (p), nullptr)                                      \
  X(cudaMallocManaged, cudaMallocManaged, MemoryOp, 0, (void** p, size_t n, unsigned fl), (p, n, fl),                  \
    [&](calls::AnyRecord& rec) { return fill_memory(rec, MemoryKind::Managed, p ? *p : nullptr, n, fl); })             \
  AW_RT_BOTH(X, cudaMallocAsync, _ptsz, MemoryOp, (void** p, size_t n, cudaStream_t st), (p, n, st), nullptr)          \
  AW_RT_BOTH(X, cudaFreeAsync, _ptsz, MemoryOp, (void* p, cudaStream_t st), (p, st), nullptr)                          \
  X(cudaStreamCreate, cudaStreamCreate, StreamCreate, 0, (cudaStream_t * p), (p), nullptr)                             \
  X(cudaStreamCreateWithFlags, cudaStreamCreateWithFlags, StreamCreate, 0, (cudaStream_t * p, unsigned fl), (p, fl),   \
    nullptr)                                                                                                           \
  X(cudaStreamCreateWithPriority, cudaStreamCreateWithPriority, StreamCreate, 0,                                       \
    (cudaStream_t * p, unsigned fl, int prio), (p, fl, prio), nullptr)                                                 \
  X(cudaStreamDestroy, cudaStreamDestroy, StreamDestroy, 0, (cudaStream_t st), (st), nullptr)                          \
  AW_RT_BOTH(X, cudaStreamBeginCapture, _ptsz, Capture, (cudaStream_t st, int mode), (st, mode), nullptr)              \
  AW_RT_BOTH(X, cudaStreamEndCapture, _ptsz, Capture, (cudaStream_t st, void** g), (st, g), nullptr)                   \
  /* trace version 3 APIs: named here, recorded by the driver wrappers they reach (the runtime 13.0 */                 \
  /* signatures; every argument is forwarded as passed). */                                                            \
  AW_RT_BOTH(X, cudaMemPrefetchAsync, _ptsz, ManagedOp,                                                                \
             (const void* p, size_t n, uint64_t loc, unsigned fl, cudaStream_t st), (p, n, loc, fl, st), nullptr)      \
  AW_RT_BOTH(X, cudaStreamAttachMemAsync, _ptsz, ManagedOp, (cudaStream_t st, void* p, size_t n, unsigned fl),         \
             (st, p, n, fl), nullptr)                                                                                  \
  AW_RT_BOTH(X, cudaMemcpyBatchAsync, _ptsz, BatchCopy,                                                                \
             (void** d, void** s, size_t* n, size_t c, void* a, size_t* ai, size_t na, cudaStream_t st),               \
             (d, s, n, c, a, ai, na, st), nullptr)                                                                     \
  AW_RT_BOTH(X, cudaMemcpy3DBatchAsync, _ptsz, BatchCopy,                                                              \
             (size_t n, void* ops, unsigned long long fl, cudaStream_t st), (n, ops, fl, st), nullptr)                 \
  AW_RT_BOTH(X, cudaMemcpy3DPeer, _ptds, Copy, (const void* p), (p), nullptr)                                          \
  AW_RT_BOTH(X, cudaMemcpy3DPeerAsync, _ptsz, Copy, (const void* p, cudaStream_t st), (p, st), nullptr)                \
  X(cudaGraphAddMemcpyNode, cudaGraphAddMemcpyNode, GraphOp, 0,                                                        \
    (void** node, void* g, void* const* deps, size_t nd, const void* p), (node, g, deps, nd, p), nullptr)              \
  X(cudaGraphAddMemcpyNode1D, cudaGraphAddMemcpyNode1D, GraphOp, 0,                                                    \
    (void** node, void* g, void* const* deps, size_t nd, void* dst, const void* src, size_t n, int kind),              \
    (node, g, deps, nd, dst, src, n, kind), nullptr)                                                                   \
  X(cudaGraphExecMemcpyNodeSetParams, cudaGraphExecMemcpyNodeSetParams, GraphOp, 0,                                    \
    (void* exec, void* node, const void* p), (exec, node, p), nullptr)                                                 \
  X(cudaGraphExecMemcpyNodeSetParams1D, cudaGraphExecMemcpyNodeSetParams1D, GraphOp, 0,                                \
    (void* exec, void* node, void* dst, const void* src, size_t n, int kind), (exec, node, dst, src, n, kind),         \
    nullptr)                                                                                                           \
  /* CUDA 11's cudaGraphInstantiate had 5 arguments and cudaGraphExecUpdate 4: every register is forwarded */          \
  X(cudaGraphInstantiate, cudaGraphInstantiate, GraphOp, 0,                                                            \
    (void** exec, void* g, unsigned long long fl, void* a11, size_t b11), (exec, g, fl, a11, b11), nullptr)            \
  X(cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags, GraphOp, 0,                                          \
    (void** exec, void* g, unsigned long long fl), (exec, g, fl), nullptr)                                             \
  X(cudaGraphExecUpdate, cudaGraphExecUpdate, GraphOp, 0, (void* exec, void* g, void* info, void* r11),                \
    (exec, g, info, r11), nullptr)
