// Stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync) from memory pools, minimally: a pool
// keeps freed blocks for reuse and releases them to the system at synchronization points when it
// holds more than its release threshold (default 0), as the CUDA docs describe. Allocating never
// synchronizes; cuMemFreeAsync returns the block when the stream reaches it.
#pragma once
#include "memory_registry.h"

namespace aw_sim {

// cuMemFree of pool memory: the block leaves its pool (reserved and used shrink) and is freed.
void forget_pool_allocation(const Allocation& a);
// Called after cuStreamSynchronize / cuEventSynchronize / cuCtxSynchronize returned.
void trim_pools_after_synchronize();

}  // namespace aw_sim
