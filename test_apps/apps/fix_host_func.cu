// Fix pair: cudaStreamAddCallback (deprecated-stream-callback) vs cudaLaunchHostFunc, the fix the
// finding names. The same function runs in stream order either way: the fix changes the API, not
// the time (expected gain: none).
//   fix_host_func [--fixed] [steps=20] [kernel_cycles=4e6] [callback_us=500]
#include "fix_pair.h"

static long long g_callback_us = 0;
static int g_runs = 0;

static void work(void*) {
  aw::host_work(g_callback_us);
  ++g_runs;
}
static void CUDART_CB callback(cudaStream_t, cudaError_t, void* p) { work(p); }

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const int steps = int(aw::arg_num(argc, argv, a, 20));
  const long long cycles = aw::arg_num(argc, argv, a + 1, 4000000);
  g_callback_us = aw::arg_num(argc, argv, a + 2, 500);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  const long long t0 = aw::now_ns();
  for (int i = 0; i < steps; ++i) {
    sleep_kernel<<<1, 1, 0, s>>>(cycles);
    if (fixed)
      AW_CHECK(cudaLaunchHostFunc(s, work, nullptr));  // @HOST_FUNC
    else
      AW_CHECK(cudaStreamAddCallback(s, callback, nullptr, 0));  // @CALLBACK
  }
  AW_CHECK(cudaStreamSynchronize(s));
  aw::timing("loop", aw::now_ns() - t0);
  AW_EXPECT(g_runs == steps, "%d runs of %d", g_runs, steps);
  std::printf("%d host functions (%s): ok\n", steps, fixed ? "cudaLaunchHostFunc" : "cudaStreamAddCallback");
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
