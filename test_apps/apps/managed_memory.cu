// Managed memory (cudaMallocManaged) as source and destination of cudaMemcpyAsync after a sleep
// kernel, and a pageable control.
//   managed_memory [cycles=1e8 (~50 ms)] [bytes=16M]
//   @MANAGED_TO_DEVICE   managed -> device     (host_memory "managed")
//   @DEVICE_TO_MANAGED   device -> managed
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 16ll << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* m = nullptr;
  char* dev = nullptr;
  AW_CHECK(cudaMallocManaged(&m, bytes));
  AW_CHECK(cudaMalloc(&dev, bytes));
  cudaPointerAttributes attr;
  AW_CHECK(cudaPointerGetAttributes(&attr, m + 100));
  AW_EXPECT(attr.type == cudaMemoryTypeManaged, "managed pointer reported as type %d", int(attr.type));
  aw::fill(m, bytes, 21);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaStreamSynchronize(s));

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(dev, m, bytes, cudaMemcpyDefault, s));  // @MANAGED_TO_DEVICE
  aw::timing("managed -> device after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));

  std::memset(m, 0, bytes);
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(m, dev, bytes, cudaMemcpyDefault, s));  // @DEVICE_TO_MANAGED
  aw::timing("device -> managed after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(m, bytes, 21), "managed round trip: wrong data");
  std::printf("managed round trip: ok\n");

  AW_CHECK(cudaFree(m));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
