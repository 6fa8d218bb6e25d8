#include "driver_table.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "runtime_errors.h"

namespace aw_rt {
namespace {

constexpr int kCudaVersion = 13000;

DriverEntryPoints* load_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "asyncwatch-sim runtime: cannot load libcuda.so.1: %s\n", dlerror());
    return nullptr;
  }
  auto get_proc = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    std::fprintf(stderr, "asyncwatch-sim runtime: libcuda.so.1 has no cuGetProcAddress_v2\n");
    return nullptr;
  }
  bool ok = true;
  auto resolve = [&](auto& slot, const char* name, cuuint64_t flags) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc(name, &fn, kCudaVersion, flags, &status) != CUDA_SUCCESS || !fn) {
      std::fprintf(stderr, "asyncwatch-sim runtime: driver entry point %s not found\n", name);
      ok = false;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(fn);
  };
  auto* d = new DriverEntryPoints();
  // As the real runtime does, ask for cuGetProcAddress itself first.
  void* self = nullptr;
  get_proc("cuGetProcAddress", &self, kCudaVersion, 0, nullptr);
  resolve(d->init, "cuInit", 0);
  resolve(d->driver_get_version, "cuDriverGetVersion", 0);
  resolve(d->device_get, "cuDeviceGet", 0);
  resolve(d->device_get_count, "cuDeviceGetCount", 0);
  resolve(d->device_get_name, "cuDeviceGetName", 0);
  resolve(d->device_get_attribute, "cuDeviceGetAttribute", 0);
  resolve(d->device_total_mem, "cuDeviceTotalMem", 0);
  resolve(d->primary_ctx_retain, "cuDevicePrimaryCtxRetain", 0);
  resolve(d->primary_ctx_reset, "cuDevicePrimaryCtxReset", 0);
  resolve(d->ctx_set_current, "cuCtxSetCurrent", 0);
  resolve(d->ctx_synchronize, "cuCtxSynchronize", 0);
  resolve(d->mem_get_info, "cuMemGetInfo", 0);
  resolve(d->profiler_start, "cuProfilerStart", 0);
  resolve(d->profiler_stop, "cuProfilerStop", 0);
  resolve(d->mem_alloc, "cuMemAlloc", 0);
  resolve(d->mem_free, "cuMemFree", 0);
  resolve(d->mem_alloc_pitch, "cuMemAllocPitch", 0);
  resolve(d->mem_alloc_managed, "cuMemAllocManaged", 0);
  resolve(d->mem_host_alloc, "cuMemHostAlloc", 0);
  resolve(d->mem_free_host, "cuMemFreeHost", 0);
  resolve(d->mem_host_register, "cuMemHostRegister", 0);
  resolve(d->mem_host_unregister, "cuMemHostUnregister", 0);
  resolve(d->mem_host_get_device_pointer, "cuMemHostGetDevicePointer", 0);
  resolve(d->pointer_get_attributes, "cuPointerGetAttributes", 0);
  resolve(d->stream_create, "cuStreamCreate", 0);
  resolve(d->stream_create_with_priority, "cuStreamCreateWithPriority", 0);
  resolve(d->stream_destroy, "cuStreamDestroy", 0);
  resolve(d->event_create, "cuEventCreate", 0);
  resolve(d->event_destroy, "cuEventDestroy", 0);
  resolve(d->event_query, "cuEventQuery", 0);
  resolve(d->event_synchronize, "cuEventSynchronize", 0);
  resolve(d->event_elapsed_time, "cuEventElapsedTime", 0);
  resolve(d->primary_ctx_release, "cuDevicePrimaryCtxRelease", 0);
  resolve(d->device_can_access_peer, "cuDeviceCanAccessPeer", 0);
  resolve(d->ctx_enable_peer_access, "cuCtxEnablePeerAccess", 0);
  resolve(d->ctx_disable_peer_access, "cuCtxDisablePeerAccess", 0);
  // As the real runtime 13 does (cuda.h): "cuGraphInstantiate" means cuGraphInstantiateWithFlags.
  resolve(d->graph_instantiate, "cuGraphInstantiate", 0);
  resolve(d->graph_exec_destroy, "cuGraphExecDestroy", 0);
  resolve(d->graph_destroy, "cuGraphDestroy", 0);
  resolve(d->graph_create, "cuGraphCreate", 0);
  resolve(d->graph_clone, "cuGraphClone", 0);
  resolve(d->graph_node_find_in_clone, "cuGraphNodeFindInClone", 0);
  resolve(d->graph_add_kernel_node, "cuGraphAddKernelNode", 0);
  resolve(d->graph_add_memcpy_node, "cuGraphAddMemcpyNode", 0);
  resolve(d->graph_add_memset_node, "cuGraphAddMemsetNode", 0);
  resolve(d->graph_add_host_node, "cuGraphAddHostNode", 0);
  resolve(d->graph_add_empty_node, "cuGraphAddEmptyNode", 0);
  resolve(d->graph_add_event_record_node, "cuGraphAddEventRecordNode", 0);
  resolve(d->graph_add_event_wait_node, "cuGraphAddEventWaitNode", 0);
  resolve(d->graph_add_dependencies, "cuGraphAddDependencies", 0);
  resolve(d->graph_get_nodes, "cuGraphGetNodes", 0);
  resolve(d->graph_get_root_nodes, "cuGraphGetRootNodes", 0);
  resolve(d->graph_node_get_type, "cuGraphNodeGetType", 0);
  resolve(d->graph_destroy_node, "cuGraphDestroyNode", 0);
  resolve(d->graph_memcpy_node_get_params, "cuGraphMemcpyNodeGetParams", 0);
  resolve(d->graph_memcpy_node_set_params, "cuGraphMemcpyNodeSetParams", 0);
  resolve(d->graph_exec_update, "cuGraphExecUpdate", 0);
  resolve(d->graph_exec_kernel_node_set_params, "cuGraphExecKernelNodeSetParams", 0);
  resolve(d->graph_exec_memcpy_node_set_params, "cuGraphExecMemcpyNodeSetParams", 0);
  resolve(d->graph_exec_memset_node_set_params, "cuGraphExecMemsetNodeSetParams", 0);
  resolve(d->graph_exec_host_node_set_params, "cuGraphExecHostNodeSetParams", 0);
  resolve(d->array_3d_create, "cuArray3DCreate", 0);
  resolve(d->array_3d_get_descriptor, "cuArray3DGetDescriptor", 0);
  resolve(d->array_destroy, "cuArrayDestroy", 0);
  resolve(d->mem_advise, "cuMemAdvise", 0);
  resolve(d->device_get_default_mem_pool, "cuDeviceGetDefaultMemPool", 0);
  resolve(d->device_get_mem_pool, "cuDeviceGetMemPool", 0);
  resolve(d->device_set_mem_pool, "cuDeviceSetMemPool", 0);
  resolve(d->mem_pool_create, "cuMemPoolCreate", 0);
  resolve(d->mem_pool_destroy, "cuMemPoolDestroy", 0);
  resolve(d->mem_pool_trim_to, "cuMemPoolTrimTo", 0);
  resolve(d->mem_pool_set_attribute, "cuMemPoolSetAttribute", 0);
  resolve(d->mem_pool_get_attribute, "cuMemPoolGetAttribute", 0);
  resolve(d->library_load_data, "cuLibraryLoadData", 0);
  resolve(d->library_unload, "cuLibraryUnload", 0);
  resolve(d->library_get_kernel, "cuLibraryGetKernel", 0);
  resolve(d->kernel_get_function, "cuKernelGetFunction", 0);
  for (int pass = 0; pass < 2; ++pass) {
    StreamEntryPoints& s = pass == 0 ? d->legacy : d->per_thread;
    const cuuint64_t flags = pass == 0 ? 0 : CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    resolve(s.memcpy_htod_async, "cuMemcpyHtoDAsync", flags);
    resolve(s.memcpy_dtoh_async, "cuMemcpyDtoHAsync", flags);
    resolve(s.memcpy_dtod_async, "cuMemcpyDtoDAsync", flags);
    resolve(s.memcpy_async, "cuMemcpyAsync", flags);
    resolve(s.memcpy_2d_async, "cuMemcpy2DAsync", flags);
    resolve(s.memcpy_htod, "cuMemcpyHtoD", flags);
    resolve(s.memcpy_dtoh, "cuMemcpyDtoH", flags);
    resolve(s.memcpy_dtod, "cuMemcpyDtoD", flags);
    resolve(s.memcpy_default, "cuMemcpy", flags);
    resolve(s.memcpy_2d, "cuMemcpy2D", flags);
    resolve(s.memset_d8, "cuMemsetD8", flags);
    resolve(s.memset_d8_async, "cuMemsetD8Async", flags);
    resolve(s.stream_synchronize, "cuStreamSynchronize", flags);
    resolve(s.stream_query, "cuStreamQuery", flags);
    resolve(s.stream_wait_event, "cuStreamWaitEvent", flags);
    resolve(s.stream_add_callback, "cuStreamAddCallback", flags);
    resolve(s.launch_host_func, "cuLaunchHostFunc", flags);
    resolve(s.stream_get_flags, "cuStreamGetFlags", flags);
    resolve(s.stream_get_priority, "cuStreamGetPriority", flags);
    resolve(s.event_record, "cuEventRecord", flags);
    resolve(s.event_record_with_flags, "cuEventRecordWithFlags", flags);
    resolve(s.stream_begin_capture, "cuStreamBeginCapture", flags);
    resolve(s.stream_end_capture, "cuStreamEndCapture", flags);
    resolve(s.stream_is_capturing, "cuStreamIsCapturing", flags);
    resolve(s.launch_kernel, "cuLaunchKernel", flags);
    resolve(s.launch_kernel_ex, "cuLaunchKernelEx", flags);
    resolve(s.launch_cooperative_kernel, "cuLaunchCooperativeKernel", flags);
    resolve(s.graph_launch, "cuGraphLaunch", flags);
    resolve(s.graph_upload, "cuGraphUpload", flags);
    resolve(s.graph_instantiate_with_params, "cuGraphInstantiateWithParams", flags);
    resolve(s.stream_begin_capture_to_graph, "cuStreamBeginCaptureToGraph", flags);
    resolve(s.stream_get_capture_info, "cuStreamGetCaptureInfo", flags);
    resolve(s.stream_update_capture_dependencies, "cuStreamUpdateCaptureDependencies", flags);
    resolve(s.stream_get_device, "cuStreamGetDevice", flags);
    resolve(s.memcpy_3d, "cuMemcpy3D", flags);
    resolve(s.memcpy_3d_async, "cuMemcpy3DAsync", flags);
    resolve(s.memcpy_3d_peer, "cuMemcpy3DPeer", flags);
    resolve(s.memcpy_3d_peer_async, "cuMemcpy3DPeerAsync", flags);
    resolve(s.memcpy_peer, "cuMemcpyPeer", flags);
    resolve(s.memcpy_peer_async, "cuMemcpyPeerAsync", flags);
    resolve(s.memcpy_batch_async, "cuMemcpyBatchAsync", flags);
    resolve(s.memcpy_3d_batch_async, "cuMemcpy3DBatchAsync", flags);
    resolve(s.memset_d2d8, "cuMemsetD2D8", flags);
    resolve(s.memset_d2d8_async, "cuMemsetD2D8Async", flags);
    resolve(s.mem_prefetch_async, "cuMemPrefetchAsync", flags);
    resolve(s.stream_attach_mem_async, "cuStreamAttachMemAsync", flags);
    resolve(s.mem_alloc_async, "cuMemAllocAsync", flags);
    resolve(s.mem_free_async, "cuMemFreeAsync", flags);
    resolve(s.mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", flags);
  }
  if (!ok) {
    delete d;
    return nullptr;
  }
  return d;
}

cudaError_t g_driver_status = cudaErrorInitializationError;
std::once_flag g_driver_once;

// Primary contexts the runtime retained, per device (null: not yet; created on first use).
// Read lock-free on every runtime call (cudaEventQuery polling loops); written under the mutex.
std::mutex g_contexts_mutex;
std::atomic<CUcontext> g_contexts[16] = {};

thread_local int t_device = 0;
thread_local CUcontext t_current = nullptr;  // what this thread made current last

}  // namespace

const DriverEntryPoints* driver_entry_points() {
  static const DriverEntryPoints* d = load_driver();
  return d;
}

const DriverEntryPoints& drv() { return *driver_entry_points(); }

cudaError_t ensure_driver() {
  std::call_once(g_driver_once, [] {
    const DriverEntryPoints* d = driver_entry_points();
    if (!d)
      g_driver_status = cudaErrorInsufficientDriver;
    else
      g_driver_status = d->init(0) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInitializationError;
  });
  return g_driver_status;
}

cudaError_t primary_context_of(int device, CUcontext* out) {
  if (cudaError_t e = ensure_driver()) return e;
  int count = 0;
  drv().device_get_count(&count);
  if (device < 0 || device >= count || device >= 16) return cudaErrorInvalidDevice;
  if ((*out = g_contexts[device].load(std::memory_order_acquire))) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_contexts_mutex);
  if (!g_contexts[device].load()) {
    // Creates the context if the driver has none: the caller pays its creation.
    CUcontext ctx = nullptr;
    if (drv().primary_ctx_retain(&ctx, device) != CUDA_SUCCESS) return cudaErrorInitializationError;
    g_contexts[device].store(ctx, std::memory_order_release);
  }
  *out = g_contexts[device].load();
  return cudaSuccess;
}

void forget_primary_context(int device) {
  std::lock_guard<std::mutex> lock(g_contexts_mutex);
  if (device >= 0 && device < 16 && g_contexts[device].load()) {
    drv().primary_ctx_release(device);
    g_contexts[device].store(nullptr);
  }
}

int current_device() { return t_device; }

cudaError_t set_device(int device) {
  CUcontext ctx = nullptr;
  if (cudaError_t e = primary_context_of(device, &ctx)) return e;
  t_device = device;
  if (t_current != ctx) {
    if (drv().ctx_set_current(ctx) != CUDA_SUCCESS) return cudaErrorInitializationError;
    t_current = ctx;
  }
  return cudaSuccess;
}

cudaError_t ensure_initialized() {
  // Fast path: this thread already made its device's context current (and no reset happened).
  if (t_current && g_contexts[t_device].load(std::memory_order_acquire) == t_current) return cudaSuccess;
  return set_device(t_device);
}

}  // namespace aw_rt
