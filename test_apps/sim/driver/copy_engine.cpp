#include "copy_engine.h"

#include <sys/mman.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <memory>
#include <vector>

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
};

void advise_huge_pages(const void* p, size_t bytes);

CopyPath copy_path(const CopyShape& s) {
  const MemorySide src = classify(s.src);
  const MemorySide dst = classify(s.dst);
  if (src == MemorySide::Pageable) advise_huge_pages(s.src, s.bytes());
  if (dst == MemorySide::Pageable) advise_huge_pages(s.dst, s.bytes());
  // Managed memory is treated like pinned memory (docs/simulator.md: the real driver migrates pages).
  if (src == MemorySide::Managed || dst == MemorySide::Managed) return CopyPath::Queued;
  if (is_host_side(src) && is_host_side(dst)) return CopyPath::HostToHost;
  if (src == MemorySide::Pageable) return CopyPath::PageableToDevice;
  if (dst == MemorySide::Pageable) return CopyPath::DeviceToPageable;
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
  if (s.height == 1 || (s.width == s.dst_pitch && s.width == s.src_pitch)) {
    std::memmove(s.dst, s.src, s.bytes());
    return;
  }
  for (size_t row = 0; row < s.height; ++row) std::memmove(s.dst + row * s.dst_pitch, s.src + row * s.src_pitch, s.width);
}

StreamOp copy_op(const CopyShape& s, uint64_t duration_ns, const char* what) {
  StreamOp op;
  op.what = what;
  op.body = [s] { copy_rows(s); };
  op.duration_ns = duration_ns;
  return op;
}

uint64_t device_copy_ns(size_t bytes) { return transfer_ns(bytes, config().device_copy_bytes_per_s); }

// Pageable -> device: the caller copies the data into (simulated) staging memory and busy-waits for
// bytes / staging bandwidth; the last DMA is left on the stream.
void stage_pageable_to_device(Stream& stream, const CopyShape& s) {
  const uint64_t start = now_ns();
  const uint64_t staged_at = start + transfer_ns(s.bytes(), config().staging_bytes_per_s);
  StreamOp dma;
  dma.what = "pageable->device DMA";
  dma.duration_ns = device_copy_ns(s.bytes());
  if (stream.idle() && stream_table().implicit_dependencies(stream).empty()) {
    // Nothing queued could observe the destination early: copy straight into it (saves a buffer
    // the size of the copy; the seed copies 2 GiB).
    copy_rows(s);
  } else {
    auto staging = std::make_shared<std::vector<char>>(s.bytes());
    CopyShape to_staging = s;
    to_staging.dst = staging->data();
    to_staging.dst_pitch = s.width;
    copy_rows(to_staging);
    CopyShape from_staging = s;
    from_staging.src = staging->data();
    from_staging.src_pitch = s.width;
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

}  // namespace

CUresult record_captured_copy(const CopyShape& shape, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> stream;
  if (CUresult r = resolve_stream(h, mode, stream)) return r;
  if (!stream->capture()) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  submit(*stream, copy_op(shape, device_copy_ns(shape.bytes()), "captured memcpy"));
  return CUDA_SUCCESS;
}

CUresult copy(const CopyShape& shape, CUstream h, DefaultStream mode, CopyCall call) {
  std::shared_ptr<Stream> stream;
  if (CUresult r = resolve_stream(h, mode, stream)) return r;
  if (shape.bytes() == 0) return CUDA_SUCCESS;
  if (!shape.dst || !shape.src) return CUDA_ERROR_INVALID_VALUE;
  if (stream->capture()) {
    // Captured work is recorded, never executed and never blocks.
    if (call == CopyCall::Sync) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    submit(*stream, copy_op(shape, device_copy_ns(shape.bytes()), "captured memcpy"));
    return CUDA_SUCCESS;
  }
  const size_t n = shape.bytes();
  switch (copy_path(shape)) {
    case CopyPath::HostToHost:
      copy_in_caller_at_stream_position(*stream, shape, 0, "host->host memcpy");
      break;
    case CopyPath::PageableToDevice:
      // The synchronous cuMemcpy first synchronizes the stream; the async one does not.
      if (call == CopyCall::Sync) stream->host_synchronize();
      stage_pageable_to_device(*stream, shape);
      break;
    case CopyPath::DeviceToPageable:
      copy_in_caller_at_stream_position(*stream, shape, transfer_ns(n, config().pageable_d2h_bytes_per_s),
                                        "device->pageable memcpy");
      break;
    case CopyPath::Queued: {
      const uint64_t seq = stream->enqueue(copy_op(shape, device_copy_ns(n), "memcpy"));
      // The synchronous cuMemcpy returns after completion unless both sides are device memory.
      const bool device_to_device =
          classify(shape.src) == MemorySide::Device && classify(shape.dst) == MemorySide::Device;
      if (call == CopyCall::Sync && !device_to_device) stream->host_wait(seq);
      break;
    }
  }
  return CUDA_SUCCESS;
}

CUresult memset(CUdeviceptr dst, unsigned value, size_t elem_size, size_t count, CUstream h, DefaultStream mode,
                CopyCall call) {
  std::shared_ptr<Stream> stream;
  if (CUresult r = resolve_stream(h, mode, stream)) return r;
  const MemorySide side = classify(reinterpret_cast<const void*>(dst));
  if (side == MemorySide::Pageable) return CUDA_ERROR_INVALID_VALUE;  // not memory the device can reach
  if (count == 0) return CUDA_SUCCESS;
  StreamOp op;
  op.what = "memset";
  op.duration_ns = device_copy_ns(count * elem_size);
  op.body = [dst, value, elem_size, count] {
    char* p = reinterpret_cast<char*>(dst);
    if (elem_size == 1) {
      std::memset(p, static_cast<int>(value & 0xff), count);
      return;
    }
    for (size_t i = 0; i < count; ++i) std::memcpy(p + i * elem_size, &value, elem_size);
  };
  if (call == CopyCall::Sync && stream->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  bool captured = false;
  const uint64_t seq = submit(*stream, std::move(op), &captured);
  if (captured) return CUDA_SUCCESS;
  // Synchronous memsets return before completion, except on pinned host or managed memory.
  if (call == CopyCall::Sync && side != MemorySide::Device) stream->host_wait(seq);
  return CUDA_SUCCESS;
}

}  // namespace aw_sim
