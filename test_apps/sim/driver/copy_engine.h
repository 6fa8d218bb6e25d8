// The host-visible behaviour of copies and memsets (CUDA "API synchronization behavior"):
// which calls block the caller, for how long, and what they leave queued on the stream.
#pragma once
#include <cuda.h>

#include <cstddef>

#include "driver_state.h"

namespace aw_sim {

// A (possibly pitched) copy of `height` rows of `width` bytes.
struct CopyShape {
  char* dst = nullptr;
  size_t dst_pitch = 0;
  const char* src = nullptr;
  size_t src_pitch = 0;
  size_t width = 0;
  size_t height = 1;
  size_t bytes() const { return width * height; }
};
inline CopyShape linear_copy(void* dst, const void* src, size_t n) {
  return CopyShape{static_cast<char*>(dst), n, static_cast<const char*>(src), n, n, 1};
}

enum class CopyCall { Async, Sync };

// Performs a copy with the blocking behaviour of `call` on stream `h` (for Sync calls: the default
// stream of `mode`). The direction is inferred from the pointers, as with unified addressing.
CUresult copy(const CopyShape& shape, CUstream h, DefaultStream mode, CopyCall call);

// Memset of `count` elements of `elem_size` bytes (1, 2 or 4).
CUresult memset(CUdeviceptr dst, unsigned value, size_t elem_size, size_t count, CUstream h, DefaultStream mode,
                CopyCall call);

// Records a copy into capturing stream `h` (runtime cudaMemcpyAsync during capture).
CUresult record_captured_copy(const CopyShape& shape, CUstream h, DefaultStream mode);

}  // namespace aw_sim
