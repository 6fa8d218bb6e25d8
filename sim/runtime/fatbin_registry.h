// What nvcc's generated code registers at start-up: fat binaries, kernels (host stub -> device
// name) and __device__ variables. Kernels are turned into driver handles lazily, through
// cuLibraryLoadData + cuLibraryGetKernel, so the driver knows every kernel's name.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace aw_rt {

// The CUkernel (usable as CUfunction) for a registered host stub; null and an error if unknown.
cudaError_t kernel_for_host_function(const void* host_fun, CUkernel* out);

// The simulated device address backing a registered __device__ variable (allocated on first use).
cudaError_t device_address_of_symbol(const void* host_var, void** dev, size_t* size);

}  // namespace aw_rt
