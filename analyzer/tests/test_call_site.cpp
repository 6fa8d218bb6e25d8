#include "call_site.h"

#include <gtest/gtest.h>

using namespace asyncwatch;

namespace {
Frame frame(const char* function, const char* module, const char* file = "", int line = 0) {
  Frame f;
  f.function = function;
  f.module = module;
  f.file = file;
  f.line = line;
  return f;
}
}  // namespace

TEST(CallSite, SkipsToolDriverAndSharedRuntime) {
  std::vector<Frame> s = {frame("aw_hook", "/opt/aw/lib/libasyncwatch.so"), frame("", "/usr/lib/libcuda.so.1"),
                          frame("cudaMemcpyAsync", "/usr/local/cuda/lib64/libcudart.so.13"),
                          frame("main", "/work/seed", "/src/seed.cu", 52), frame("__libc_start_main", "/lib/libc.so.6")};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
}

TEST(CallSite, SkipsTheStaticRuntimeInsideTheExecutableAndNamesItsApi) {
  std::vector<Frame> s = {frame("", "/usr/lib/libcuda.so.1"),
                          frame("cudart::driverHelper::memcpyAsyncDispatch(void*, void const*)", "/work/seed"),
                          frame("cudart::cudaApiMemcpyAsync(void*, void const*, unsigned long)", "/work/seed"),
                          frame("cudaMemcpyAsync_ptsz", "/work/seed"), frame("__cudart1234", "/work/seed"),
                          frame("run(float*)", "/work/seed", "/src/seed.cu", 52)};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 5);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
}

TEST(CallSite, TemplateWrappersAndLaunchHelpers) {
  std::vector<Frame> s = {frame("__cudaLaunchKernel_ptsz", "/work/app"),
                          frame("cudaError cudaLaunchKernel<char>(char const*, dim3)", "/work/app"),
                          frame("__device_stub__Z5dummyv()", "/work/app", "/tmp/x.cudafe1.stub.c", 3),
                          frame("main", "/work/app", "/src/app.cu", 9)};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 3);  // nvcc's device stub (in a CUDA header, per its line table) is skipped: main launched
  EXPECT_EQ(c.runtime_api, "cudaLaunchKernel");
}

TEST(CallSite, UnknownFramesAreTakenAsUserCode) {
  std::vector<Frame> s = {frame("", ""), frame("main", "/work/app")};
  EXPECT_EQ(select_call_site(s).index, 0);
}

TEST(CallSite, NoUserFrame) {
  std::vector<Frame> s = {frame("cuMemcpyDtoHAsync_v2", "/usr/lib/libcuda.so.1")};
  EXPECT_EQ(select_call_site(s).index, -1);
  EXPECT_EQ(select_call_site({}).index, -1);
}

TEST(CallSite, RuntimeApiNames) {
  EXPECT_EQ(runtime_api_of_frame(frame("cudaStreamSynchronize", "")), "cudaStreamSynchronize");
  EXPECT_EQ(runtime_api_of_frame(frame("cudart::cudaApiMalloc(void**, unsigned long)", "")), "");
  EXPECT_EQ(runtime_api_of_frame(frame("__cudaPopCallConfiguration", "")), "");
  EXPECT_EQ(runtime_api_of_frame(frame("main", "")), "");
}

// kernel<<<...>>> as nvcc compiles it (CUDA 13, -O0): the stub calls the runtime's internal
// entry point; the stub is called by a host function named after the kernel, whose line is the
// __global__ declaration. The call site is main at the <<<...>>> line.
TEST(CallSite, ChevronLaunchSkipsStubAndKernelWrapper) {
  std::vector<Frame> s = {
      frame("", "/usr/lib/libcuda.so.1"),
      frame("__cudaLaunchKernel_helper", "/work/app"),
      frame("__cudaLaunchKernel", "/work/app", "/usr/local/cuda-13.0/targets/x86_64-linux/include/crt/host_runtime.h", 200),
      frame("__device_stub__Z5dummyx(long long)", "/work/app", "/tmp/tmpxft_1_00000000-6_app.cudafe1.stub.c", 14),
      frame("dummy(long long)", "/work/app", "/src/app.cu", 12),
      frame("main", "/work/app", "/src/app.cu", 43)};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 5);
  EXPECT_TRUE(c.chevron_launch);
  EXPECT_EQ(c.runtime_api, "cudaLaunchKernel");
}

TEST(CallSite, KernelWrapperSkippedByKernelNameWithoutStubFrame) {
  // The stub was tail-called or inlined away: the launched kernel's name identifies the wrapper.
  std::vector<Frame> s = {frame("", "/usr/lib/libcuda.so.1"),
                          frame("void reduce<float>(float*, int)", "/work/app", "/src/app.cu", 7),
                          frame("run(int)", "/work/app", "/src/app.cu", 30)};
  EXPECT_EQ(select_call_site(s).index, 1);
  CallSite c = select_call_site(s, "void reduce<float>(float*, int)");
  EXPECT_EQ(c.index, 2);
  EXPECT_TRUE(c.chevron_launch);
}

TEST(CallSite, OnlyOneKernelWrapperFrameIsSkipped) {
  std::vector<Frame> s = {frame("__device_stub__Z5dummyx(long long)", "/work/app", "/tmp/x.cudafe1.stub.c", 3),
                          frame("dummy(long long)", "/work/app", "/src/app.cu", 12),
                          frame("dummy(long long)", "/work/app", "/src/app.cu", 40),  // a second one is user code
                          frame("main", "/work/app", "/src/app.cu", 50)};
  EXPECT_EQ(select_call_site(s).index, 2);  // only the one wrapper right after the stub is skipped
}

TEST(CallSite, CudaHeadersAnywhere) {
  for (const char* file : {"/usr/local/cuda/include/cuda_runtime.h", "/opt/cuda-12.4/include/crt/host_runtime.h",
                           "/usr/local/cuda-13.0/targets/sbsa-linux/include/crt/device_functions.h",
                           "crt/host_runtime.h"}) {
    std::vector<Frame> s = {frame("cudaError cudaLaunchKernel<char>(char const*)", "/work/app", file, 10),
                            frame("helper()", "/work/app", file, 20), frame("main", "/work/app", "/src/app.cu", 9)};
    EXPECT_EQ(select_call_site(s).index, 2) << file;
  }
  std::vector<Frame> user = {frame("f()", "/work/app", "/home/me/cudalib/include/x.h", 3)};
  EXPECT_EQ(select_call_site(user).index, 0);
}

TEST(CallSite, PublicApiNames) {
  EXPECT_EQ(public_api_name("__cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(public_api_name("__cudaLaunchKernel_helper"), "cudaLaunchKernel");
  EXPECT_EQ(public_api_name("cudaMemcpyAsync"), "cudaMemcpyAsync");
  EXPECT_EQ(runtime_api_of_frame(frame("__cudaLaunchKernel_helper", "")), "cudaLaunchKernel");
  EXPECT_EQ(kernel_wrapper_of_stub(frame("__device_stub__Z5dummyx(long long)", "")), "dummy(long long)");
  EXPECT_EQ(kernel_wrapper_of_stub(frame("__device_stub__plain()", "")), "plain");
  EXPECT_EQ(kernel_wrapper_of_stub(frame("main", "")), "");
}
