// cuGetProcAddress: how the runtime (and driver-API programs) reach every entry point. Each returned
// pointer of a modelled entry point is an exported symbol, so dladdr() on it names exactly what was
// handed out (e.g. cuMemcpyHtoDAsync_v2_ptsz for flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
//
// Every other entry point of the toolkit (driver_entry_points.inc, generated from its headers) is
// answered as a driver answers it: found, with a stub that returns CUDA_ERROR_NOT_SUPPORTED and says
// once, when called, "asyncwatch-sim: <name> is not supported by the simulator". A runtime fetches
// several hundred entry points at start-up and uses few; a refusal there would end its
// initialisation. Names no toolkit has: CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>

#include <cudaProfiler.h>

#include "driver_state.h"
#include "exports.h"
#include "toolkit_entry_points.h"

namespace {

struct ProcEntry {
  const char* name;  // the name the caller asks for (no _v2/_ptsz suffix)
  int since;         // the first CUDA version this variant is returned for
  void* legacy;      // flags 0 or CU_GET_PROC_ADDRESS_LEGACY_STREAM
  void* per_thread;  // flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (null: same as legacy)
};

#define FN(f) reinterpret_cast<void*>(&f)
#define E(name, since, legacy) \
  { name, since, FN(legacy), nullptr }
#define EP(name, since, legacy, per_thread) \
  { name, since, FN(legacy), FN(per_thread) }

// The four memsets of one element size (1D and 2D, synchronous and asynchronous), as api_copy.cpp
// defines them (AW_MEMSETS).
#define EP_MEMSETS(bits)                                                                        \
  EP("cuMemsetD" #bits, 3020, cuMemsetD##bits##_v2, cuMemsetD##bits##_v2_ptds),                 \
      EP("cuMemsetD" #bits "Async", 3020, cuMemsetD##bits##Async, cuMemsetD##bits##Async_ptsz), \
      EP("cuMemsetD2D" #bits, 3020, cuMemsetD2D##bits##_v2, cuMemsetD2D##bits##_v2_ptds),       \
      EP("cuMemsetD2D" #bits "Async", 3020, cuMemsetD2D##bits##Async, cuMemsetD2D##bits##Async_ptsz)

// Declared in api_*.cpp; only their addresses are needed here.
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext*, unsigned int, CUdevice);

const ProcEntry kEntries[] = {
    E("cuGetProcAddress", 11030, cuGetProcAddress),
    E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    E("cuGetExportTable", 3000, cuGetExportTable),
    E("cuInit", 2000, cuInit),
    E("cuDriverGetVersion", 2020, cuDriverGetVersion),
    E("cuGetErrorName", 6000, cuGetErrorName),
    E("cuGetErrorString", 6000, cuGetErrorString),
    E("cuDeviceGet", 2000, cuDeviceGet),
    E("cuDeviceGetCount", 2000, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, cuDeviceGetName),
    E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    E("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    E("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    E("cuCtxCreate", 3020, cuCtxCreate_v2),
    E("cuCtxCreate", 12050, cuCtxCreate_v4),
    E("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    E("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    E("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    E("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    // CUDA 13 changed these two: the 13000 variants take the context (NULL = the current one).
    E("cuCtxGetDevice", 2000, cuCtxGetDevice),
    E("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize),
    E("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    E("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange),
    E("cuProfilerStart", 4000, cuProfilerStart),
    E("cuProfilerStop", 4000, cuProfilerStop),
    E("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    E("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    E("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, cuMemAlloc_v2),
    E("cuMemFree", 3020, cuMemFree_v2),
    E("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    E("cuMemAllocManaged", 6000, cuMemAllocManaged),
    E("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    E("cuMemHostAlloc", 2020, cuMemHostAlloc),
    E("cuMemFreeHost", 2000, cuMemFreeHost),
    E("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    E("cuMemHostUnregister", 4000, cuMemHostUnregister),
    E("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2),
    E("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    E("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    E("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    EP("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    EP("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    EP("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    EP("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    EP("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz),
    EP("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    EP("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    EP("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    EP("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
    EP("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
    EP("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
    EP("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz),
    EP("cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds),
    EP("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz),
    EP("cuMemcpy3DPeer", 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds),
    EP("cuMemcpy3DPeerAsync", 4000, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz),
    EP("cuMemcpyHtoA", 3020, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds),
    EP("cuMemcpyAtoH", 3020, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds),
    EP("cuMemcpyAtoA", 3020, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds),
    EP("cuMemcpyDtoA", 3020, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds),
    EP("cuMemcpyAtoD", 3020, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds),
    EP("cuMemcpyHtoAAsync", 3020, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz),
    EP("cuMemcpyAtoHAsync", 3020, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz),
    // CUDA 12.8 batches take a failIdx; 13.0 dropped it (_v2).
    EP("cuMemcpyBatchAsync", 12080, cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz),
    EP("cuMemcpyBatchAsync", 13000, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz),
    EP("cuMemcpy3DBatchAsync", 12080, cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz),
    EP("cuMemcpy3DBatchAsync", 13000, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz),
    // Managed memory: cuMemPrefetchAsync / cuMemAdvise take a CUmemLocation from 12.2 (_v2).
    EP("cuMemPrefetchAsync", 8000, cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz),
    EP("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz),
    E("cuMemAdvise", 8000, cuMemAdvise),
    E("cuMemAdvise", 12020, cuMemAdvise_v2),
    EP("cuStreamAttachMemAsync", 6000, cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz),
    // Stream-ordered allocation and pools
    EP("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    EP("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    EP("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    E("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    E("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    E("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    E("cuMemPoolCreate", 11020, cuMemPoolCreate),
    E("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    E("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    E("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    E("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    // CUDA arrays
    E("cuArrayCreate", 3020, cuArrayCreate_v2),
    E("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    E("cuArrayGetDescriptor", 3020, cuArrayGetDescriptor_v2),
    E("cuArray3DGetDescriptor", 3020, cuArray3DGetDescriptor_v2),
    E("cuArrayDestroy", 2000, cuArrayDestroy),
    EP_MEMSETS(8),
    EP_MEMSETS(16),
    EP_MEMSETS(32),
    E("cuStreamCreate", 2000, cuStreamCreate),
    E("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
    E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    EP("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    EP("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
    EP("cuStreamGetFlags", 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz),
    EP("cuStreamGetPriority", 5050, cuStreamGetPriority, cuStreamGetPriority_ptsz),
    EP("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    EP("cuStreamAddCallback", 5000, cuStreamAddCallback, cuStreamAddCallback_ptsz),
    EP("cuLaunchHostFunc", 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz),
    E("cuEventCreate", 2000, cuEventCreate),
    E("cuEventDestroy", 4000, cuEventDestroy_v2),
    EP("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
    EP("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz),
    E("cuEventQuery", 2000, cuEventQuery),
    E("cuEventSynchronize", 2000, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    EP("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    EP("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    EP("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    EP("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz),
    EP("cuStreamBeginCaptureToGraph", 12030, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz),
    EP("cuStreamUpdateCaptureDependencies", 11030, cuStreamUpdateCaptureDependencies,
       cuStreamUpdateCaptureDependencies_ptsz),
    EP("cuStreamUpdateCaptureDependencies", 12030, cuStreamUpdateCaptureDependencies_v2,
       cuStreamUpdateCaptureDependencies_v2_ptsz),
    EP("cuStreamGetDevice", 12080, cuStreamGetDevice, cuStreamGetDevice_ptsz),
    // Graphs. cuGraphInstantiate: CUDA 10/11 take an error node and a log buffer; from 12.0 the
    // name means cuGraphInstantiateWithFlags (cuda.h), which cuGetProcAddress hands out.
    E("cuGraphCreate", 10000, cuGraphCreate),
    E("cuGraphDestroy", 10000, cuGraphDestroy),
    E("cuGraphClone", 10000, cuGraphClone),
    E("cuGraphNodeFindInClone", 10000, cuGraphNodeFindInClone),
    E("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),
    E("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
    E("cuGraphAddMemcpyNode", 10000, cuGraphAddMemcpyNode),
    E("cuGraphMemcpyNodeGetParams", 10000, cuGraphMemcpyNodeGetParams),
    E("cuGraphMemcpyNodeSetParams", 10000, cuGraphMemcpyNodeSetParams),
    E("cuGraphAddMemsetNode", 10000, cuGraphAddMemsetNode),
    E("cuGraphAddHostNode", 10000, cuGraphAddHostNode),
    E("cuGraphAddEmptyNode", 10000, cuGraphAddEmptyNode),
    E("cuGraphAddEventRecordNode", 11010, cuGraphAddEventRecordNode),
    E("cuGraphAddEventWaitNode", 11010, cuGraphAddEventWaitNode),
    E("cuGraphAddDependencies", 10000, cuGraphAddDependencies),
    E("cuGraphAddDependencies", 12030, cuGraphAddDependencies_v2),
    E("cuGraphGetNodes", 10000, cuGraphGetNodes),
    E("cuGraphGetRootNodes", 10000, cuGraphGetRootNodes),
    E("cuGraphNodeGetType", 10000, cuGraphNodeGetType),
    E("cuGraphDestroyNode", 10000, cuGraphDestroyNode),
    E("cuGraphInstantiate", 10000, cuGraphInstantiate),
    E("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    E("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    EP("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz),
    E("cuGraphExecUpdate", 10020, cuGraphExecUpdate),
    E("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2),
    E("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams),
    E("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
    E("cuGraphExecMemcpyNodeSetParams", 10020, cuGraphExecMemcpyNodeSetParams),
    E("cuGraphExecMemsetNodeSetParams", 10020, cuGraphExecMemsetNodeSetParams),
    E("cuGraphExecHostNodeSetParams", 10020, cuGraphExecHostNodeSetParams),
    EP("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz),
    EP("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    E("cuModuleLoadData", 2000, cuModuleLoadData),
    E("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    E("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
    E("cuModuleUnload", 2000, cuModuleUnload),
    E("cuModuleGetFunction", 2000, cuModuleGetFunction),
    E("cuLibraryLoadData", 12000, cuLibraryLoadData),
    E("cuLibraryUnload", 12000, cuLibraryUnload),
    E("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    E("cuLibraryGetModule", 12000, cuLibraryGetModule),
    E("cuKernelGetFunction", 12000, cuKernelGetFunction),
    E("cuKernelGetName", 12030, cuKernelGetName),
    E("cuFuncGetName", 12030, cuFuncGetName),
    EP("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    EP("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    EP("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
};

// One stub per toolkit entry point (so that the stub can say which was called).
using aw_sim::kToolkitCount;
using aw_sim::kToolkitEntries;
std::atomic<bool> g_stub_called[kToolkitCount];

template <size_t I>
CUresult CUDAAPI not_supported_stub() {  // callers pass arguments; none is read
  if (!g_stub_called[I].exchange(true, std::memory_order_relaxed)) aw_sim::unsupported(kToolkitEntries[I].name);
  return CUDA_ERROR_NOT_SUPPORTED;
}
using StubFn = CUresult(CUDAAPI*)();
template <size_t... I>
constexpr std::array<StubFn, sizeof...(I)> make_stubs(std::index_sequence<I...>) {
  return {&not_supported_stub<I>...};
}
constexpr std::array<StubFn, kToolkitCount> kStubs = make_stubs(std::make_index_sequence<kToolkitCount>());

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const ProcEntry& e : kEntries) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.since <= version && (!best || e.since > best->since)) best = &e;
  }
  if (!best && !known) {
    for (size_t i = 0; i < kToolkitCount; ++i) {
      if (std::strcmp(kToolkitEntries[i].name, symbol) != 0) continue;
      known = true;
      if (kToolkitEntries[i].since > version) break;
      *pfn = reinterpret_cast<void*>(kStubs[i]);
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  if (!best) {
    if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = per_thread && best->per_thread ? best->per_thread : best->legacy;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                                      CUdriverProcAddressQueryResult* symbolStatus) {
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

// NVIDIA's own runtime (the static one nvcc links by default, or a libcudart.so a program brings
// along) asks for the driver's private, undocumented interfaces here before anything else and
// cannot start without them; the simulator has its own runtime instead (libcudart.so.13, which
// `asyncwatch run --sim` puts first on the library path). The answer is CUDA_ERROR_NO_DEVICE: the
// runtime then fails every call with cudaErrorNoDevice, which the analyzer counts as "no usable
// device" (exit 4: a gate does not pass on an empty report), as it is for that runtime.
AW_DRIVER_EXPORT CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* id) {
  static std::atomic<bool> said{false};
  if (table) *table = nullptr;
  if (!said.exchange(true, std::memory_order_relaxed))
    std::fputs(
        "asyncwatch-sim: this program's CUDA runtime is NVIDIA's (nvcc's default static runtime, or a "
        "libcudart the program brings), which needs the driver's private interfaces: the simulator runs "
        "programs built with -cudart shared (CMake: CUDA_RUNTIME_LIBRARY Shared)\n",
        stderr);
  return id ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_INVALID_VALUE;
}
