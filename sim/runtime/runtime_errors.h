// The runtime's per-thread error state (cudaGetLastError / cudaPeekAtLastError).
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#define AW_RUNTIME_EXPORT extern "C" __attribute__((visibility("default")))

namespace aw_rt {

// Records `e` as this thread's last error when it is a failure; returns `e`.
cudaError_t record(cudaError_t e);
// The runtime error for a driver result, recorded as last error when it is a failure.
cudaError_t record(CUresult r);
cudaError_t to_runtime_error(CUresult r);

}  // namespace aw_rt

// Runs ensure_initialized() and returns its (recorded) error from the calling API if it failed.
#define AW_RT_INIT()                                                             \
  do {                                                                           \
    cudaError_t aw_init_status_ = ::aw_rt::ensure_initialized();                 \
    if (aw_init_status_ != cudaSuccess) return ::aw_rt::record(aw_init_status_); \
  } while (0)

// The same for calls that need the driver but no context (they never create one).
#define AW_RT_DRIVER()                                                           \
  do {                                                                           \
    cudaError_t aw_init_status_ = ::aw_rt::ensure_driver();                      \
    if (aw_init_status_ != cudaSuccess) return ::aw_rt::record(aw_init_status_); \
  } while (0)
