// A 4-byte device-to-host cudaMemcpyAsync into a stack variable right after a short
// kernel. The destination is pageable, so by the CUDA rules the call is synchronous (it returns after
// the copy, having waited for the kernel), however short the wait: 18-40 us on the H200, below the
// analyzer's --min-blocked-us (50 us).
//   small_d2h_stack [iterations=20] [cycles=4e4 (~20 us)]
//
// Expected:
//   pageable-async-copy, cause waited-for-stream, DtoH, pageable, at @SMALL_D2H, count = iterations,
//   severity note (below --min-blocked-us) and caught by --fail-on pageable-async-copy; waited_for
//   sleep_kernel. Nothing at @PINNED_CONTROL (the same copy into pinned memory).
#include "aw_common.h"

int main(int argc, char** argv) {
  const int iterations = int(aw::arg_num(argc, argv, 1, 20));
  const long long cycles = aw::arg_num(argc, argv, 2, 40000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* dev = nullptr;
  int* pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, sizeof(int)));
  AW_CHECK(cudaMallocHost(&pinned, sizeof(int)));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up: lazy loading is not this test
  AW_CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < iterations; ++i) {
    AW_CHECK(cudaMemsetAsync(dev, i, sizeof(int), s));
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    int result = -1;  // the stack variable
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @SMALL_D2H
    aw::timing("4-byte D2H into the stack returned after", aw::now_ns() - t0);
    const int want = i * 0x01010101;
    AW_EXPECT(result == want, "iteration %d: got %d before synchronizing, want %d", i, result, want);
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    AW_CHECK(cudaMemcpyAsync(pinned, dev, sizeof(int), cudaMemcpyDeviceToHost, s));  // @PINNED_CONTROL
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(*pinned == want, "iteration %d: pinned copy got %d", i, *pinned);
  }
  std::printf("%d small D2H copies into the stack: data complete on return\n", iterations);
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
