// Default streams. A sleep kernel runs in a blocking stream (cudaStreamCreate), then a pageable D2H
// copy is made in:
//   @STREAM0_D2H        stream 0: in the default build the legacy default stream, which waits for
//                       the blocking stream (blocked about the kernel's time); in the build with
//                       --default-stream per-thread (default_streams_ptds) the per-thread stream,
//                       which does not wait for other streams (blocked much less than the kernel)
//   @NONBLOCKING_D2H    a cudaStreamNonBlocking stream: does not wait (both builds)
//   @LEGACY_HANDLE_D2H  cudaStreamLegacy explicitly: waits (both builds)
//   @PER_THREAD_D2H     cudaStreamPerThread explicitly: does not wait for the blocking stream in
//                       either build (the per-thread stream synchronizes with the legacy stream only)
//   default_streams [cycles=1e8 (~50 ms)] [bytes=4M]
#include "aw_common.h"

static char* g_dev;
static size_t g_bytes;
static long long g_cycles;

static void kernel_in(cudaStream_t blocking) {
  sleep_kernel<<<1, 1, 0, blocking>>>(g_cycles);
  AW_CHECK(cudaGetLastError());
}

static void done(const char* what, char* host, long long t0) {
  aw::timing(what, aw::now_ns() - t0);
  AW_EXPECT(aw::check(host, g_bytes, 51), "%s: data not complete on return", what);
  std::memset(host, 0, g_bytes);
  AW_CHECK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  g_cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  g_bytes = size_t(aw::arg_num(argc, argv, 2, 4ll << 20));
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  std::printf("build: --default-stream per-thread\n");
#else
  std::printf("build: --default-stream legacy\n");
#endif
  cudaStream_t blocking, nonblocking;
  AW_CHECK(cudaStreamCreate(&blocking));
  AW_CHECK(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
  char* host = static_cast<char*>(malloc(g_bytes));
  aw::fill(host, g_bytes, 51);
  AW_CHECK(cudaMalloc(&g_dev, g_bytes));
  AW_CHECK(cudaMemcpy(g_dev, host, g_bytes, cudaMemcpyHostToDevice));
  std::memset(host, 0, g_bytes);
  kernel_in(blocking);  // warm-up (lazy loading)
  AW_CHECK(cudaDeviceSynchronize());

  kernel_in(blocking);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host, g_dev, g_bytes, cudaMemcpyDeviceToHost, 0));  // @STREAM0_D2H
  done("pageable D2H in stream 0 after a kernel in a blocking stream", host, t0);

  kernel_in(blocking);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host, g_dev, g_bytes, cudaMemcpyDeviceToHost, nonblocking));  // @NONBLOCKING_D2H
  done("pageable D2H in a non-blocking stream after a kernel in a blocking stream", host, t0);

  kernel_in(blocking);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host, g_dev, g_bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy));  // @LEGACY_HANDLE_D2H
  done("pageable D2H in cudaStreamLegacy after a kernel in a blocking stream", host, t0);

  kernel_in(blocking);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host, g_dev, g_bytes, cudaMemcpyDeviceToHost, cudaStreamPerThread));  // @PER_THREAD_D2H
  done("pageable D2H in cudaStreamPerThread after a kernel in a blocking stream", host, t0);

  std::printf("default streams: all copies complete on return\n");
  free(host);
  AW_CHECK(cudaFree(g_dev));
  AW_CHECK(cudaStreamDestroy(blocking));
  AW_CHECK(cudaStreamDestroy(nonblocking));
  return 0;
}
