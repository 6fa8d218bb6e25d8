// Kernel launch: what nvcc 13 emits for kernel<<<...>>> (__cudaPushCallConfiguration,
// __cudaPopCallConfiguration, __cudaGetKernel, __cudaLaunchKernel[_ptsz]) and cudaLaunchKernel.
// Every launch reaches the driver's cuLaunchKernel (or cuLaunchKernel_ptsz).
#include <vector>

#include "driver_table.h"
#include "fatbin_registry.h"
#include "runtime_errors.h"

using namespace aw_rt;

namespace {

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  size_t shared_mem;
  cudaStream_t stream;
};
// <<<...>>> pushes, the stub pops: a per-thread stack, since the stub's own argument evaluation may
// launch kernels in between.
thread_local std::vector<CallConfiguration> t_call_configurations;

cudaError_t launch(CUkernel kernel, dim3 grid, dim3 block, void** args, size_t shared_mem, cudaStream_t stream,
                   bool per_thread) {
  AW_RT_INIT();
  if (!kernel) return record(cudaErrorInvalidDeviceFunction);
  return record(stream_api(per_thread)
                    .launch_kernel(reinterpret_cast<CUfunction>(kernel), grid.x, grid.y, grid.z, block.x, block.y,
                                   block.z, static_cast<unsigned>(shared_mem), stream, args, nullptr));
}

cudaError_t launch_host_function(const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                 cudaStream_t stream, bool per_thread) {
  CUkernel kernel = nullptr;
  if (cudaError_t e = kernel_for_host_function(func, &kernel)) return e;
  return launch(kernel, grid, block, args, shared_mem, stream, per_thread);
}

}  // namespace

AW_RUNTIME_EXPORT unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                                 struct CUstream_st* stream) {
  t_call_configurations.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                                   void* stream) {
  if (t_call_configurations.empty()) return record(cudaErrorMissingConfiguration);
  const CallConfiguration c = t_call_configurations.back();
  t_call_configurations.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared_mem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (!kernel) return record(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  cudaError_t e = kernel_for_host_function(hostFun, &k);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return e;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                           void** args, size_t sharedMem, cudaStream_t stream) {
  return launch(reinterpret_cast<CUkernel>(kernel), gridDim, blockDim, args, sharedMem, stream, false);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                                void** args, size_t sharedMem, cudaStream_t stream) {
  return launch(reinterpret_cast<CUkernel>(kernel), gridDim, blockDim, args, sharedMem, stream, true);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                         size_t sharedMem, cudaStream_t stream) {
  return launch_host_function(func, gridDim, blockDim, args, sharedMem, stream, false);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                                              void** args, size_t sharedMem, cudaStream_t stream) {
  return launch_host_function(func, gridDim, blockDim, args, sharedMem, stream, true);
}
