// A copy's two sides as its wrapper records them: each side's memory kind (host buffers classified
// as cudaPointerGetAttributes would: classify/host_memory_classifier.h), the direction they make
// (trace::infer_direction, the one definition) and the bytes. One definition for the copy
// wrappers (driver_hooks_copy.cpp) and the graph wrappers' copy nodes (driver_hooks_graph.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "asyncwatch/trace_format.h"
#include "classify/host_memory_classifier.h"
#include "cuda_abi.h"

namespace asyncwatch::copy_sides {

struct Sides {
  trace::Direction direction;
  trace::MemoryKind src;
  trace::MemoryKind dst;
  uint64_t bytes;
};

inline trace::MemoryKind host_kind(const void* p) noexcept {
  return classify::classify_pointer(reinterpret_cast<uint64_t>(p));
}
inline trace::MemoryKind unified_kind(cuda::CUdeviceptr p) noexcept { return classify::classify_pointer(p); }

// One side of a 2D or 3D descriptor, by its CUmemorytype.
inline trace::MemoryKind side_kind(unsigned type, const void* host, cuda::CUdeviceptr dev) noexcept {
  switch (type) {
    case cuda::CU_MEMORYTYPE_HOST: return host_kind(host);
    case cuda::CU_MEMORYTYPE_DEVICE: return trace::MemoryKind::Device;
    case cuda::CU_MEMORYTYPE_ARRAY: return trace::MemoryKind::Array;
    case cuda::CU_MEMORYTYPE_UNIFIED: return unified_kind(dev);
    default: return trace::MemoryKind::Unknown;
  }
}

// A 2D, 3D or 3D-peer descriptor's sides; a 3D copy between contexts is Peer when both sides are
// device memory of different contexts.
template <class Desc>
Sides sides_of(const Desc* p) noexcept {
  using trace::Direction;
  if (!p) return Sides{Direction::Unknown, trace::MemoryKind::Unknown, trace::MemoryKind::Unknown, 0};
  trace::MemoryKind s = side_kind(p->srcMemoryType, p->srcHost, p->srcDevice);
  trace::MemoryKind d = side_kind(p->dstMemoryType, p->dstHost, p->dstDevice);
  Direction dir = trace::infer_direction(s, d);
  uint64_t bytes = static_cast<uint64_t>(p->WidthInBytes) * p->Height;
  if constexpr (!std::is_same_v<Desc, cuda::CUDA_MEMCPY2D>) bytes *= p->Depth ? p->Depth : 1;
  if constexpr (std::is_same_v<Desc, cuda::CUDA_MEMCPY3D_PEER>) {
    if (dir == Direction::DtoD && p->srcContext != p->dstContext) dir = Direction::Peer;
  }
  return Sides{dir, s, d, bytes};
}

}  // namespace asyncwatch::copy_sides
