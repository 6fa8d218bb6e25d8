// Kernel launch: what nvcc 13 emits for kernel<<<...>>> (__cudaPushCallConfiguration,
// __cudaPopCallConfiguration, __cudaGetKernel, __cudaLaunchKernel[_ptsz]), cudaLaunchKernel, the
// launch-configuration form cudaLaunchKernelExC (behind cuda_runtime.h's cudaLaunchKernelEx) and
// cudaLaunchCooperativeKernel. Each reaches its driver counterpart (cuLaunchKernel,
// cuLaunchKernelEx, cuLaunchCooperativeKernel; _ptsz for the per-thread default stream), as the real
// runtime's do.
#include <vector>

#include "driver_table.h"
#include "fatbin_registry.h"
#include "runtime_errors.h"
#include "stream_api_macro.h"

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

namespace {

cudaError_t launch_ex(const StreamEntryPoints& d, const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return cudaErrorInvalidValue;
  CUkernel kernel = nullptr;
  if (cudaError_t e = kernel_for_host_function(func, &kernel)) return e;
  // The runtime's attribute values mirror the driver's (cudaLaunchAttribute is CUlaunchAttribute's
  // layout, cuda_runtime_api.h), so the array is handed down as it is.
  static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "attribute layouts");
  CUlaunchConfig c{};
  c.gridDimX = config->gridDim.x, c.gridDimY = config->gridDim.y, c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x, c.blockDimY = config->blockDim.y, c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
  c.hStream = reinterpret_cast<CUstream>(config->stream);
  c.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  c.numAttrs = config->numAttrs;
  return to_runtime_error(d.launch_kernel_ex(&c, reinterpret_cast<CUfunction>(kernel), args, nullptr));
}

cudaError_t launch_cooperative(const StreamEntryPoints& d, const void* func, dim3 grid, dim3 block, void** args,
                               size_t shared_mem, cudaStream_t stream) {
  CUkernel kernel = nullptr;
  if (cudaError_t e = kernel_for_host_function(func, &kernel)) return e;
  return to_runtime_error(d.launch_cooperative_kernel(reinterpret_cast<CUfunction>(kernel), grid.x, grid.y, grid.z,
                                                      block.x, block.y, block.z, static_cast<unsigned>(shared_mem),
                                                      stream, args));
}

}  // namespace

AW_STREAM_API(cudaLaunchKernelExC, (const cudaLaunchConfig_t* config, const void* func, void** args),
              launch_ex(d, config, func, args))
AW_STREAM_API(cudaLaunchCooperativeKernel,
              (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem, cudaStream_t stream),
              launch_cooperative(d, func, gridDim, blockDim, args, sharedMem, stream))
