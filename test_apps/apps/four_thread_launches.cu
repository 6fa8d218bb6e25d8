// Share of wall time: four host threads make the first launch of the same kernel at
// the same time; lazy module loading blocks the first, and the other three wait for that load. The
// four blocked intervals overlap in time, so their sum exceeds the process's wall time spent in them.
//   four_thread_launches [launches=4]
//   @THREAD_FIRST_LAUNCH   each thread's first launch of spin_shared
//   @THREAD_LAUNCH         each thread's later launches
//
// Today: blocking-launch at @THREAD_FIRST_LAUNCH, 4 calls (one cause first-launch, the three waiters
// "the trace does not show why"), whose share of the wall time sums the threads' blocked times: above
// 100 % (the simulator's expectation sets a 200 ms lazy load: ~800 ms blocked in a ~0.35 s process).
// Expected: shares per thread, never above 100 %; the finding itself stays.
#include "aw_common.h"

#include <atomic>
#include <thread>
#include <vector>

__global__ void spin_shared(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

static std::atomic<int> g_ready{0};

static void worker(int launches, int* ok) {
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ++g_ready;
  while (g_ready < 4) std::this_thread::yield();  // the four first launches start together
  spin_shared<<<1, 1, 0, s>>>(1000);  // @THREAD_FIRST_LAUNCH
  for (int i = 1; i < launches; ++i) spin_shared<<<1, 1, 0, s>>>(1000);  // @THREAD_LAUNCH
  *ok = cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
  AW_CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  const int launches = int(aw::arg_num(argc, argv, 1, 4));
  AW_CHECK(cudaFree(nullptr));  // context creation is not this test
  int ok[4] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, launches, &ok[t]);
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) AW_EXPECT(ok[t], "thread %d failed", t);
  std::printf("4 threads x %d launches: ok\n", launches);
  return 0;
}
