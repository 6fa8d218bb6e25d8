// Calls straight into the driver API (-lcuda), the way the static CUDA runtime reaches asyncwatch's
// driver wrappers (it calls the driver's entry points itself, each through asyncwatch's outer driver
// wrapper): callgrind_per_call.sh --driver counts what those wrappers add per call on the
// simulator. One item per run, after 200 calls of warm-up. event_query: CALLS cuEventQuery calls on an
// event behind a long kernel, each CUDA_ERROR_NOT_READY (a polling loop; bench/poll_loop.sh --callgrind).
//   driver_bench copy_pinned_64|launch|event_query CALLS
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "aw_sleep_fatbin.h"  // generated (test_apps/apps): aw_sleep_fatbin[]

#define CK(x)                                                 \
  do {                                                        \
    if (CUresult r_ = (x)) {                                  \
      std::fprintf(stderr, "driver_bench: %s: %d\n", #x, r_); \
      return 1;                                               \
    }                                                         \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: driver_bench copy_pinned_64|launch|event_query CALLS\n");
    return 2;
  }
  const bool copy = !std::strcmp(argv[1], "copy_pinned_64");
  const bool query = !std::strcmp(argv[1], "event_query");
  if (!copy && !query && std::strcmp(argv[1], "launch") != 0) {
    std::fprintf(stderr, "driver_bench: unknown item %s\n", argv[1]);
    return 2;
  }
  const long calls = std::atol(argv[2]);
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dptr;
  void* host;
  CK(cuMemAlloc(&dptr, 64));
  CK(cuMemAllocHost(&host, 64));
  CUmodule mod;
  CUfunction fn;
  CK(cuModuleLoadData(&mod, aw_sleep_fatbin));
  CK(cuModuleGetFunction(&fn, mod, "_Z12sleep_kernelx"));  // sleep_kernel(long long)
  long long cycles = 0;
  void* params[] = {&cycles};
  if (query) {  // a kernel far longer than the loop (~50 s simulated), then its event polled
    long long long_cycles = 100000000000ll;
    void* long_params[] = {&long_cycles};
    CUevent done;
    CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, long_params, nullptr));
    CK(cuEventRecord(done, s));
    for (long i = 0; i < 200 + calls; ++i)
      if (CUresult r = cuEventQuery(done); r != CUDA_ERROR_NOT_READY) {
        std::fprintf(stderr, "driver_bench: cuEventQuery: %d, not CUDA_ERROR_NOT_READY\n", r);
        return 1;
      }
    std::printf("driver_bench: %s %ld calls\n", argv[1], calls);
    std::_Exit(0);  // not waiting for the kernel
  }
  for (long i = 0; i < 200 + calls; ++i) {
    if (copy)
      CK(cuMemcpyHtoDAsync(dptr, host, 64, s));
    else
      CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  }
  CK(cuStreamSynchronize(s));
  CK(cuMemFreeHost(host));
  CK(cuMemFree(dptr));
  std::printf("driver_bench: %s %ld calls\n", argv[1], calls);
  return 0;
}
