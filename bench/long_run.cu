// The traced process's memory on a long run: prints its resident memory, so that
// long_run.sh can compare a traced run with a bare one.
//   long_run loop CALLS [THREADS=4]   THREADS threads, CALLS calls in all: in turn a launch, a 64-byte
//                                     pinned and a 64-byte pageable cudaMemcpyAsync, a stream sync
//   long_run threads N [AT_ONCE=1]    N short-lived threads, AT_ONCE at a time (started together,
//                                     then joined), one 64-byte copy each
// Output: "calls N rss_kib R hwm_kib H" (VmRSS and VmHWM of /proc/self/status at the end).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__global__ void empty_kernel() {}

#define CK(x)                                                                 \
  do {                                                                        \
    if (cudaError_t e_ = (x)) {                                               \
      std::fprintf(stderr, "long_run: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

long status_kib(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (!std::strncmp(line, field, n)) v = std::strtol(line + n, nullptr, 10);
  std::fclose(f);
  return v;
}

void loop_thread(long calls) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* dev = nullptr;
  void* pinned = nullptr;
  CK(cudaMalloc(&dev, 64));
  CK(cudaMallocHost(&pinned, 64));
  char pageable[64] = {};
  for (long i = 0; i < calls; ++i) {
    switch (i & 3) {
      case 0: empty_kernel<<<1, 1, 0, s>>>(); break;
      case 1: CK(cudaMemcpyAsync(dev, pinned, 64, cudaMemcpyHostToDevice, s)); break;
      case 2: CK(cudaMemcpyAsync(dev, pageable, 64, cudaMemcpyHostToDevice, s)); break;
      default: CK(cudaStreamSynchronize(s)); break;
    }
  }
  CK(cudaStreamSynchronize(s));
  CK(cudaFreeHost(pinned));
  CK(cudaFree(dev));
  CK(cudaStreamDestroy(s));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "loop") != 0 && std::strcmp(argv[1], "threads") != 0)) {
    std::fprintf(stderr, "usage: long_run loop CALLS [THREADS=4] | long_run threads N [AT_ONCE=1]\n");
    return 2;
  }
  const long n = std::strtol(argv[2], nullptr, 10);
  CK(cudaFree(nullptr));  // the context, before the figures' first thread
  long calls = 0;
  if (!std::strcmp(argv[1], "loop")) {
    const int threads = argc > 3 ? std::atoi(argv[3]) : 4;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(loop_thread, n / threads);
    for (auto& t : pool) t.join();
    calls = n / threads * threads;
  } else {
    void* dev = nullptr;
    CK(cudaMalloc(&dev, 64));
    const long at_once = argc > 3 ? std::max(1l, std::strtol(argv[3], nullptr, 10)) : 1;
    for (long i = 0; i < n; i += at_once) {
      std::vector<std::thread> batch;
      for (long j = i; j < n && j < i + at_once; ++j)
        batch.emplace_back([dev] {
          char host[64] = {};
          CK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
        });
      for (auto& t : batch) t.join();
    }
    CK(cudaFree(dev));
    calls = n;
  }
  std::printf("calls %ld rss_kib %ld hwm_kib %ld\n", calls, status_kib("VmRSS:"), status_kib("VmHWM:"));
  return 0;
}
