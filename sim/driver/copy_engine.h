// The host-visible behaviour of copies and memsets (CUDA "API synchronization behavior"):
// which calls block the caller, for how long, and what they leave queued on the stream.
#pragma once
#include <cuda.h>

#include <cstddef>

#include "driver_state.h"

namespace aw_sim {

// A (possibly pitched, possibly 3D) copy of `depth` slices of `height` rows of `width` bytes.
struct CopyShape {
  char* dst = nullptr;
  size_t dst_pitch = 0;  // bytes between rows
  size_t dst_slice = 0;  // bytes between slices (depth > 1)
  const char* src = nullptr;
  size_t src_pitch = 0;
  size_t src_slice = 0;
  size_t width = 0;
  size_t height = 1;
  size_t depth = 1;
  size_t bytes() const { return width * height * depth; }
  bool one_dimensional() const { return height == 1 && depth == 1; }
};
inline CopyShape linear_copy(void* dst, const void* src, size_t n) {
  CopyShape s;
  s.dst = static_cast<char*>(dst);
  s.src = static_cast<const char*>(src);
  s.dst_pitch = s.src_pitch = s.width = n;
  return s;
}

// A cuMemcpy3D-style descriptor (host, device, unified or CUDA array operands) as a CopyShape.
// CUDA_ERROR_INVALID_VALUE for inconsistent descriptors or unknown arrays.
CUresult shape_from_memcpy3d(const CUDA_MEMCPY3D& p, CopyShape* out);
// The same for a 2D descriptor (CUDA_MEMCPY2D).
CUresult shape_from_memcpy2d(const CUDA_MEMCPY2D& p, CopyShape* out);
// A one-row CUDA_MEMCPY3D describing `s` with unified-addressing operands (graph node parameters of
// captured copies).
CUDA_MEMCPY3D memcpy3d_from_shape(const CopyShape& s);

// Batch: an element of cuMemcpy[3D]BatchAsync. As Async, except that a device->pageable element is
// queued (written when the stream reaches it) instead of waiting for the stream: on the H200 such a
// batch returned in 0.04-0.13 ms behind a 101 ms kernel, its pageable destination not yet written
// (docs/simulator.md, "Checked on a GPU").
enum class CopyCall { Async, Sync, Batch };

// How a pageable source is read (cuMemcpyBatchAsync's CUmemcpySrcAccessOrder): at the call
// (cudaMemcpyAsync's staging; DURING_API_CALL and ANY) or in stream order (the caller waits for the
// stream to reach the copy before staging).
enum class SourceOrder { AtCall, InStream };

// Performs a copy with the blocking behaviour of `call` on stream `h` (for Sync calls: the default
// stream of `mode`). The direction is inferred from the pointers, as with unified addressing. Into a
// capturing stream an Async copy becomes a memcpy node (nothing runs or blocks).
CUresult copy(const CopyShape& shape, CUstream h, DefaultStream mode, CopyCall call);

// The same rules on an already resolved, non-capturing stream (graph memcpy nodes, batch elements).
void copy_on_stream(Stream& stream, const CopyShape& shape, CopyCall call, SourceOrder order = SourceOrder::AtCall);

// Memset of `height` rows of `width` elements of `elem_size` bytes (1, 2 or 4), rows `pitch` bytes
// apart (pitch ignored for one row).
struct MemsetShape {
  CUdeviceptr dst = 0;
  size_t pitch = 0;
  unsigned value = 0;
  unsigned elem_size = 1;
  size_t width = 0;
  size_t height = 1;
};
CUresult memset(const MemsetShape& m, CUstream h, DefaultStream mode, CopyCall call);
// The queued memset operation (graph memset nodes).
void memset_on_stream(Stream& stream, const MemsetShape& m);

// Nanoseconds a queued device-side transfer of `bytes` takes.
uint64_t device_copy_ns(size_t bytes);

}  // namespace aw_sim
