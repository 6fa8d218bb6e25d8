// CUDA arrays, minimally: linear device memory (entered in the registry as device memory of the
// array's device) with the descriptor it was created with. Copies address it as a tightly packed
// 3D block of width * element-size bytes per row; there is no texture layout.
#pragma once
#include <cuda.h>

#include <cstddef>

namespace aw_sim {

struct SimArray {
  CUdeviceptr base = 0;
  size_t width = 0;   // elements
  size_t height = 0;  // 0 for 1D arrays (as the descriptor says)
  size_t depth = 0;   // 0 for 1D/2D arrays
  CUarray_format format = CU_AD_FORMAT_UNSIGNED_INT8;
  unsigned channels = 1;
  unsigned flags = 0;
  int device = 0;
  size_t elem_size() const;
  size_t row_bytes() const { return width * elem_size(); }
  size_t rows() const { return height ? height : 1; }
  size_t slice_bytes() const { return row_bytes() * rows(); }
  size_t bytes() const { return slice_bytes() * (depth ? depth : 1); }
};

// Bytes per channel of a format; 0 for formats the simulator does not know.
size_t format_bytes(CUarray_format f);

CUresult create_array(const CUDA_ARRAY3D_DESCRIPTOR& d, CUarray* out);
CUresult destroy_array(CUarray a);
// The array behind a handle; nullptr if it is not a live array.
const SimArray* find_array(CUarray a);

}  // namespace aw_sim
