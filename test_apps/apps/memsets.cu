// Memsets: cudaMemsetAsync on device memory is asynchronous (@MEMSET_ASYNC_DEVICE, after a sleep
// kernel, must not block); cudaMemset on device memory returns before completion (@MEMSET_DEVICE);
// cudaMemset on pinned host memory is synchronous: it waits for the legacy default stream, which
// holds a sleep kernel (@MEMSET_PINNED).
//   memsets [cycles=1e8 (~50 ms)] [bytes=16M]
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 16ll << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  char* pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaDeviceSynchronize());

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemsetAsync(dev, 0x5a, bytes, s));  // @MEMSET_ASYNC_DEVICE
  aw::timing("cudaMemsetAsync on device memory after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s));
  AW_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < bytes; i += 4093) AW_EXPECT(pinned[i] == 0x5a, "memset device: byte %zu", i);
  AW_EXPECT(pinned[bytes - 1] == 0x5a, "memset device: last byte");
  std::printf("cudaMemsetAsync on device memory: ok\n");

  t0 = aw::now_ns();
  AW_CHECK(cudaMemset(dev, 0x33, bytes));  // @MEMSET_DEVICE
  aw::timing("cudaMemset on device memory, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; i += 4093) AW_EXPECT(pinned[i] == 0x33, "cudaMemset device: byte %zu", i);
  std::printf("cudaMemset on device memory: ok\n");

  sleep_kernel<<<1, 1>>>(cycles);  // legacy default stream
  t0 = aw::now_ns();
  AW_CHECK(cudaMemset(pinned, 0x77, bytes));  // @MEMSET_PINNED
  aw::timing("cudaMemset on pinned host memory after a kernel in the legacy stream, returned after", aw::now_ns() - t0);
  // Synchronous on pinned memory: the bytes are there when the call returns.
  for (size_t i = 0; i < bytes; i += 4093) AW_EXPECT(pinned[i] == 0x77, "cudaMemset pinned: byte %zu not set on return", i);
  AW_EXPECT(pinned[bytes - 1] == 0x77, "cudaMemset pinned: last byte not set on return");
  std::printf("cudaMemset on pinned host memory: complete on return\n");

  AW_CHECK(cudaDeviceSynchronize());
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
