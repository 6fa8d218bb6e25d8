// Device management: the simulated devices (ASYNCWATCH_SIM_DEVICES), the calling thread's device,
// peer access. Calls that only describe devices need no context and create none.
#include <cstring>

#include <cuda_profiler_api.h>

#include "driver_table.h"
#include "runtime_errors.h"

using namespace aw_rt;

namespace {
cudaError_t check_device(int device) {
  int count = 0;
  if (CUresult r = drv().device_get_count(&count)) return to_runtime_error(r);
  return device >= 0 && device < count ? cudaSuccess : cudaErrorInvalidDevice;
}
}  // namespace

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  AW_RT_DRIVER();
  if (!count) return record(cudaErrorInvalidValue);
  return record(drv().device_get_count(count));
}

// CUDA 12+: cudaSetDevice initializes the device's primary context.
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaSetDevice(int device) {
  AW_RT_DRIVER();
  if (cudaError_t e = check_device(device)) return record(e);
  return record(set_device(device));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaInitDevice(int device, unsigned int, unsigned int) {
  AW_RT_DRIVER();
  if (cudaError_t e = check_device(device)) return record(e);
  CUcontext ctx = nullptr;
  return record(primary_context_of(device, &ctx));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  AW_RT_DRIVER();
  if (!device) return record(cudaErrorInvalidValue);
  *device = current_device();
  return cudaSuccess;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int) {
  AW_RT_DRIVER();
  return cudaSuccess;  // scheduling flags: the simulator always spins (cudaDeviceScheduleAuto on few cores)
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  AW_RT_DRIVER();
  if (!value) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device)) return record(e);
  // cudaDeviceAttr and CUdevice_attribute share their numbering.
  return record(drv().device_get_attribute(value, static_cast<CUdevice_attribute>(attr), device));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  AW_RT_DRIVER();
  if (!prop) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device)) return record(e);
  std::memset(prop, 0, sizeof *prop);
  drv().device_get_name(prop->name, sizeof prop->name, device);
  drv().device_total_mem(&prop->totalGlobalMem, device);
  auto attr = [device](CUdevice_attribute a) {
    int v = 0;
    drv().device_get_attribute(&v, a, device);
    return v;
  };
  prop->sharedMemPerBlock = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  prop->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->memPitch = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH));
  prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  prop->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  prop->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  prop->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  prop->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  prop->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  prop->totalConstMem = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY));
  prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->textureAlignment = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->integrated = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  prop->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->streamPrioritiesSupported = attr(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  prop->sharedMemPerMultiprocessor =
      static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  prop->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->concurrentManagedAccess = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  prop->sharedMemPerBlockOptin = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  prop->maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  prop->cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  prop->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  return cudaSuccess;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  AW_RT_INIT();
  return record(drv().ctx_synchronize(nullptr));
}

// The profiler marks go to the driver's (where asyncwatch's capture range sees them), as the
// real runtime's do.
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaProfilerStart(void) {
  AW_RT_INIT();
  return record(drv().profiler_start());
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaProfilerStop(void) {
  AW_RT_INIT();
  return record(drv().profiler_stop());
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceReset(void) {
  AW_RT_INIT();
  const int device = current_device();
  cudaError_t e = record(drv().primary_ctx_reset(device));
  forget_primary_context(device);  // the next call creates the context again
  return e;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDriverGetVersion(int* version) {
  if (!version) return record(cudaErrorInvalidValue);
  const DriverEntryPoints* d = driver_entry_points();
  if (!d) {
    *version = 0;
    return cudaSuccess;
  }
  return record(d->driver_get_version(version));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* version) {
  if (!version) return record(cudaErrorInvalidValue);
  *version = 13000;
  return cudaSuccess;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  AW_RT_INIT();
  return record(drv().mem_get_info(free_bytes, total_bytes));
}

// ---- peer access ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  AW_RT_DRIVER();
  if (!can) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device)) return record(e);
  if (cudaError_t e = check_device(peer)) return record(e);
  return record(drv().device_can_access_peer(can, device, peer));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  AW_RT_INIT();
  CUcontext peer_ctx = nullptr;
  if (cudaError_t e = primary_context_of(peer, &peer_ctx)) return record(e);
  CUresult r = drv().ctx_enable_peer_access(peer_ctx, flags);
  if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return record(cudaErrorPeerAccessAlreadyEnabled);
  return record(r);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peer) {
  AW_RT_INIT();
  CUcontext peer_ctx = nullptr;
  if (cudaError_t e = primary_context_of(peer, &peer_ctx)) return record(e);
  CUresult r = drv().ctx_disable_peer_access(peer_ctx);
  if (r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) return record(cudaErrorPeerAccessNotEnabled);
  return record(r);
}
