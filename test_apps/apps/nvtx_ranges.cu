// NVTX ranges name where a finding's calls were made. The nvtx3 headers of the toolkit
// (header-only) load the library NVTX_INJECTION64_PATH names on the first NVTX call: asyncwatch
// sets it to itself.
//   nvtx_ranges [iterations=20] [cycles=2e5 (~100 us)]
//
// Each iteration: a kernel, then a pageable D2H cudaMemcpyAsync that waits for it (@RANGED_COPY),
// inside the push range `optimizer_step` for all iterations but the first two, and all of them
// inside the start/end range `epoch`; then, after `epoch` ended, the same copy at @UNRANGED_COPY
// outside every range. Expected: pageable-async-copy at @RANGED_COPY with ranges
// {optimizer_step: iterations - 2, epoch: iterations}; at @UNRANGED_COPY with no ranges.
#include <nvtx3/nvToolsExt.h>

#include "aw_common.h"

int main(int argc, char** argv) {
  const int iterations = int(aw::arg_num(argc, argv, 1, 20));
  const long long cycles = aw::arg_num(argc, argv, 2, 200000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, sizeof(int)));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up: lazy loading is not this test
  AW_CHECK(cudaStreamSynchronize(s));
  nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
  for (int i = 0; i < iterations; ++i) {
    const bool ranged = i >= 2;
    int depth = ranged ? nvtxRangePushA("optimizer_step") : 0;
    AW_CHECK(cudaMemsetAsync(dev, i, sizeof(int), s));
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    int result = -1;
    AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @RANGED_COPY
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(result == i * 0x01010101, "iteration %d: got %d", i, result);
    if (ranged) {
      int popped = nvtxRangePop();
      // Traced, push returns the depth and pop the depth ended; untraced, NVTX returns a negative
      // "no tool" code from both.
      AW_EXPECT(popped == depth, "iteration %d: push returned %d, pop %d", i, depth, popped);
    }
  }
  nvtxRangeEnd(epoch);
  for (int i = 0; i < iterations; ++i) {
    AW_CHECK(cudaMemsetAsync(dev, i, sizeof(int), s));
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    int result = -1;
    AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @UNRANGED_COPY
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(result == i * 0x01010101, "iteration %d: got %d", i, result);
  }
  std::printf("%d ranged and %d unranged pageable D2H copies: data complete\n", iterations, iterations);
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
