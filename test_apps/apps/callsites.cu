// Call sites where compilers and real programs make them hard. Every launch and copy
// below must be reported at its own line, in every build:
//  - nvcc -g -O2 inlines each kernel's host wrapper into the launching function (the innermost
//    inline frame is the kernel's __global__ line, the launch is the scope's call line);
//  - a launch inside a function that is itself inlined is reported in that function;
//  - a multi-line launch is reported at its first line;
//  - a user function named like a runtime API (cuda + an upper-case letter) is the user's frame;
//  - copies made inside a shared library without debug information are reported where main called
//    the library, "via" its function;
//  - a kernel template in an anonymous namespace keeps its full name;
//  - a copy in an inline function of a namespace is reported in that function: clang writes a
//    function's debug information inside its namespace's, GCC beside it.
//   callsites [cycles=2e6 (~1 ms)] [bytes=8M]
// Built six times (callsites_o0, callsites_o2, and callsites_clang_o2 with clang as nvcc's host
// compiler, each also .static). Run with CUDA_LAUNCH_BLOCKING=1:
// every launch then waits for its kernel, so each launch site gives a blocking-launch finding.
#include "aw_common.h"
#include "nodebug_copy.h"

#include <vector>

namespace {
template <typename T, typename U>
__global__ void csr_partition_kernel(const T* offsets, U* parts, int n, long long cycles) {  // spins: its launch blocks (CUDA_LAUNCH_BLOCKING) well past the threshold
  int i = blockIdx.x * blockDim.x + threadIdx.x; for (long long t0 = clock64(); clock64() - t0 < cycles;) {}
  if (i < n) parts[i] = static_cast<U>(offsets[i] % 7);
}
}  // namespace

// Inlined into its callers at every optimization level: the launch's site is this line.
__attribute__((always_inline)) inline void launch_in_inline_helper(long long cycles, cudaStream_t s) {
  sleep_kernel<<<1, 1, 0, s>>>(cycles);  // @LAUNCH_IN_INLINE
}

// Named like a runtime API function, but the user's: its copy is reported here, as cudaMemcpyAsync.
__attribute__((noinline)) void cudaGraphsManual(void* host, const void* dev, size_t n, cudaStream_t s) {
  AW_CHECK(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, s));  // @COPY_IN_CUDA_NAMED
  AW_CHECK(cudaStreamSynchronize(s));
}

// Where most C++ code lives: an inline helper in an anonymous namespace inside a named one.
namespace app {
namespace {
__attribute__((always_inline)) inline void upload(void* dev, const void* host, size_t n, cudaStream_t s) {
  AW_CHECK(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s));  // @COPY_IN_NAMESPACE_INLINE
}
}  // namespace
__attribute__((noinline)) void stage(void* dev, const void* host, size_t n, cudaStream_t s) { upload(dev, host, n, s); }
}  // namespace app

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 2000000);
  const size_t bytes = static_cast<size_t>(aw::arg_num(argc, argv, 2, 8 << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AW_CHECK(cudaFree(0));

  sleep_kernel<<<1, 1, 0, s>>>(cycles);  // @LAUNCH_A
  sleep_kernel<<<1, 1, 0, s>>>(cycles / 2);  // @LAUNCH_B
  sleep_kernel<<<1,  // @LAUNCH_MULTILINE
                 1, 0, s>>>(cycles);
  launch_in_inline_helper(cycles, s);
  launch_in_inline_helper(cycles / 2, s);
  auto launch_in_lambda = [&](int k) {
    sleep_kernel<<<1, 1, 0, s>>>(cycles * k);  // @LAUNCH_IN_LAMBDA
  };
  launch_in_lambda(1);
  AW_CHECK(cudaGetLastError());

  const int n = 1024;
  int *offsets = nullptr, *parts = nullptr;
  AW_CHECK(cudaMalloc(&offsets, n * sizeof(int)));
  AW_CHECK(cudaMalloc(&parts, n * sizeof(int)));
  AW_CHECK(cudaMemsetAsync(offsets, 0, n * sizeof(int), s));  // @MEMSET
  csr_partition_kernel<int, int><<<n / 256, 256, 0, s>>>(offsets, parts, n, cycles);  // @LAUNCH_ANON
  AW_CHECK(cudaGetLastError());
  AW_CHECK(cudaStreamSynchronize(s));
  std::printf("launches: done\n");

  void* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  std::vector<char> host(bytes), back(bytes);
  aw::fill(host.data(), bytes, 12);
  AW_CHECK(cudaMemcpyAsync(dev, host.data(), bytes, cudaMemcpyHostToDevice, s));  // @COPY_MAIN
  cudaGraphsManual(back.data(), dev, bytes, s);
  app::stage(dev, host.data(), bytes, s);
  AW_EXPECT(aw::check(back.data(), bytes, 12), "device round trip");
  std::printf("copies in main: ok\n");

  aw::fill(host.data(), bytes, 13);
  AW_EXPECT(aw_nodebug_roundtrip(host.data(), bytes) == 0, "library round trip failed");  // @COPY_VIA_LIBRARY
  AW_EXPECT(aw::check(host.data(), bytes, 13), "library round trip");
  std::printf("copies in the library: ok\n");

  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaFree(offsets));
  AW_CHECK(cudaFree(parts));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
