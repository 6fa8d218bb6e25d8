#include "copy_engine.h"

#include <sys/mman.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "arrays.h"
#include "graph.h"
#include "host_wait.h"
#include "memory_registry.h"
#include "sim_config.h"

namespace aw_sim {
namespace {

enum class CopyPath {
  HostToHost,        // fully synchronous
  PageableToDevice,  // staged in the caller, then queued
  DeviceToPageable,  // waits for the stream, copies, then returns
  Queued,            // pinned/registered/managed/device: only queued
  Peer,              // device memory of two different devices: queued (P2P, or staged by the driver)
};

void advise_huge_pages(const void* p, size_t bytes);

// The span of memory a shape touches on one side (for classification and advice).
size_t span(size_t pitch, size_t slice, const CopyShape& s) {
  return (s.depth - 1) * slice + (s.height - 1) * pitch + s.width;
}

CopyPath copy_path(const CopyShape& s) {
  const MemorySide src = classify(s.src);
  const MemorySide dst = classify(s.dst);
  if (src == MemorySide::Pageable) advise_huge_pages(s.src, span(s.src_pitch, s.src_slice, s));
  if (dst == MemorySide::Pageable) advise_huge_pages(s.dst, span(s.dst_pitch, s.dst_slice, s));
  // Managed memory is treated like pinned memory (docs/simulator.md: the real driver migrates pages).
  if (src == MemorySide::Managed || dst == MemorySide::Managed) return CopyPath::Queued;
  if (is_host_side(src) && is_host_side(dst)) return CopyPath::HostToHost;
  if (src == MemorySide::Pageable) return CopyPath::PageableToDevice;
  if (dst == MemorySide::Pageable) return CopyPath::DeviceToPageable;
  if (src == MemorySide::Device && dst == MemorySide::Device && owner_device(s.src) != owner_device(s.dst))
    return CopyPath::Peer;
  return CopyPath::Queued;
}

// Large pageable ranges get transparent-huge-page advice before the first copy touches them: this
// VM-class hardware takes seconds of page faults for the seed's 2 GiB, which would swamp the timing
// model (a real DMA pins the pages once). The advice changes no data and no semantics.
void advise_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  if (bytes < 2 * kHuge) return;
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void copy_rows(const CopyShape& s) {
  const bool packed = s.width == s.dst_pitch && s.width == s.src_pitch &&
                      (s.depth == 1 || (s.dst_slice == s.width * s.height && s.src_slice == s.width * s.height));
  if (s.one_dimensional() || packed) {
    std::memmove(s.dst, s.src, s.bytes());
    return;
  }
  for (size_t z = 0; z < s.depth; ++z)
    for (size_t row = 0; row < s.height; ++row)
      std::memmove(s.dst + z * s.dst_slice + row * s.dst_pitch, s.src + z * s.src_slice + row * s.src_pitch, s.width);
}

StreamOp copy_op(const CopyShape& s, uint64_t duration_ns, const char* what) {
  StreamOp op;
  op.what = what;
  op.body = [s] { copy_rows(s); };
  op.duration_ns = duration_ns;
  return op;
}

// The source rows of `s` packed into `buffer`, and the shape that copies them from there.
CopyShape from_packed(const CopyShape& s, const char* buffer) {
  CopyShape out = s;
  out.src = buffer;
  out.src_pitch = s.width;
  out.src_slice = s.width * s.height;
  return out;
}

// Pageable -> device: the caller copies the data into (simulated) staging memory and busy-waits for
// bytes / staging bandwidth; the last DMA is left on the stream.
void stage_pageable_to_device(Stream& stream, const CopyShape& s) {
  const uint64_t start = now_ns();
  const uint64_t staged_at = start + transfer_ns(s.bytes(), config().staging_bytes_per_s);
  StreamOp dma;
  dma.what = "pageable->device DMA";
  dma.duration_ns = device_copy_ns(s.bytes());
  if (stream.idle() && stream.table().implicit_dependencies(stream).empty()) {
    // Nothing queued could observe the destination early: copy straight into it (saves a buffer
    // the size of the copy; the seed copies 2 GiB).
    copy_rows(s);
  } else {
    auto staging = std::make_shared<std::vector<char>>(s.bytes());
    CopyShape to_staging = s;
    to_staging.dst = staging->data();
    to_staging.dst_pitch = s.width;
    to_staging.dst_slice = s.width * s.height;
    copy_rows(to_staging);
    CopyShape from_staging = from_packed(s, staging->data());
    dma.body = [staging, from_staging] { copy_rows(from_staging); };
  }
  busy_wait_until(staged_at);
  stream.enqueue(std::move(dma));
}

// Device -> pageable and host -> host: the caller waits until the stream reaches the copy, then
// copies itself and returns when done. A gate operation holds the stream meanwhile, so later work
// waits, and the copy costs CPU only in the calling thread (a DMA engine costs none; the seed measures
// process CPU time).
void copy_in_caller_at_stream_position(Stream& stream, const CopyShape& s, uint64_t duration_ns, const char* what) {
  struct Gate {
    std::mutex mutex;
    std::condition_variable released_cv;
    std::atomic<bool> reached{false};
    bool released = false;
  };
  auto gate = std::make_shared<Gate>();
  StreamOp op;
  op.what = what;
  op.body = [gate] {
    gate->reached = true;
    std::unique_lock<std::mutex> lock(gate->mutex);
    gate->released_cv.wait(lock, [&] { return gate->released; });
  };
  const uint64_t seq = stream.enqueue(std::move(op));
  spin_until([&] { return gate->reached.load(); });
  const uint64_t start = now_ns();
  copy_rows(s);
  busy_wait_until(start + duration_ns);
  {
    std::lock_guard<std::mutex> lock(gate->mutex);
    gate->released = true;
  }
  gate->released_cv.notify_one();
  stream.host_wait(seq);  // returns with the copy retired from the stream, as a completed copy is
}

// Waits (spinning) until `stream` has reached this point: everything queued before has completed.
void wait_for_stream_position(Stream& stream) {
  StreamOp marker;
  marker.what = "stream-ordered source access";
  stream.host_wait(stream.enqueue(std::move(marker)));
}

// Where one operand of a 3D copy starts, and its row and slice pitches. For an array operand,
// *array_end is the end of its memory (the copy must stay inside it); null otherwise.
CUresult address_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, size_t x, size_t y,
                    size_t z, size_t pitch, size_t height, char** out, size_t* out_pitch, size_t* out_slice,
                    const char** array_end) {
  *array_end = nullptr;
  switch (type) {
    case CU_MEMORYTYPE_HOST: *out = const_cast<char*>(static_cast<const char*>(host)); break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: *out = reinterpret_cast<char*>(device); break;
    case CU_MEMORYTYPE_ARRAY: {
      const SimArray* a = find_array(array);
      if (!a) return CUDA_ERROR_INVALID_VALUE;
      // x is in bytes already (srcXInBytes); rows and slices are the array's.
      *out_pitch = a->row_bytes();
      *out_slice = a->slice_bytes();
      *out = reinterpret_cast<char*>(a->base) + z * *out_slice + y * *out_pitch + x;
      *array_end = reinterpret_cast<const char*>(a->base) + a->bytes();
      return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  if (!*out) return CUDA_ERROR_INVALID_VALUE;
  *out_pitch = pitch;
  *out_slice = pitch * height;
  *out += z * *out_slice + y * pitch + x;
  return CUDA_SUCCESS;
}

}  // namespace

uint64_t device_copy_ns(size_t bytes) { return transfer_ns(bytes, config().device_copy_bytes_per_s); }

CUresult shape_from_memcpy3d(const CUDA_MEMCPY3D& p, CopyShape* out) {
  CopyShape s;
  s.width = p.WidthInBytes;
  s.height = p.Height ? p.Height : 1;
  s.depth = p.Depth ? p.Depth : 1;
  if (p.srcLOD || p.dstLOD) return unsupported("mipmapped CUDA arrays");
  char* src = nullptr;
  char* dst = nullptr;
  // One row: the pitch is the width when none is given (cudaMemcpy-style descriptors).
  const size_t src_pitch = p.srcPitch ? p.srcPitch : p.WidthInBytes;
  const size_t dst_pitch = p.dstPitch ? p.dstPitch : p.WidthInBytes;
  const size_t src_height = p.srcHeight ? p.srcHeight : s.height;
  const size_t dst_height = p.dstHeight ? p.dstHeight : s.height;
  const char* src_end = nullptr;
  const char* dst_end = nullptr;
  if (CUresult r = address_of(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.srcXInBytes, p.srcY, p.srcZ,
                              src_pitch, src_height, &src, &s.src_pitch, &s.src_slice, &src_end))
    return r;
  if (CUresult r = address_of(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstXInBytes, p.dstY, p.dstZ,
                              dst_pitch, dst_height, &dst, &s.dst_pitch, &s.dst_slice, &dst_end))
    return r;
  // An array operand: the copy's last byte must be inside the array (rows never wrap).
  if (src_end && (p.srcXInBytes + s.width > s.src_pitch || src + span(s.src_pitch, s.src_slice, s) > src_end))
    return CUDA_ERROR_INVALID_VALUE;
  if (dst_end && (p.dstXInBytes + s.width > s.dst_pitch || dst + span(s.dst_pitch, s.dst_slice, s) > dst_end))
    return CUDA_ERROR_INVALID_VALUE;
  s.src = src;
  s.dst = dst;
  if (s.height > 1 && (s.src_pitch < s.width || s.dst_pitch < s.width)) return CUDA_ERROR_INVALID_VALUE;
  if (s.depth > 1 && (s.src_slice < s.src_pitch * s.height || s.dst_slice < s.dst_pitch * s.height))
    return CUDA_ERROR_INVALID_VALUE;
  *out = s;
  return CUDA_SUCCESS;
}

CUresult shape_from_memcpy2d(const CUDA_MEMCPY2D& p, CopyShape* out) {
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = p.srcXInBytes;
  d.srcY = p.srcY;
  d.srcMemoryType = p.srcMemoryType;
  d.srcHost = p.srcHost;
  d.srcDevice = p.srcDevice;
  d.srcArray = p.srcArray;
  d.srcPitch = p.Height > 1 ? p.srcPitch : 0;
  d.dstXInBytes = p.dstXInBytes;
  d.dstY = p.dstY;
  d.dstMemoryType = p.dstMemoryType;
  d.dstHost = p.dstHost;
  d.dstDevice = p.dstDevice;
  d.dstArray = p.dstArray;
  d.dstPitch = p.Height > 1 ? p.dstPitch : 0;
  d.WidthInBytes = p.WidthInBytes;
  d.Height = p.Height;
  d.Depth = 1;
  return shape_from_memcpy3d(d, out);
}

CUDA_MEMCPY3D memcpy3d_from_shape(const CopyShape& s) {
  CUDA_MEMCPY3D d{};
  d.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  d.srcDevice = reinterpret_cast<CUdeviceptr>(s.src);
  d.srcPitch = s.src_pitch;
  d.srcHeight = s.src_pitch ? s.src_slice / s.src_pitch : 0;
  d.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  d.dstDevice = reinterpret_cast<CUdeviceptr>(s.dst);
  d.dstPitch = s.dst_pitch;
  d.dstHeight = s.dst_pitch ? s.dst_slice / s.dst_pitch : 0;
  d.WidthInBytes = s.width;
  d.Height = s.height;
  d.Depth = s.depth;
  return d;
}

void copy_on_stream(Stream& stream, const CopyShape& shape, CopyCall call, SourceOrder order) {
  const size_t n = shape.bytes();
  switch (copy_path(shape)) {
    case CopyPath::HostToHost: copy_in_caller_at_stream_position(stream, shape, 0, "host->host memcpy"); break;
    case CopyPath::PageableToDevice:
      // The synchronous cuMemcpy first synchronizes the stream; the async one does not, unless the
      // source is to be read in stream order (cuMemcpyBatchAsync, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM).
      if (call == CopyCall::Sync)
        stream.host_synchronize();
      else if (order == SourceOrder::InStream)
        wait_for_stream_position(stream);
      stage_pageable_to_device(stream, shape);
      break;
    case CopyPath::DeviceToPageable:
      if (call == CopyCall::Batch) {
        // Only queued (the H200's batch copies); the transfer time on the stream is not measured,
        // the single copy's rate stands in for it.
        stream.enqueue(copy_op(shape, transfer_ns(n, config().pageable_d2h_bytes_per_s),
                               "device->pageable memcpy (batch element)"));
        break;
      }
      copy_in_caller_at_stream_position(stream, shape, transfer_ns(n, config().pageable_d2h_bytes_per_s),
                                        "device->pageable memcpy");
      break;
    case CopyPath::Peer: {
      // Device to device across devices: queued either way; without peer access the driver stages
      // the copy through host memory, more slowly, still asynchronously (cudaMemcpyPeerAsync).
      const int a = owner_device(shape.src);
      const int b = owner_device(shape.dst);
      const bool p2p = peer_access_enabled(a, b) || peer_access_enabled(b, a);
      stream.enqueue(copy_op(shape, p2p ? device_copy_ns(n) : transfer_ns(n, config().peer_staged_bytes_per_s),
                             p2p ? "peer memcpy" : "peer memcpy (staged)"));
      break;
    }
    case CopyPath::Queued: {
      const uint64_t seq = stream.enqueue(copy_op(shape, device_copy_ns(n), "memcpy"));
      // The synchronous cuMemcpy returns after completion unless both sides are device memory.
      const bool device_to_device =
          classify(shape.src) == MemorySide::Device && classify(shape.dst) == MemorySide::Device;
      if (call == CopyCall::Sync && !device_to_device) stream.host_wait(seq);
      break;
    }
  }
}

CUresult copy(const CopyShape& shape, CUstream h, DefaultStream mode, CopyCall call) {
  std::shared_ptr<Stream> stream;
  if (CUresult r = resolve_stream(h, mode, stream)) return r;
  if (shape.bytes() == 0) return CUDA_SUCCESS;
  if (!shape.dst || !shape.src) return CUDA_ERROR_INVALID_VALUE;
  if (stream->capture()) {
    // Captured work is recorded, never executed and never blocks.
    if (call == CopyCall::Sync) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    NodeParams p;
    p.kind = NodeKind::Memcpy;
    p.device = current()->ordinal;
    p.copy = shape;
    p.copy_desc = memcpy3d_from_shape(shape);
    CUresult status = CUDA_SUCCESS;
    if (capture_node(*stream, p, &status)) return status;
  }
  copy_on_stream(*stream, shape, call);
  return CUDA_SUCCESS;
}

void memset_on_stream(Stream& stream, const MemsetShape& m) {
  StreamOp op;
  op.what = "memset";
  op.duration_ns = device_copy_ns(m.width * m.height * m.elem_size);
  op.body = [m] {
    for (size_t row = 0; row < m.height; ++row) {
      char* p = reinterpret_cast<char*>(m.dst) + row * m.pitch;
      if (m.elem_size == 1) {
        std::memset(p, static_cast<int>(m.value & 0xff), m.width);
        continue;
      }
      for (size_t i = 0; i < m.width; ++i) std::memcpy(p + i * m.elem_size, &m.value, m.elem_size);
    }
  };
  stream.enqueue(std::move(op));
}

CUresult memset(const MemsetShape& m, CUstream h, DefaultStream mode, CopyCall call) {
  std::shared_ptr<Stream> stream;
  if (CUresult r = resolve_stream(h, mode, stream)) return r;
  const MemorySide side = classify(reinterpret_cast<const void*>(m.dst));
  if (side == MemorySide::Pageable) return CUDA_ERROR_INVALID_VALUE;  // not memory the device can reach
  if (m.height > 1 && m.pitch < m.width * m.elem_size) return CUDA_ERROR_INVALID_VALUE;
  if (m.width == 0 || m.height == 0) return CUDA_SUCCESS;
  MemsetShape shape = m;
  if (shape.height == 1) shape.pitch = shape.width * shape.elem_size;
  if (stream->capture()) {
    if (call == CopyCall::Sync) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    NodeParams p;
    p.kind = NodeKind::Memset;
    p.device = current()->ordinal;
    p.memset = shape;
    CUresult status = CUDA_SUCCESS;
    if (capture_node(*stream, p, &status)) return status;
  }
  memset_on_stream(*stream, shape);
  // Synchronous memsets return before completion, except on pinned host or managed memory.
  if (call == CopyCall::Sync && side != MemorySide::Device) stream->host_synchronize();
  return CUDA_SUCCESS;
}

}  // namespace aw_sim
