// Context creation: a kernel launch that is the process's first CUDA call pays for
// creating the context (~100 ms with the shared runtime on the H200) as well as lazy module
// loading; after a cudaFree(0) a first launch costs only the loading (0.2-0.25 ms).
//   first_call_launch [warm]   (any argument: cudaFree(0) first, the control)
//   @FIRST_CALL_LAUNCH  the launch (first CUDA call unless warm)
//   @WARM_UP            cudaFree(0) (warm runs only)
//
// Today: blocking-launch cause first-launch at @FIRST_CALL_LAUNCH, ~100 ms (static runtime: 73 us, .json).
// Expected: cause context-init at @FIRST_CALL_LAUNCH (cold run); in the warm run
// cause first-launch (about the loading time only) and the ~100 ms in the cudaFree at @WARM_UP.
#include "aw_common.h"

int main(int argc, char**) {
  const bool warm = argc > 1;
  if (warm) AW_CHECK(cudaFree(nullptr));  // @WARM_UP
  long long t0 = aw::now_ns();
  sleep_kernel<<<1, 1>>>(1000);  // @FIRST_CALL_LAUNCH
  aw::timing("first launch returned after", aw::now_ns() - t0);
  AW_CHECK(cudaGetLastError());
  AW_CHECK(cudaDeviceSynchronize());
  std::printf("first launch (%s): ok\n", warm ? "after cudaFree(0)" : "first CUDA call");
  return 0;
}
