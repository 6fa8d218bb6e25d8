// Kernel launches that block the host:
//  1. the first launch of a kernel under lazy module loading (CUDA_MODULE_LOADING=LAZY, the default)
//     loads the module: @FIRST_LAUNCH; the second launch of the same kernel does not: @SECOND_LAUNCH
//  2. more sleep-kernel launches than the launch queue holds: once it is full each launch waits for a
//     slot, about one kernel's time: @QUEUE_LAUNCH
//   blocking_launches [launches=3072] [cycles_per_kernel=4e5 (~200 us)]
// H200 (CUDA 13.0): the queue holds about 1100 launches; later launches each wait about one kernel,
// so ~2000 launches block ~200 us each (well over the 50 us launch stack threshold of the preload
// library). The first launch under lazy loading took 0.11-0.16 ms there, the second 7 us.
#include "aw_common.h"

__global__ void spin_kernel_first(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

int main(int argc, char** argv) {
  const long long launches = aw::arg_num(argc, argv, 1, 3072);
  const long long cycles = aw::arg_num(argc, argv, 2, 400000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AW_CHECK(cudaFree(0));  // context creation is not the launch's cost

  long long t0 = aw::now_ns();
  spin_kernel_first<<<1, 1, 0, s>>>(1000);  // @FIRST_LAUNCH
  aw::timing("first launch of spin_kernel_first returned after", aw::now_ns() - t0);
  AW_CHECK(cudaGetLastError());
  t0 = aw::now_ns();
  spin_kernel_first<<<1, 1, 0, s>>>(1000);  // @SECOND_LAUNCH
  aw::timing("second launch returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  std::printf("lazy loading: first and second launch done\n");

  sleep_kernel<<<1, 1, 0, s>>>(1000);  // load sleep_kernel before the queue test
  AW_CHECK(cudaStreamSynchronize(s));
  long long slowest = 0, blocked_over_10us = 0;
  long long start = aw::now_ns();
  for (long long i = 0; i < launches; ++i) {
    long long a = aw::now_ns();
    sleep_kernel<<<1, 1, 0, s>>>(cycles);  // @QUEUE_LAUNCH
    long long d = aw::now_ns() - a;
    if (d > slowest) slowest = d;
    if (d > 10000) ++blocked_over_10us;
  }
  AW_CHECK(cudaGetLastError());
  long long enqueued = aw::now_ns() - start;
  AW_CHECK(cudaStreamSynchronize(s));
  long long total = aw::now_ns() - start;
  std::fprintf(stderr, "# %lld launches of %.1f us kernels: enqueuing took %.3f ms, all done after %.3f ms; "
               "%lld launches took > 10 us, slowest %.3f ms\n", launches, aw::cycles_to_ms(cycles) * 1e3,
               enqueued / 1e6, total / 1e6, blocked_over_10us, slowest / 1e6);
  std::printf("launch queue: %lld launches done\n", launches);
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
