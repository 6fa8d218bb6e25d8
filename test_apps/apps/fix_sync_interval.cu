// Fix pair: a training-style loop that reads a result back every step (explicit-sync: the host
// waits for the step's kernel, then prepares the next step while the GPU stands idle) vs every
// `every` steps (the host prepares the next step while the GPU runs this one).
//   fix_sync_interval [--fixed] [steps=40] [kernel_cycles=1e7] [host_us=2000] [every=10]
#include "fix_pair.h"

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const int steps = int(aw::arg_num(argc, argv, a, 40));
  const long long cycles = aw::arg_num(argc, argv, a + 1, 10000000);
  const long long host_us = aw::arg_num(argc, argv, a + 2, 2000);
  const int every = fixed ? int(aw::arg_num(argc, argv, a + 3, 10)) : 1;
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  const long long t0 = aw::now_ns();
  for (int i = 0; i < steps; ++i) {
    aw::host_work(host_us);  // preparing the step (in a framework: the Python side)
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    if ((i + 1) % every == 0 || i + 1 == steps) AW_CHECK(cudaStreamSynchronize(s));  // @READ_BACK
  }
  aw::timing("loop", aw::now_ns() - t0);
  std::printf("%d steps, read back every %d: ok\n", steps, every);
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
