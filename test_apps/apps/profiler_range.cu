// Capture ranges: the same pageable device-to-host copy after a kernel before, inside and
// after a cudaProfilerStart/cudaProfilerStop range, which an NVTX range "profiled steps" also
// marks. With ASYNCWATCH_CAPTURE_RANGE=cudaProfilerApi (asyncwatch run --capture-range
// cudaProfilerApi), or nvtx:profiled steps, only the copies inside the range are recorded.
//   profiler_range [iterations=5] [cycles=2e5 (~100 us)] [range=1: 0 never opens the range]
//   @BEFORE_RANGE  outside: not in the trace
//   @IN_RANGE      inside: pageable-async-copy, waited-for-stream, count = iterations
//   @AFTER_RANGE   outside: not in the trace
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include "aw_common.h"

namespace {
void copies(int iterations, long long cycles, cudaStream_t s, int* dev, int where) {
  for (int i = 0; i < iterations; ++i) {
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    int result = -1;
    if (where == 0) AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @BEFORE_RANGE
    if (where == 1) AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @IN_RANGE
    if (where == 2) AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @AFTER_RANGE
    AW_EXPECT(result == 0x07070707, "copy %d (%d): got %d", i, where, result);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const int iterations = int(aw::arg_num(argc, argv, 1, 5));
  const long long cycles = aw::arg_num(argc, argv, 2, 200000);
  const bool open_range = aw::arg_num(argc, argv, 3, 1) != 0;
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, sizeof(int)));
  AW_CHECK(cudaMemset(dev, 7, sizeof(int)));
  AW_CHECK(cudaDeviceSynchronize());  // the memset is on the legacy stream, the copies on a non-blocking one
  copies(iterations, cycles, s, dev, 0);
  if (open_range) {
    AW_CHECK(cudaProfilerStart());
    nvtxRangePushA("profiled steps");
  }
  copies(iterations, cycles, s, dev, 1);
  if (open_range) {
    nvtxRangePop();
    AW_CHECK(cudaProfilerStop());
  }
  copies(iterations, cycles, s, dev, 2);
  std::printf("%d copies before, inside and after the profiler range (%s): ok\n", iterations,
              open_range ? "opened" : "never opened");
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
