#include "driver_table.h"

#include <dlfcn.h>

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
  resolve(d->mem_alloc, "cuMemAlloc", 0);
  resolve(d->mem_free, "cuMemFree", 0);
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
  resolve(d->graph_instantiate, "cuGraphInstantiateWithFlags", 0);
  resolve(d->graph_exec_destroy, "cuGraphExecDestroy", 0);
  resolve(d->graph_destroy, "cuGraphDestroy", 0);
  resolve(d->library_load_data, "cuLibraryLoadData", 0);
  resolve(d->library_unload, "cuLibraryUnload", 0);
  resolve(d->library_get_kernel, "cuLibraryGetKernel", 0);
  resolve(d->sim_capture_memcpy, "cuSimCaptureMemcpy", 0);
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
    resolve(s.graph_launch, "cuGraphLaunch", flags);
  }
  if (!ok) {
    delete d;
    return nullptr;
  }
  return d;
}

struct RuntimeInit {
  cudaError_t status = cudaErrorInitializationError;
  CUcontext primary = nullptr;
};

RuntimeInit* g_init = nullptr;
std::once_flag g_init_once;
thread_local bool t_context_current = false;

}  // namespace

const DriverEntryPoints* driver_entry_points() {
  static const DriverEntryPoints* d = load_driver();
  return d;
}

const DriverEntryPoints& drv() { return *driver_entry_points(); }

cudaError_t ensure_initialized() {
  std::call_once(g_init_once, [] {
    g_init = new RuntimeInit();
    const DriverEntryPoints* d = driver_entry_points();
    if (!d) {
      g_init->status = cudaErrorInsufficientDriver;
      return;
    }
    if (d->init(0) != CUDA_SUCCESS || d->primary_ctx_retain(&g_init->primary, 0) != CUDA_SUCCESS) {
      g_init->status = cudaErrorInitializationError;
      return;
    }
    g_init->status = cudaSuccess;
  });
  if (g_init->status != cudaSuccess) return g_init->status;
  if (!t_context_current) {
    // The runtime makes the primary context current on every thread that calls it.
    if (drv().ctx_set_current(g_init->primary) != CUDA_SUCCESS) return cudaErrorInitializationError;
    t_context_current = true;
  }
  return cudaSuccess;
}

}  // namespace aw_rt
