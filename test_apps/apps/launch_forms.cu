// The launch forms besides <<<...>>>: cudaLaunchKernelEx (cuda_runtime.h's template over
// cudaLaunchKernelExC; the launch-configuration API, with an attribute) and
// cudaLaunchCooperativeKernel (what a grid-wide cooperative-groups sync needs). Each is the first
// launch of its kernel, so lazy module loading blocks the host (the simulator:
// ASYNCWATCH_SIM_LAZY_LOAD_US); then the stream is still busy with both kernels, which shows the
// launches returned before they ran. With the shared runtime the runtime wrappers record them, with
// the static runtime the driver's (cuLaunchKernelEx, cuLaunchCooperativeKernel).
//   launch_forms [kernel_ms=20]
//   @LAUNCH_EX    cudaLaunchKernelEx of spin_ex, on a non-blocking stream, one attribute
//   @LAUNCH_COOP  cudaLaunchCooperativeKernel of spin_coop, on the same stream
//   @SYNC         cudaStreamSynchronize of that stream
//
// Expected: blocking-launch cause first-launch at @LAUNCH_EX and @LAUNCH_COOP (on the GPU the second
// kernel of a module loads faster: may be under the threshold), an explicit sync at @SYNC at most.
#include "aw_common.h"

__global__ void spin_ex(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void spin_coop(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

int main(int argc, char** argv) {
  const double kernel_ms = aw::arg_num(argc, argv, 1, 20);
  long long cycles = static_cast<long long>(kernel_ms * 1e-3 * aw::kClockHz);
  AW_CHECK(cudaFree(nullptr));  // the context first: the launches below pay their own loading only
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributePriority;
  attribute[0].val.priority = 0;
  config.attrs = attribute;
  config.numAttrs = 1;
  long long t0 = aw::now_ns();
  AW_CHECK(cudaLaunchKernelEx(&config, spin_ex, cycles));  // @LAUNCH_EX
  aw::timing("cudaLaunchKernelEx (first launch of spin_ex) returned after", aw::now_ns() - t0);

  void* args[] = {&cycles};
  const void* coop = reinterpret_cast<const void*>(spin_coop);
  t0 = aw::now_ns();
  AW_CHECK(cudaLaunchCooperativeKernel(coop, dim3(1), dim3(1), args, 0, s));  // @LAUNCH_COOP
  aw::timing("cudaLaunchCooperativeKernel (first launch of spin_coop) returned after", aw::now_ns() - t0);

  const cudaError_t busy = cudaStreamQuery(s);
  AW_EXPECT(busy == cudaErrorNotReady, "the stream was not busy after two %g ms kernels: %s", kernel_ms,
            cudaGetErrorName(busy));
  AW_CHECK(cudaStreamSynchronize(s));  // @SYNC
  AW_CHECK(cudaStreamDestroy(s));
  std::printf("launch forms: ok\n");
  return 0;
}
