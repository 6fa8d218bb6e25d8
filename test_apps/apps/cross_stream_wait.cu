// Cross-stream dependencies: a pageable device-to-host copy on stream B that waits,
// through cudaStreamWaitEvent, for a sleep kernel on stream A. Stream B itself runs no kernel.
//   cross_stream_wait [cycles=2e8 (~101 ms)] [bytes=1M]
//   @KERNEL_ON_A      the kernel (stream A)
//   @WAIT_EVENT       cudaStreamWaitEvent(B, event recorded after the kernel on A)
//   @COPY_ON_B        the pageable D2H on B: blocked about the kernel's time
//
// Today: pageable-async-copy waited-for-stream at @COPY_ON_B; its message says it "waited for all
// earlier work in the stream" and waited_for lists no kernel (stream B ran none).
// Expected: waited_for names sleep_kernel on stream A through the event wait at
// @WAIT_EVENT.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 1 << 20));
  cudaStream_t a, b;
  AW_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  AW_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t done;
  AW_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  std::vector<char> host(bytes);
  aw::fill(host.data(), bytes, 17);
  AW_CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
  AW_CHECK(cudaDeviceSynchronize());
  std::memset(host.data(), 0, bytes);
  sleep_kernel<<<1, 1, 0, a>>>(1000);  // warm-up
  AW_CHECK(cudaDeviceSynchronize());

  sleep_kernel<<<1, 1, 0, a>>>(cycles);  // @KERNEL_ON_A
  AW_CHECK(cudaEventRecord(done, a));
  AW_CHECK(cudaStreamWaitEvent(b, done, 0));  // @WAIT_EVENT
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host.data(), dev, bytes, cudaMemcpyDeviceToHost, b));  // @COPY_ON_B
  aw::timing("pageable D2H on B returned after", aw::now_ns() - t0);
  AW_EXPECT(cudaEventQuery(done) == cudaSuccess, "the kernel on A had not finished when the copy on B returned");
  AW_EXPECT(aw::check(host.data(), bytes, 17), "pageable D2H on B: wrong data");
  std::printf("copy on B waited for the kernel on A: ok\n");
  AW_CHECK(cudaEventDestroy(done));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(a));
  AW_CHECK(cudaStreamDestroy(b));
  return 0;
}
