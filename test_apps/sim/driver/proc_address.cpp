// cuGetProcAddress: how the runtime (and driver-API programs) reach every entry point. Each returned
// pointer is an exported symbol, so dladdr() on it names exactly what was handed out
// (e.g. cuMemcpyHtoDAsync_v2_ptsz for flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
//
// Names the simulator does not implement: CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
// and one line "asyncwatch-sim: <name> is not supported by the simulator" on stderr.
#include <cstdio>
#include <cstring>

#include "driver_state.h"
#include "exports.h"



namespace {

struct ProcEntry {
  const char* name;  // the name the caller asks for (no _v2/_ptsz suffix)
  int since;         // the first CUDA version this variant is returned for
  void* legacy;      // flags 0 or CU_GET_PROC_ADDRESS_LEGACY_STREAM
  void* per_thread;  // flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (null: same as legacy)
};

#define FN(f) reinterpret_cast<void*>(&f)
#define E(name, since, legacy) {name, since, FN(legacy), nullptr}
#define EP(name, since, legacy, per_thread) {name, since, FN(legacy), FN(per_thread)}

// Declared in api_*.cpp; only their addresses are needed here.
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext*, unsigned int, CUdevice);

const ProcEntry kEntries[] = {
    E("cuGetProcAddress", 11030, cuGetProcAddress),
    E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
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
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, cuMemAlloc_v2),
    E("cuMemFree", 3020, cuMemFree_v2),
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
    EP("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    EP("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds),
    EP("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
    EP("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    EP("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz),
    EP("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz),
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
    E("cuGraphInstantiate", 11000, cuGraphInstantiateWithFlags),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    EP("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    E("cuGraphDestroy", 10000, cuGraphDestroy),
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
    E("cuSimCaptureMemcpy", 0, cuSimCaptureMemcpy),
};

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
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
  if (!best) {
    if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!known) aw_sim::unsupported(symbol);
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
