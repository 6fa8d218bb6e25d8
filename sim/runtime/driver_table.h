// The driver entry points the simulated runtime uses, obtained exactly as the real runtime does:
// dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then cuGetProcAddress for each name, with
// flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the per-thread-default-stream set.
#pragma once
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_runtime_api.h>

namespace aw_rt {

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
  decltype(&cuLaunchKernelEx) launch_kernel_ex;
  decltype(&cuLaunchCooperativeKernel) launch_cooperative_kernel;
  decltype(&cuGraphLaunch) graph_launch;
  decltype(&cuGraphUpload) graph_upload;
  decltype(&cuGraphInstantiateWithParams) graph_instantiate_with_params;
  decltype(&cuStreamBeginCaptureToGraph) stream_begin_capture_to_graph;
  decltype(&cuStreamGetCaptureInfo_v3) stream_get_capture_info;
  decltype(&cuStreamUpdateCaptureDependencies_v2) stream_update_capture_dependencies;
  decltype(&cuStreamGetDevice) stream_get_device;
  decltype(&cuMemcpy3D_v2) memcpy_3d;
  decltype(&cuMemcpy3DAsync_v2) memcpy_3d_async;
  decltype(&cuMemcpy3DPeer) memcpy_3d_peer;
  decltype(&cuMemcpy3DPeerAsync) memcpy_3d_peer_async;
  decltype(&cuMemcpyPeer) memcpy_peer;
  decltype(&cuMemcpyPeerAsync) memcpy_peer_async;
  decltype(&cuMemcpyBatchAsync_v2) memcpy_batch_async;       // "cuMemcpyBatchAsync" at 13000
  decltype(&cuMemcpy3DBatchAsync_v2) memcpy_3d_batch_async;  // "cuMemcpy3DBatchAsync" at 13000
  decltype(&cuMemsetD2D8_v2) memset_d2d8;
  decltype(&cuMemsetD2D8Async) memset_d2d8_async;
  decltype(&cuMemPrefetchAsync_v2) mem_prefetch_async;  // "cuMemPrefetchAsync" at 13000
  decltype(&cuStreamAttachMemAsync) stream_attach_mem_async;
  decltype(&cuMemAllocAsync) mem_alloc_async;
  decltype(&cuMemFreeAsync) mem_free_async;
  decltype(&cuMemAllocFromPoolAsync) mem_alloc_from_pool_async;
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
  decltype(&cuProfilerStart) profiler_start;
  decltype(&cuProfilerStop) profiler_stop;
  decltype(&cuMemAlloc_v2) mem_alloc;
  decltype(&cuMemFree_v2) mem_free;
  decltype(&cuMemAllocPitch_v2) mem_alloc_pitch;
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
  decltype(&cuDevicePrimaryCtxRelease_v2) primary_ctx_release;
  decltype(&cuDeviceCanAccessPeer) device_can_access_peer;
  decltype(&cuCtxEnablePeerAccess) ctx_enable_peer_access;
  decltype(&cuCtxDisablePeerAccess) ctx_disable_peer_access;
  decltype(&cuGraphInstantiateWithFlags) graph_instantiate;  // "cuGraphInstantiate" at 13000 is this one
  decltype(&cuGraphExecDestroy) graph_exec_destroy;
  decltype(&cuGraphDestroy) graph_destroy;
  decltype(&cuGraphCreate) graph_create;
  decltype(&cuGraphClone) graph_clone;
  decltype(&cuGraphNodeFindInClone) graph_node_find_in_clone;
  decltype(&cuGraphAddKernelNode_v2) graph_add_kernel_node;
  decltype(&cuGraphAddMemcpyNode) graph_add_memcpy_node;
  decltype(&cuGraphAddMemsetNode) graph_add_memset_node;
  decltype(&cuGraphAddHostNode) graph_add_host_node;
  decltype(&cuGraphAddEmptyNode) graph_add_empty_node;
  decltype(&cuGraphAddEventRecordNode) graph_add_event_record_node;
  decltype(&cuGraphAddEventWaitNode) graph_add_event_wait_node;
  decltype(&cuGraphAddDependencies_v2) graph_add_dependencies;
  decltype(&cuGraphGetNodes) graph_get_nodes;
  decltype(&cuGraphGetRootNodes) graph_get_root_nodes;
  decltype(&cuGraphNodeGetType) graph_node_get_type;
  decltype(&cuGraphDestroyNode) graph_destroy_node;
  decltype(&cuGraphMemcpyNodeGetParams) graph_memcpy_node_get_params;
  decltype(&cuGraphMemcpyNodeSetParams) graph_memcpy_node_set_params;
  decltype(&cuGraphExecUpdate_v2) graph_exec_update;
  decltype(&cuGraphExecKernelNodeSetParams_v2) graph_exec_kernel_node_set_params;
  decltype(&cuGraphExecMemcpyNodeSetParams) graph_exec_memcpy_node_set_params;
  decltype(&cuGraphExecMemsetNodeSetParams) graph_exec_memset_node_set_params;
  decltype(&cuGraphExecHostNodeSetParams) graph_exec_host_node_set_params;
  decltype(&cuArray3DCreate_v2) array_3d_create;
  decltype(&cuArray3DGetDescriptor_v2) array_3d_get_descriptor;
  decltype(&cuArrayDestroy) array_destroy;
  decltype(&cuMemAdvise_v2) mem_advise;
  decltype(&cuDeviceGetDefaultMemPool) device_get_default_mem_pool;
  decltype(&cuDeviceGetMemPool) device_get_mem_pool;
  decltype(&cuDeviceSetMemPool) device_set_mem_pool;
  decltype(&cuMemPoolCreate) mem_pool_create;
  decltype(&cuMemPoolDestroy) mem_pool_destroy;
  decltype(&cuMemPoolTrimTo) mem_pool_trim_to;
  decltype(&cuMemPoolSetAttribute) mem_pool_set_attribute;
  decltype(&cuMemPoolGetAttribute) mem_pool_get_attribute;
  decltype(&cuLibraryLoadData) library_load_data;
  decltype(&cuLibraryUnload) library_unload;
  decltype(&cuLibraryGetKernel) library_get_kernel;
  decltype(&cuKernelGetFunction) kernel_get_function;
  StreamEntryPoints legacy;      // cuGetProcAddress flags 0
  StreamEntryPoints per_thread;  // flags CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
};

// Loads the driver once; null if libcuda.so.1 or an entry point is missing (message on stderr).
const DriverEntryPoints* driver_entry_points();

// Loads and initializes the driver (cuInit) once; no context. Runtime calls that need no context
// (cudaGetDeviceCount, cudaGetDevice, cudaDeviceGetAttribute, ...) call only this.
cudaError_t ensure_driver();

// Initializes the runtime on first use and makes the primary context of the calling thread's device
// (cudaSetDevice, default 0) current on the calling thread, creating it if needed: the first call
// that needs a context pays its creation, as with the real runtime. Most runtime APIs call this first.
cudaError_t ensure_initialized();

// The calling thread's device (cudaSetDevice / cudaGetDevice).
int current_device();
// Makes `device` the calling thread's device and its primary context current (creating it).
cudaError_t set_device(int device);
// Device `device`'s primary context, retained (created) on first use; null and an error if invalid.
cudaError_t primary_context_of(int device, CUcontext* out);
// cudaDeviceReset: the next use of `device` creates its context again.
void forget_primary_context(int device);

// The driver set for a runtime entry point: legacy names, or _ptsz/_ptds ones.
inline const StreamEntryPoints& stream_api(bool per_thread) {
  return per_thread ? driver_entry_points()->per_thread : driver_entry_points()->legacy;
}

const DriverEntryPoints& drv();  // after ensure_initialized() succeeded

}  // namespace aw_rt
