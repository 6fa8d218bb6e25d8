// What pinning would save: the same copies from pageable and from pinned memory in
// one trace: host-to-device of `bytes`, and device-to-host of `bytes` after a short kernel.
//   pinned_vs_pageable [bytes=256M] [repeats=3] [kernel_cycles=100000]
//   (kernel_cycles: the kernel before each device-to-host copy; a test on a loaded machine makes it
//   long enough that the pinned copy is certainly issued while it runs)
//   @H2D_PAGEABLE / @H2D_PINNED   cudaMemcpyAsync host -> device
//   @D2H_PAGEABLE / @D2H_PINNED   cudaMemcpyAsync device -> host
//
// Today: pageable-async-copy staged at @H2D_PAGEABLE and waited-for-stream at @D2H_PAGEABLE; nothing
// at the pinned lines.
// Both findings carry an impact (docs/findings.md, "Impact"): what pinning would save end to end, with
// the fixed call's cost taken from this trace's pinned copies of the same direction.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const size_t bytes = size_t(aw::arg_num(argc, argv, 1, 256ll << 20));
  const int repeats = int(aw::arg_num(argc, argv, 2, 3));
  const long long kernel_cycles = aw::arg_num(argc, argv, 3, 100000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  char* pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  char* pageable = static_cast<char*>(malloc(bytes));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  for (int r = 0; r < repeats; ++r) {
    aw::fill(pageable, bytes, unsigned(50 + r));
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(dev, pageable, bytes, cudaMemcpyHostToDevice, s));  // @H2D_PAGEABLE
    aw::timing("H2D pageable returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    std::memset(pinned, 0, bytes);
    sleep_kernel<<<1, 1, 0, s>>>(kernel_cycles);
    t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s));  // @D2H_PINNED
    aw::timing("D2H pinned returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(pinned, bytes, unsigned(50 + r)), "round %d: pinned D2H wrong", r);
    aw::fill(pinned, bytes, unsigned(60 + r));
    t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s));  // @H2D_PINNED
    aw::timing("H2D pinned returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    std::memset(pageable, 0, bytes);
    sleep_kernel<<<1, 1, 0, s>>>(kernel_cycles);
    t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(pageable, dev, bytes, cudaMemcpyDeviceToHost, s));  // @D2H_PAGEABLE
    aw::timing("D2H pageable returned after", aw::now_ns() - t0);
    AW_EXPECT(aw::check(pageable, bytes, unsigned(60 + r)), "round %d: pageable D2H wrong", r);
  }
  std::printf("%d rounds of pageable and pinned copies of %zu bytes: ok\n", repeats, bytes);
  free(pageable);
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
