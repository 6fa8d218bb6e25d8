// Pageable host -> device cudaMemcpyAsync across sizes: which sizes block the host, and for how long.
//   pageable_h2d_sizes [min_bytes=4K] [max_bytes=1G] [factor=4]
// Every copy is made at the one call site @H2D_PAGEABLE (a malloc'd source, a non-blocking stream);
// a pinned control copy of the largest size is made at @H2D_PINNED_CONTROL.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const size_t min_bytes = size_t(aw::arg_num(argc, argv, 1, 4 << 10));
  const size_t max_bytes = size_t(aw::arg_num(argc, argv, 2, 1ll << 30));
  const size_t factor = size_t(aw::arg_num(argc, argv, 3, 4));
  AW_EXPECT(min_bytes > 0 && min_bytes <= max_bytes && factor >= 2, "bad sizes");

  cudaStream_t stream;
  AW_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  char* host = static_cast<char*>(malloc(max_bytes));
  char* back = nullptr;
  char* dev = nullptr;
  AW_CHECK(cudaMallocHost(&back, max_bytes));
  AW_CHECK(cudaMalloc(&dev, max_bytes));
  AW_EXPECT(host != nullptr, "malloc(%zu) failed", max_bytes);

  int n = 0;
  for (size_t size = min_bytes; size <= max_bytes; size *= factor, ++n) {
    aw::fill(host, size, unsigned(n + 1));
    long long t0 = aw::now_ns();
    AW_CHECK(cudaMemcpyAsync(dev, host, size, cudaMemcpyHostToDevice, stream));  // @H2D_PAGEABLE
    long long t1 = aw::now_ns();
    std::fprintf(stderr, "# H2D pageable %12zu bytes: returned after %10.3f ms\n", size, double(t1 - t0) / 1e6);
    // Overwrite the source: the device must hold what the source held when the call returned.
    std::memset(host, 0, size);
    AW_CHECK(cudaMemcpyAsync(back, dev, size, cudaMemcpyDeviceToHost, stream));
    AW_CHECK(cudaStreamSynchronize(stream));
    AW_EXPECT(aw::check(back, size, unsigned(n + 1)), "size %zu: device got wrong data", size);
  }
  std::printf("pageable H2D copies: %d sizes from %zu to %zu bytes\n", n, min_bytes, max_bytes);

  // Pinned control: same largest size from pinned memory only enqueues.
  aw::fill(back, max_bytes, 99);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(dev, back, max_bytes, cudaMemcpyHostToDevice, stream));  // @H2D_PINNED_CONTROL
  aw::timing("H2D pinned control, largest size, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(stream));
  AW_CHECK(cudaMemcpy(host, dev, max_bytes, cudaMemcpyDeviceToHost));
  AW_EXPECT(aw::check(host, max_bytes, 99), "pinned control: wrong data");
  std::printf("pinned control copy: ok\n");

  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaFreeHost(back));
  free(host);
  AW_CHECK(cudaStreamDestroy(stream));
  return 0;
}
