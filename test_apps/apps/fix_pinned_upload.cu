// Fix pair: a pageable upload then a kernel (pageable-async-copy, staged) vs the same upload from
// pinned memory. Both variants allocate both buffers.
//   fix_pinned_upload [--fixed] [bytes=256M] [repeats=4] [kernel_cycles=2e7]
#include "fix_pair.h"

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const size_t bytes = size_t(aw::arg_num(argc, argv, a, 256ll << 20));
  const int repeats = int(aw::arg_num(argc, argv, a + 1, 4));
  const long long cycles = aw::arg_num(argc, argv, a + 2, 20000000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *dev = nullptr, *pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  char* pageable = static_cast<char*>(malloc(bytes));
  aw::fill(pageable, bytes, 7);
  aw::fill(pinned, bytes, 7);
  AW_CHECK(cudaMemset(dev, 0, bytes));  // first touch of the device memory (the simulator's is host memory)
  AW_CHECK(cudaDeviceSynchronize());    // (the stream is non-blocking: not ordered after the legacy stream)
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up: module loading is not part of the pair
  AW_CHECK(cudaStreamSynchronize(s));
  char* src = fixed ? pinned : pageable;
  const long long t0 = aw::now_ns();
  for (int r = 0; r < repeats; ++r) {
    AW_CHECK(cudaMemcpyAsync(dev, src, bytes, cudaMemcpyHostToDevice, s));  // @UPLOAD
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    AW_CHECK(cudaStreamSynchronize(s));
  }
  aw::timing("loop", aw::now_ns() - t0);
  char check[4096];
  AW_CHECK(cudaMemcpy(check, dev, sizeof check, cudaMemcpyDeviceToHost));
  AW_EXPECT(std::memcmp(check, pageable, sizeof check) == 0, "uploaded data wrong");
  std::printf("%d uploads of %zu bytes (%s): ok\n", repeats, bytes, fixed ? "pinned" : "pageable");
  free(pageable);
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev));
  return 0;
}
