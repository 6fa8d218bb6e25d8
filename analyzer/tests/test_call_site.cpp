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
