// Batch copies, CUDA 12.8+: cudaMemcpyBatchAsync with pinned and device elements
// only, the same batch with one pageable device-to-host element, a batch reading a pageable source
// in stream order, each behind a sleep kernel on the stream; and cudaMemcpy3DBatchAsync of a pageable
// 2D tile. On the H200 a pageable *destination* does not make the batch wait: it
// returned in 0.05-0.12 ms behind the 101 ms kernel, the data not yet there (unlike a single
// cudaMemcpyAsync); a pageable *source* read in stream order (cudaMemcpySrcAccessOrderStream) does
// (101.7-102.0 ms in gpu_rules_probe). The data is checked after a synchronize.
//   batch_copies [cycles=2e8 (~101 ms)] [bytes=1M]
//   @BATCH_PINNED         batch of pinned and device elements: only queued
//   @BATCH_WITH_PAGEABLE  the same plus one device->pageable element: only queued
//   @BATCH_SOURCE_STREAM  one pageable->device element, source read in stream order: blocked about
//                         the kernel's time
//   @BATCH_3D_PAGEABLE    cudaMemcpy3DBatchAsync, device -> pageable tile (its return time is printed;
//                         the simulator queues it like the 1D element)
//
// Today: batch copies are not intercepted: no finding at these lines.
// Expected: pageable-async-copy waited-for-stream (HtoD, pageable, the element's
// bytes) at @BATCH_SOURCE_STREAM, classified per element; nothing that says "blocked" at
// @BATCH_PINNED, @BATCH_WITH_PAGEABLE or @BATCH_3D_PAGEABLE.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 1 << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *dev_a = nullptr, *dev_b = nullptr, *pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev_a, bytes));
  AW_CHECK(cudaMalloc(&dev_b, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  std::vector<char> pageable(bytes);
  aw::fill(pinned, bytes, 31);
  AW_CHECK(cudaMemcpy(dev_a, pinned, bytes, cudaMemcpyHostToDevice));
  std::memset(pinned, 0, bytes);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t attr_idx = 0;

  {
    void* dsts[] = {pinned, dev_b};
    const void* srcs[] = {dev_a, dev_a};
    size_t sizes[] = {bytes, bytes};
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_idx, 1, s));  // @BATCH_PINNED
    aw::timing("batch (pinned, device) returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(pinned, bytes, 31), "pinned element: wrong data");
  }
  {
    void* dsts[] = {pinned, pageable.data()};
    const void* srcs[] = {dev_b, dev_a};
    size_t sizes[] = {bytes, bytes};
    std::memset(pinned, 0, bytes);
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_idx, 1, s));  // @BATCH_WITH_PAGEABLE
    aw::timing("batch with a pageable D2H element returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(pageable.data(), bytes, 31), "pageable element: wrong data");
    AW_EXPECT(aw::check(pinned, bytes, 31), "pinned element: wrong data");
  }
  {
    // A pageable source read in stream order: the call waits until the stream reaches the element.
    void* dsts[] = {dev_b};
    const void* srcs[] = {pageable.data()};
    size_t sizes[] = {bytes};
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &attr_idx, 1, s));  // @BATCH_SOURCE_STREAM
    aw::timing("batch with a pageable source (stream order) returned after", aw::now_ns() - t0);
    std::memset(pinned, 0, bytes);
    AW_CHECK(cudaMemcpyAsync(pinned, dev_b, bytes, cudaMemcpyDeviceToHost, s));
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(pinned, bytes, 31), "pageable source element: wrong data");
  }
  {
    // A 64 x 16 tile out of a 1 KiB-pitched device buffer, into a packed pageable buffer.
    const size_t width = 64, height = 16, pitch = 1024;
    std::vector<char> tile(width * height, 0);
    cudaMemcpy3DBatchOp op{};
    op.src.type = cudaMemcpyOperandTypePointer;
    op.src.op.ptr.ptr = dev_a;
    op.src.op.ptr.rowLength = pitch;
    op.dst.type = cudaMemcpyOperandTypePointer;
    op.dst.op.ptr.ptr = tile.data();
    op.extent = make_cudaExtent(width, height, 1);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpy3DBatchAsync(1, &op, 0, s));  // @BATCH_3D_PAGEABLE
    aw::timing("3D batch into pageable memory returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    for (size_t row = 0; row < height; ++row)
      AW_EXPECT(std::memcmp(tile.data() + row * width, pageable.data() + row * pitch, width) == 0, "3D batch row %zu", row);
  }
  std::printf("batches: pinned, with a pageable element, pageable source in stream order, 3D pageable: ok\n");
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev_a));
  AW_CHECK(cudaFree(dev_b));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
