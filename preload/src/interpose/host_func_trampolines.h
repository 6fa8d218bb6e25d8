// Host functions (cuLaunchHostFunc, cuStreamAddCallback and their runtime forms): the trampoline
// handed to the driver in place of the user's function, which times it (HostFuncRunRecord).
#pragma once

#include <cstdint>

#include "cuda_abi.h"

namespace asyncwatch::calls {

struct HostFuncContext {
  cuda::CUhostFn user_fn;
  cuda::CUstreamCallback user_callback;
  void* user_data;
  uint64_t callback_id;
};
uint64_t next_callback_id() noexcept;
void host_fn_trampoline(void* ctx) noexcept;
void stream_callback_trampoline(cuda::CUstream s, cuda::CUresult status, void* ctx) noexcept;

}  // namespace asyncwatch::calls
