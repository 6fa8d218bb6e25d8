// Fix pair: a pageable download that waits for a long kernel, host work, then a synchronize
// (pageable-async-copy, waited-for-stream) vs the same download into pinned memory, where the host
// work overlaps the kernel.
//   fix_pinned_download [--fixed] [bytes=64M] [repeats=4] [kernel_cycles=1e8] [host_us=5000]
#include "fix_pair.h"

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const size_t bytes = size_t(aw::arg_num(argc, argv, a, 64ll << 20));
  const int repeats = int(aw::arg_num(argc, argv, a + 1, 4));
  const long long cycles = aw::arg_num(argc, argv, a + 2, 100000000);
  const long long host_us = aw::arg_num(argc, argv, a + 3, 5000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *dev = nullptr, *pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  char* pageable = static_cast<char*>(malloc(bytes));
  aw::fill(pageable, bytes, 11);
  AW_CHECK(cudaMemcpy(dev, pageable, bytes, cudaMemcpyHostToDevice));
  std::memset(pageable, 0, bytes);
  std::memset(pinned, 0, bytes);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  char* dst = fixed ? pinned : pageable;
  const long long t0 = aw::now_ns();
  for (int r = 0; r < repeats; ++r) {
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    AW_CHECK(cudaMemcpyAsync(dst, dev, bytes, cudaMemcpyDeviceToHost, s));  // @DOWNLOAD
    aw::host_work(host_us);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(dst, bytes, 11), "round %d: downloaded data wrong", r);
  }
  aw::timing("loop", aw::now_ns() - t0);
  std::printf("%d downloads of %zu bytes (%s): ok\n", repeats, bytes, fixed ? "pinned" : "pageable");
  free(pageable);
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev));
  return 0;
}
