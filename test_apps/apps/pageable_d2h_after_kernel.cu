// Pageable device -> host cudaMemcpyAsync after a sleep kernel in the same stream: the call returns
// only when the copy is done, so the host is blocked for about the kernel's time.
//   pageable_d2h_after_kernel [cycles=2e8 (~101 ms)] [bytes=64M]
// A pinned control (same kernel, same copy into cudaMallocHost memory) follows at @D2H_PINNED_CONTROL.
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 64ll << 20));
  cudaStream_t stream;
  AW_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  char* pageable = static_cast<char*>(malloc(bytes));
  char* pinned = nullptr;
  char* dev = nullptr;
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  AW_CHECK(cudaMalloc(&dev, bytes));
  aw::fill(pinned, bytes, 3);
  AW_CHECK(cudaMemcpy(dev, pinned, bytes, cudaMemcpyHostToDevice));
  std::memset(pinned, 0, bytes);

  // Warm-up launch: the first launch of a kernel may pay for lazy module loading (blocking_launches
  // tests that); keep it out of this test.
  sleep_kernel<<<1, 1, 0, stream>>>(1000);
  AW_CHECK(cudaStreamSynchronize(stream));

  sleep_kernel<<<1, 1, 0, stream>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(pageable, dev, bytes, cudaMemcpyDeviceToHost, stream));  // @D2H_PAGEABLE
  long long t1 = aw::now_ns();
  std::fprintf(stderr, "# D2H pageable after a %.1f ms kernel: returned after %.3f ms\n", aw::cycles_to_ms(cycles), double(t1 - t0) / 1e6);
  // The documented rule: the copy is complete when the call returns. Check it before synchronizing.
  AW_EXPECT(aw::check(pageable, bytes, 3), "pageable D2H: data not there when cudaMemcpyAsync returned");
  std::printf("pageable D2H: data complete on return\n");

  sleep_kernel<<<1, 1, 0, stream>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, stream));  // @D2H_PINNED_CONTROL
  t1 = aw::now_ns();
  std::fprintf(stderr, "# D2H pinned after a %.1f ms kernel: returned after %.3f ms\n", aw::cycles_to_ms(cycles), double(t1 - t0) / 1e6);
  AW_CHECK(cudaStreamSynchronize(stream));
  AW_EXPECT(aw::check(pinned, bytes, 3), "pinned D2H: wrong data");
  std::printf("pinned D2H: ok after synchronize\n");

  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaFreeHost(pinned));
  free(pageable);
  AW_CHECK(cudaStreamDestroy(stream));
  return 0;
}
