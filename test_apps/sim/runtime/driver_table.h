// The driver entry points the simulated runtime uses, obtained exactly as the real runtime does:
// dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then cuGetProcAddress for each name, with
// flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the per-thread-default-stream set.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

namespace aw_rt {

typedef CUresult(CUDAAPI* SimCaptureMemcpyFn)(void* dst, const void* src, size_t n, CUstream s, int per_thread);

// Entry points whose meaning of stream handle 0 depends on the default-stream mode.
struct StreamEntryPoints {
  decltype(&cuMemcpyHtoDAsync_v2) memcpy_htod_async;
  decltype(&cuMemcpyDtoHAsync_v2) memcpy_dtoh_async;
  decltype(&cuMemcpyDtoDAsync_v2) memcpy_dtod_async;
  decltype(&cuMemcpyAsync) memcpy_async;
  decltype(&cuMemcpy2DAsync_v2) memcpy_2d_async;
  decltype(&cuMemcpyHtoD_v2) memcpy_htod;
  decltype(&cuMemcpyDtoH_v2) memcpy_dtoh;
  decltype(&cuMemcpyDtoD_v2) memcpy_dtod;
  decltype(&cuMemcpy) memcpy_default;
  decltype(&cuMemcpy2D_v2) memcpy_2d;
  decltype(&cuMemsetD8_v2) memset_d8;
  decltype(&cuMemsetD8Async) memset_d8_async;
  decltype(&cuStreamSynchronize) stream_synchronize;
  decltype(&cuStreamQuery) stream_query;
  decltype(&cuStreamWaitEvent) stream_wait_event;
  decltype(&cuStreamAddCallback) stream_add_callback;
  decltype(&cuLaunchHostFunc) launch_host_func;
  decltype(&cuStreamGetFlags) stream_get_flags;
  decltype(&cuStreamGetPriority) stream_get_priority;
  decltype(&cuEventRecord) event_record;
  decltype(&cuEventRecordWithFlags) event_record_with_flags;
  decltype(&cuStreamBeginCapture_v2) stream_begin_capture;
  decltype(&cuStreamEndCapture) stream_end_capture;
  decltype(&cuStreamIsCapturing) stream_is_capturing;
  decltype(&cuLaunchKernel) launch_kernel;
  decltype(&cuGraphLaunch) graph_launch;
};

struct DriverEntryPoints {
  decltype(&cuInit) init;
  decltype(&cuDriverGetVersion) driver_get_version;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDeviceGetCount) device_get_count;
  decltype(&cuDeviceGetName) device_get_name;
  decltype(&cuDeviceGetAttribute) device_get_attribute;
  decltype(&cuDeviceTotalMem_v2) device_total_mem;
  decltype(&cuDevicePrimaryCtxRetain) primary_ctx_retain;
  decltype(&cuDevicePrimaryCtxReset_v2) primary_ctx_reset;
  decltype(&cuCtxSetCurrent) ctx_set_current;
  decltype(&cuCtxSynchronize_v2) ctx_synchronize;  // "cuCtxSynchronize" at 13000: the _v2 (context argument)
  decltype(&cuMemGetInfo_v2) mem_get_info;
  decltype(&cuMemAlloc_v2) mem_alloc;
  decltype(&cuMemFree_v2) mem_free;
  decltype(&cuMemAllocManaged) mem_alloc_managed;
  decltype(&cuMemHostAlloc) mem_host_alloc;
  decltype(&cuMemFreeHost) mem_free_host;
  decltype(&cuMemHostRegister_v2) mem_host_register;
  decltype(&cuMemHostUnregister) mem_host_unregister;
  decltype(&cuMemHostGetDevicePointer_v2) mem_host_get_device_pointer;
  decltype(&cuPointerGetAttributes) pointer_get_attributes;
  decltype(&cuStreamCreate) stream_create;
  decltype(&cuStreamCreateWithPriority) stream_create_with_priority;
  decltype(&cuStreamDestroy_v2) stream_destroy;
  decltype(&cuEventCreate) event_create;
  decltype(&cuEventDestroy_v2) event_destroy;
  decltype(&cuEventQuery) event_query;
  decltype(&cuEventSynchronize) event_synchronize;
  decltype(&cuEventElapsedTime_v2) event_elapsed_time;
  decltype(&cuGraphInstantiateWithFlags) graph_instantiate;
  decltype(&cuGraphExecDestroy) graph_exec_destroy;
  decltype(&cuGraphDestroy) graph_destroy;
  decltype(&cuLibraryLoadData) library_load_data;
  decltype(&cuLibraryUnload) library_unload;
  decltype(&cuLibraryGetKernel) library_get_kernel;
  SimCaptureMemcpyFn sim_capture_memcpy;
  StreamEntryPoints legacy;      // cuGetProcAddress flags 0
  StreamEntryPoints per_thread;  // flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
};

// Loads the driver once; null if libcuda.so.1 or an entry point is missing (message on stderr).
const DriverEntryPoints* driver_entry_points();

// Initializes the runtime on first use (cuInit, primary context) and makes the primary context
// current on the calling thread. Every runtime API calls this first.
cudaError_t ensure_initialized();

// The driver set for a runtime entry point: legacy names, or _ptsz/_ptds ones.
inline const StreamEntryPoints& stream_api(bool per_thread) {
  return per_thread ? driver_entry_points()->per_thread : driver_entry_points()->legacy;
}

const DriverEntryPoints& drv();  // after ensure_initialized() succeeded

}  // namespace aw_rt
