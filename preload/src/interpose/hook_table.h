// The one table of intercepted driver entry points: exact exported name, the Api id recorded
// for it, and whether it is a per-thread-default-stream (_ptsz/_ptds) variant. Each row has an
// exported wrapper of the same name (driver_hooks_*.cpp, proc_address.cpp); dlsym and
// cuGetProcAddress hand that wrapper out in place of the driver's function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "asyncwatch/trace_format.h"

// X(symbol, api, per_thread)
#define AW_LEGACY_AND_PER_THREAD(X, base, suffix) X(base, base, 0) X(base##suffix, base, 1)
#define AW_DRIVER_HOOKS(X)                                                           \
  X(cuGetProcAddress, None, 0)                                                       \
  X(cuGetProcAddress_v2, None, 0)                                                    \
  /* capture ranges (profiler_hooks.cpp), not recorded */                            \
  X(cuProfilerStart, None, 0)                                                        \
  X(cuProfilerStop, None, 0)                                                         \
  /* copies */                                                                       \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy, _ptds)                                       \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyAsync, _ptsz)                                  \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyHtoD_v2, _ptds)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyDtoH_v2, _ptds)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyDtoD_v2, _ptds)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyHtoDAsync_v2, _ptsz)                           \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyDtoHAsync_v2, _ptsz)                           \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyDtoDAsync_v2, _ptsz)                           \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy2D_v2, _ptds)                                  \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy2DUnaligned_v2, _ptds)                         \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy2DAsync_v2, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3D_v2, _ptds)                                  \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3DAsync_v2, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyPeer, _ptds)                                   \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyPeerAsync, _ptsz)                              \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyHtoAAsync_v2, _ptsz)                           \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyAtoHAsync_v2, _ptsz)                           \
  /* memsets */                                                                      \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD8_v2, _ptds)                                  \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD16_v2, _ptds)                                 \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD32_v2, _ptds)                                 \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD8Async, _ptsz)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD16Async, _ptsz)                               \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD32Async, _ptsz)                               \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D8_v2, _ptds)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D16_v2, _ptds)                               \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D32_v2, _ptds)                               \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D8Async, _ptsz)                              \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D16Async, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuMemsetD2D32Async, _ptsz)                             \
  /* launches */                                                                     \
  AW_LEGACY_AND_PER_THREAD(X, cuLaunchKernel, _ptsz)                                 \
  AW_LEGACY_AND_PER_THREAD(X, cuLaunchKernelEx, _ptsz)                               \
  AW_LEGACY_AND_PER_THREAD(X, cuLaunchCooperativeKernel, _ptsz)                      \
  AW_LEGACY_AND_PER_THREAD(X, cuGraphLaunch, _ptsz)                                  \
  /* host functions */                                                               \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamAddCallback, _ptsz)                            \
  AW_LEGACY_AND_PER_THREAD(X, cuLaunchHostFunc, _ptsz)                               \
  /* synchronization */                                                              \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamSynchronize, _ptsz)                            \
  X(cuEventSynchronize, cuEventSynchronize, 0)                                       \
  X(cuCtxSynchronize, cuCtxSynchronize, 0)                                           \
  X(cuCtxSynchronize_v2, cuCtxSynchronize_v2, 0)                                     \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamWaitEvent, _ptsz)                              \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamQuery, _ptsz)                                  \
  X(cuEventQuery, cuEventQuery, 0)                                                   \
  /* memory management */                                                            \
  X(cuMemAlloc_v2, cuMemAlloc_v2, 0)                                                 \
  X(cuMemFree_v2, cuMemFree_v2, 0)                                                   \
  X(cuMemAllocHost_v2, cuMemAllocHost_v2, 0)                                         \
  X(cuMemHostAlloc, cuMemHostAlloc, 0)                                               \
  X(cuMemFreeHost, cuMemFreeHost, 0)                                                 \
  X(cuMemHostRegister_v2, cuMemHostRegister_v2, 0)                                   \
  X(cuMemHostUnregister, cuMemHostUnregister, 0)                                     \
  X(cuMemAllocManaged, cuMemAllocManaged, 0)                                         \
  AW_LEGACY_AND_PER_THREAD(X, cuMemAllocAsync, _ptsz)                                \
  AW_LEGACY_AND_PER_THREAD(X, cuMemFreeAsync, _ptsz)                                 \
  /* streams and capture */                                                          \
  X(cuStreamCreate, cuStreamCreate, 0)                                               \
  X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 0)                       \
  X(cuStreamDestroy_v2, cuStreamDestroy_v2, 0)                                       \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamBeginCapture_v2, _ptsz)                        \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamEndCapture, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamBeginCaptureToGraph, _ptsz)                    \
  /* version 3 (hooked in driver_hooks_managed_batch.cpp, driver_hooks_graph.cpp) */ \
  AW_LEGACY_AND_PER_THREAD(X, cuMemPrefetchAsync, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuMemPrefetchAsync_v2, _ptsz)                          \
  AW_LEGACY_AND_PER_THREAD(X, cuStreamAttachMemAsync, _ptsz)                         \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyBatchAsync, _ptsz)                             \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpyBatchAsync_v2, _ptsz)                          \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3DBatchAsync, _ptsz)                           \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3DBatchAsync_v2, _ptsz)                        \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3DPeer, _ptds)                                 \
  AW_LEGACY_AND_PER_THREAD(X, cuMemcpy3DPeerAsync, _ptsz)                            \
  X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode, 0)                                   \
  X(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams, 0)               \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 0)                     \
  AW_LEGACY_AND_PER_THREAD(X, cuGraphInstantiateWithParams, _ptsz)                   \
  X(cuGraphExecUpdate_v2, cuGraphExecUpdate_v2, 0)                                   \
  /* version 4 */                                                                    \
  X(cuGraphClone, cuGraphClone, 0)

// The exported wrapper as the library's own pointers name it (HookInfo::wrapper, the runtime
// wrappers dlsym hands out): on x86-64 the exported stub's hidden alias (interpose/entry_stubs.cpp),
// bound at link time, so that the loader needs no symbol lookup for them (R_X86_64_RELATIVE).
#if defined(__x86_64__)
#define AW_EXPORTED_NAME(sym)  aw_stub_##sym
#define AW_EXPORTED_VISIBILITY __attribute__((visibility("hidden")))
#else
#define AW_EXPORTED_NAME(sym)  sym
#define AW_EXPORTED_VISIBILITY __attribute__((visibility("default")))
#endif

namespace asyncwatch::hooks {

enum class Hook : uint16_t {
#define AW_HOOK_ENUM(sym, api, pt) sym,
  AW_DRIVER_HOOKS(AW_HOOK_ENUM)
#undef AW_HOOK_ENUM
      Count
};
inline constexpr size_t kHookCount = static_cast<size_t>(Hook::Count);

struct HookInfo {
  const char* name;
  trace::Api api;
  bool per_thread;
  void* wrapper;  // our exported function of the same name (AW_EXPORTED_NAME)
};

const HookInfo& info(Hook h) noexcept;
// Exact-name lookup (no prefix matching): returns Hook::Count when `name` is not hooked.
Hook find(const char* name) noexcept;
// Whether a hooked name starts with `prefix` (cuGetProcAddress's name: the function it returns is
// that name or a form of it, e.g. cuMemcpyHtoDAsync -> cuMemcpyHtoDAsync_v2_ptsz).
bool any_starts_with(const char* prefix) noexcept;

}  // namespace asyncwatch::hooks
