// Fix pair: eight kernels launched for the first time inside the loop, each first launch loading
// its module lazily (blocking-launch, first-launch) vs the same kernels warmed up before the loop,
// the fix the finding names. The loading moves out of the loop but still happens: the process's
// wall time stays the same (expected gain: none).
//   fix_warm_launch [--fixed] [steps=10] [kernel_cycles=2e6]
#include "fix_pair.h"

__device__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
// Eight kernels (the simulator times them as sleep kernels: their names and 64-bit first parameter).
#define AW_KERNEL(n) \
  __global__ void sleep_kernel_##n(long long cycles) { spin(cycles); }
AW_KERNEL(0)
AW_KERNEL(1)
AW_KERNEL(2)
AW_KERNEL(3)
AW_KERNEL(4)
AW_KERNEL(5)
AW_KERNEL(6)
AW_KERNEL(7)

using Kernel = void (*)(long long);
static const Kernel kKernels[] = {sleep_kernel_0, sleep_kernel_1, sleep_kernel_2, sleep_kernel_3,
                                  sleep_kernel_4, sleep_kernel_5, sleep_kernel_6, sleep_kernel_7};

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const int steps = int(aw::arg_num(argc, argv, a, 10));
  const long long cycles = aw::arg_num(argc, argv, a + 1, 2000000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AW_CHECK(cudaFree(nullptr));  // the context, in both variants
  if (fixed) {
    for (Kernel k : kKernels) k<<<1, 1, 0, s>>>(0);  // warm-up: each module loaded here
    AW_CHECK(cudaStreamSynchronize(s));
  }
  const long long t0 = aw::now_ns();
  for (int i = 0; i < steps; ++i) {
    for (Kernel k : kKernels) k<<<1, 1, 0, s>>>(cycles);  // @LAUNCH
    AW_CHECK(cudaStreamSynchronize(s));
  }
  aw::timing("loop", aw::now_ns() - t0);
  std::printf("%d steps of %zu kernels (%s): ok\n", steps, sizeof kKernels / sizeof kKernels[0],
              fixed ? "warmed up" : "cold");
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
