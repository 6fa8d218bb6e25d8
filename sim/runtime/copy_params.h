// Runtime copy descriptors in the driver's terms: cudaMemcpy3DParms and friends as CUDA_MEMCPY3D,
// so that every runtime copy (cudaMemcpy3D, graph memcpy nodes, captured copies) reaches the driver
// through the same descriptor.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

namespace aw_rt {

// The memory type the runtime passes for one side of a copy of `kind`.
CUmemorytype memory_type(cudaMemcpyKind kind, bool source);
// Bytes per element of a CUDA array (0 if the handle is not one).
size_t array_element_size(cudaArray_const_t a);
// A 3D copy; extent.width is in elements when an array takes part, else in bytes.
cudaError_t to_driver(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out);
// A 1D copy of `n` bytes.
CUDA_MEMCPY3D linear_3d(void* dst, const void* src, size_t n, cudaMemcpyKind kind);
// A pitched 2D copy between pointers.
CUDA_MEMCPY3D pitched_3d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind);
bool valid_kind(cudaMemcpyKind kind);

}  // namespace aw_rt
