// Issue 14 item 5 (share of wall time): four host threads each make the first launch of their own
// kernel at the same time, each blocked by lazy module loading. The blocked times overlap in time, so
// their sum over threads exceeds the process's wall time spent in them.
//   four_thread_launches [launches=4]
//   @THREAD_FIRST_LAUNCH   each thread's first launch (of spin_t0 .. spin_t3)
//   @THREAD_LAUNCH         each thread's later launches
//
// Today: blocking-launch first-launch at @THREAD_FIRST_LAUNCH (4 calls); its share of the wall time
// sums the threads' blocked times and can exceed 100 % (the simulator's expectation sets a 200 ms
// lazy load so the four overlap: ~800 ms blocked in ~300 ms).
// Expected once issue 14 is done: shares per thread, never above 100 % (JSON wall-time share of the
// finding <= 1 per thread); the finding itself stays.
#include "aw_common.h"

#include <thread>
#include <vector>

#define AW_SPIN_KERNEL(name)                      \
  __global__ void name(long long cycles) {        \
    long long start = clock64();                  \
    while (clock64() - start < cycles) {          \
    }                                             \
  }
AW_SPIN_KERNEL(spin_t0)
AW_SPIN_KERNEL(spin_t1)
AW_SPIN_KERNEL(spin_t2)
AW_SPIN_KERNEL(spin_t3)

using Kernel = void (*)(long long);

static void worker(Kernel k, int launches, int* ok) {
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  k<<<1, 1, 0, s>>>(1000);  // @THREAD_FIRST_LAUNCH
  for (int i = 1; i < launches; ++i) k<<<1, 1, 0, s>>>(1000);  // @THREAD_LAUNCH
  *ok = cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
  AW_CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  const int launches = int(aw::arg_num(argc, argv, 1, 4));
  AW_CHECK(cudaFree(nullptr));  // context creation is not this test
  const Kernel kernels[4] = {spin_t0, spin_t1, spin_t2, spin_t3};
  int ok[4] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, kernels[t], launches, &ok[t]);
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) AW_EXPECT(ok[t], "thread %d failed", t);
  std::printf("4 threads x %d launches: ok\n", launches);
  return 0;
}
