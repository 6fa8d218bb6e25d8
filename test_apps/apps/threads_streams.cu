// Several host threads, each with its own non-blocking stream, each running a sleep kernel and then
// a D2H copy: even-numbered threads into pinned memory (@THREAD_PINNED_D2H: never blocks), odd ones
// into pageable memory (@THREAD_PAGEABLE_D2H: blocks about the kernel's time, in parallel).
//   threads_streams [threads=4] [iterations=3] [cycles=4e7 (~20 ms)] [bytes=4M]
#include "aw_common.h"

#include <thread>
#include <vector>

static long long g_cycles;
static size_t g_bytes;
static int g_iterations;

static void worker(int id) {
  const bool pinned = id % 2 == 0;
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, g_bytes));
  char* host = nullptr;
  if (pinned) AW_CHECK(cudaMallocHost(&host, g_bytes));
  else host = static_cast<char*>(malloc(g_bytes));
  for (int it = 0; it < g_iterations; ++it) {
    const unsigned seed = unsigned(100 + id * 10 + it);
    aw::fill(host, g_bytes, seed);
    // Upload in the thread's own stream: a synchronous cudaMemcpy from pageable memory may return
    // before its DMA (in the legacy stream) is done, and a non-blocking stream does not wait for it.
    AW_CHECK(cudaMemcpyAsync(dev, host, g_bytes, cudaMemcpyHostToDevice, s));
    AW_CHECK(cudaStreamSynchronize(s));
    std::memset(host, 0, g_bytes);
    sleep_kernel<<<1, 1, 0, s>>>(g_cycles);
    long long t0 = aw::now_ns();
    if (pinned) {
      AW_CHECK(cudaMemcpyAsync(host, dev, g_bytes, cudaMemcpyDeviceToHost, s));  // @THREAD_PINNED_D2H
    } else {
      AW_CHECK(cudaMemcpyAsync(host, dev, g_bytes, cudaMemcpyDeviceToHost, s));  // @THREAD_PAGEABLE_D2H
    }
    long long t1 = aw::now_ns();
    std::fprintf(stderr, "# thread %d (%s) iteration %d: D2H returned after %.3f ms\n", id, pinned ? "pinned" : "pageable", it, (t1 - t0) / 1e6);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(host, g_bytes, seed), "thread %d iteration %d: wrong data", id, it);
  }
  if (pinned) AW_CHECK(cudaFreeHost(host));
  else free(host);
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  const int threads = int(aw::arg_num(argc, argv, 1, 4));
  g_iterations = int(aw::arg_num(argc, argv, 2, 3));
  g_cycles = aw::arg_num(argc, argv, 3, 40000000ll);
  g_bytes = size_t(aw::arg_num(argc, argv, 4, 4ll << 20));
  AW_CHECK(cudaFree(0));
  sleep_kernel<<<1, 1>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaDeviceSynchronize());
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker, i);
  for (auto& t : pool) t.join();
  std::printf("%d threads x %d iterations: ok\n", threads, g_iterations);
  return 0;
}
