// Host-to-host cudaMemcpyAsync: always synchronous, whatever the memory (measured on an H200 with CUDA 13).
//   host_to_host [cycles=1e8 (~50 ms)] [bytes=16M]
//   @H2H_DEFAULT   pageable -> pageable, cudaMemcpyDefault, after a sleep kernel in the stream
//   @H2H_KIND      pageable -> pageable, cudaMemcpyHostToHost
//   @H2H_PINNED    pinned -> pinned, cudaMemcpyHostToHost
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 16ll << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* a = static_cast<char*>(malloc(bytes));
  char* b = static_cast<char*>(malloc(bytes));
  char *pa = nullptr, *pb = nullptr;
  AW_CHECK(cudaMallocHost(&pa, bytes));
  AW_CHECK(cudaMallocHost(&pb, bytes));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaStreamSynchronize(s));

  aw::fill(a, bytes, 31);
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDefault, s));  // @H2H_DEFAULT
  aw::timing("H2H cudaMemcpyDefault after the kernel, returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(b, bytes, 31), "H2H (default): data not complete on return");
  AW_CHECK(cudaStreamSynchronize(s));
  std::printf("H2H cudaMemcpyDefault: complete on return\n");

  aw::fill(b, bytes, 32);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(a, b, bytes, cudaMemcpyHostToHost, s));  // @H2H_KIND
  aw::timing("H2H cudaMemcpyHostToHost, returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(a, bytes, 32), "H2H (HostToHost): data not complete on return");
  std::printf("H2H cudaMemcpyHostToHost: complete on return\n");

  aw::fill(pa, bytes, 33);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(pb, pa, bytes, cudaMemcpyHostToHost, s));  // @H2H_PINNED
  aw::timing("H2H pinned -> pinned, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(pb, bytes, 33), "H2H pinned: wrong data");
  std::printf("H2H pinned -> pinned: ok\n");

  free(a);
  free(b);
  AW_CHECK(cudaFreeHost(pa));
  AW_CHECK(cudaFreeHost(pb));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
