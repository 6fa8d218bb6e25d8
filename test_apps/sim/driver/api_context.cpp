// Initialization, the one simulated device, contexts, error strings.
#include <cstdio>
#include <cstring>
#include <map>

#include "driver_state.h"
#include "exports.h"
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
  return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
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
  *count = 1;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
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
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
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
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 62914560; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 0; break;
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

AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  primary_context()->retain_count++;
  *ctx = reinterpret_cast<CUcontext>(primary_context());
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  primary_context()->retain_count--;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = check_device(dev)) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  *active = primary_context()->retain_count > 0;
  return CUDA_SUCCESS;
}

// Resets the device as cudaDeviceReset does: waits for all work, then frees every allocation.
AW_DRIVER_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = check_device(dev)) return r;
  stream_table().synchronize_all();
  for (const Allocation& a : memory_registry().all()) {
    memory_registry().remove(a.base);
    free_backing(a);
  }
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams*, unsigned int, CUdevice dev) {
  if (CUresult r = cuDevicePrimaryCtxRetain(ctx, dev)) return r;
  set_current_context(*ctx);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext* ctx, unsigned int, CUdevice dev) {
  return cuCtxCreate_v4(ctx, nullptr, 0, dev);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx != reinterpret_cast<CUcontext>(primary_context())) return CUDA_ERROR_INVALID_CONTEXT;
  stream_table().synchronize_all();
  primary_context()->retain_count--;
  if (current_context() == ctx) set_current_context(nullptr);
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
  if (ctx && ctx != reinterpret_cast<CUcontext>(primary_context())) return CUDA_ERROR_INVALID_CONTEXT;
  set_current_context(ctx);
  return CUDA_SUCCESS;
}

// The simulator has one context, so the context stack is one slot deep per thread.
AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) { return cuCtxSetCurrent(ctx); }

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx) *ctx = current_context();
  set_current_context(nullptr);
  return CUDA_SUCCESS;
}

// The context argument of the CUDA 13 (_v2) variants: NULL means the calling thread's current
// context; otherwise it must be the (one) primary context, current or not.
static CUresult check_context_argument(CUcontext ctx) {
  if (!ctx) return check_context();
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return ctx == reinterpret_cast<CUcontext>(primary_context()) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  if (CUresult r = check_context_argument(ctx)) return r;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* dev) { return cuCtxGetDevice_v2(dev, nullptr); }

// cuGetProcAddress("cuCtxSynchronize", >= 13000) returns this one, as the real CUDA 13 driver does.
AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  if (CUresult r = check_context_argument(ctx)) return r;
  stream_table().synchronize_all();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxSynchronize() { return cuCtxSynchronize_v2(nullptr); }

AW_DRIVER_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (CUresult r = check_context()) return r;
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  size_t used = 0;
  for (const Allocation& a : memory_registry().all())
    if (a.kind == MemoryKind::Device || a.kind == MemoryKind::Managed) used += a.size;
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
