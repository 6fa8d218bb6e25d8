// Initialization, the simulated devices (ASYNCWATCH_SIM_DEVICES, default 1), their primary
// contexts, peer access, error strings.
#include <cstdio>
#include <cstring>
#include <map>

#include <cudaProfiler.h>

#include "driver_state.h"
#include "exports.h"
#include "mem_pool.h"
#include "memory_registry.h"

using namespace aw_sim;

namespace {
const std::map<int, const char*>& error_names() {
  static const auto* names = new std::map<int, const char*>{
#include "cu_error_names.inc"
  };
  return *names;
}
CUresult check_device(CUdevice d) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return primary_context(d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
constexpr size_t kTotalMemory = 143771009024ull;  // what an H200 reports
}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  mark_initialized();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!primary_context(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "%s", "asyncwatch simulated GPU");
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {  // H200 values
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 3201000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 6144; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 3; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 1 + dev; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 62914560; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *value = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 512; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; break;
    default: {
      char what[96];
      std::snprintf(what, sizeof what, "cuDeviceGetAttribute(attribute %d)", static_cast<int>(attr));
      return unsupported(what);
    }
  }
  return CUDA_SUCCESS;
}

// Retaining an inactive primary context creates it (ASYNCWATCH_SIM_CONTEXT_INIT_US in this thread).
AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  SimContext* c = primary_context(dev);
  ensure_created(c);
  c->retain_count++;
  *ctx = handle_of(c);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  primary_context(dev)->retain_count--;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = check_device(dev)) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  SimContext* c = primary_context(dev);
  *flags = 0;
  std::lock_guard<std::mutex> lock(c->create_mutex);
  *active = c->active ? 1 : 0;
  return CUDA_SUCCESS;
}

// Resets the device as cudaDeviceReset does: waits for its work, frees its allocations; the next use
// creates the context again.
AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  SimContext* c = primary_context(dev);
  c->streams().synchronize_all();
  for (const Allocation& a : memory_registry().all()) {
    if (a.device != dev || a.kind == MemoryKind::RegisteredHost) continue;
    memory_registry().remove(a.base);
    free_backing(a);
  }
  mark_destroyed(c);
  for (int i = 0; i < device_count(); ++i) primary_context(i)->peer_mask &= ~(1u << dev);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams*, unsigned int, CUdevice dev) {
  if (CUresult r = cuDevicePrimaryCtxRetain(ctx, dev)) return r;
  return push_context(*ctx);  // cuCtxCreate pushes the new context onto the thread's stack
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext* ctx, unsigned int, CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, 0, dev);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  SimContext* c = context_from_handle(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  c->streams().synchronize_all();
  c->retain_count--;
  if (current_context() == ctx) pop_context();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current_context();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && !context_from_handle(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  set_current_context(ctx);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!context_from_handle(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return push_context(ctx);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext popped = pop_context();
  if (ctx) *ctx = popped;
  return CUDA_SUCCESS;
}

// The context argument of the CUDA 13 (_v2) variants: NULL means the calling thread's current
// context; otherwise it must be a primary context, current or not.
static CUresult context_argument(CUcontext ctx, SimContext** out) {
  if (!ctx) {
    if (CUresult r = check_context()) return r;
    *out = current();
    return CUDA_SUCCESS;
  }
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  *out = context_from_handle(ctx);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  SimContext* c = nullptr;
  if (CUresult r = context_argument(ctx, &c)) return r;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  *dev = c->ordinal;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* dev) { return cuCtxGetDevice_v2(dev, nullptr); }

// cuGetProcAddress("cuCtxSynchronize", >= 13000) returns this one, as the real CUDA 13 driver does.
AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  SimContext* c = nullptr;
  if (CUresult r = context_argument(ctx, &c)) return r;
  c->streams().synchronize_all();
  trim_pools_after_synchronize();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxSynchronize() { return cuCtxSynchronize_v2(nullptr); }

// ---- profiler marks: nothing to profile here; answered as the driver does (a current context) ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuProfilerStart() {
  SimContext* c = nullptr;
  return context_argument(nullptr, &c);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuProfilerStop() {
  SimContext* c = nullptr;
  return context_argument(nullptr, &c);
}

// ---- peer access (every pair of simulated devices can; NVLink H200s) ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  if (CUresult r = check_device(dev)) return r;
  if (CUresult r = check_device(peer)) return r;
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  *can = dev != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  if (CUresult r = check_context()) return r;
  SimContext* p = context_from_handle(peer);
  if (!p) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  SimContext* self = current();
  if (p == self) return CUDA_ERROR_INVALID_DEVICE;
  const unsigned bit = 1u << p->ordinal;
  if (self->peer_mask.fetch_or(bit) & bit) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  if (CUresult r = check_context()) return r;
  SimContext* p = context_from_handle(peer);
  if (!p) return CUDA_ERROR_INVALID_CONTEXT;
  const unsigned bit = 1u << p->ordinal;
  if (!(current()->peer_mask.fetch_and(~bit) & bit)) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (CUresult r = check_context()) return r;
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  size_t used = 0;
  const int dev = current()->ordinal;
  for (const Allocation& a : memory_registry().all())
    if ((a.kind == MemoryKind::Device || a.kind == MemoryKind::Managed) && a.device == dev) used += a.size;
  *total_bytes = kTotalMemory;
  *free_bytes = used < kTotalMemory ? kTotalMemory - used : 0;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  auto it = error_names().find(static_cast<int>(error));
  if (it == error_names().end()) {
    *str = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *str = it->second;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  // The simulator's description is the error's name; real drivers return a sentence.
  return cuGetErrorName(error, str);
}
