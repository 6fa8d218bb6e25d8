#include "symbols/call_site.h"

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
                          frame("main", "/work/seed", "/src/seed.cu", 52),
                          frame("__libc_start_main", "/lib/libc.so.6")};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
}

TEST(CallSite, SkipsTheStaticRuntimeInsideTheExecutableAndNamesItsApi) {
  std::vector<Frame> s = {frame("", "/usr/lib/libcuda.so.1"),
                          frame("cudart::driverHelper::memcpyAsyncDispatch(void*, void const*)", "/work/seed"),
                          frame("cudart::cudaApiMemcpyAsync(void*, void const*, unsigned long)", "/work/seed"),
                          frame("cudaMemcpyAsync_ptsz", "/work/seed"),
                          frame("__cudart1234", "/work/seed"),
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

TEST(CallSite, FramesOutsideEveryModuleAreSkipped) {
  // JIT-compiled code (no module): the user's frame is further out; alone, it is the fallback.
  std::vector<Frame> s = {frame("", ""), frame("main", "/work/app", "/src/app.cu", 9)};
  EXPECT_EQ(select_call_site(s).index, 1);
  std::vector<Frame> alone = {frame("", "/usr/lib/libcuda.so.1"), frame("", "")};
  CallSite c = select_call_site(alone);
  EXPECT_EQ(c.index, 1);
  EXPECT_FALSE(c.user);
  Frame jit = frame("", "");
  jit.address = 0x7f0012340000;
  EXPECT_EQ(frame_name_text(jit), "(no module, 0x7f0012340000)");
  // an unsymbolized frame of a known module stays the user's (a stripped program)
  EXPECT_EQ(select_call_site({frame("", "/work/app"), frame("main", "/work/app", "/src/app.cu", 9)}, {},
                             CallSitePolicy{"/work/app", {}})
                .index,
            0);
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
      frame("__cudaLaunchKernel", "/work/app", "/usr/local/cuda-13.0/targets/x86_64-linux/include/crt/host_runtime.h",
            200),
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
  for (const char* file :
       {"/usr/local/cuda/include/cuda_runtime.h", "/opt/cuda-12.4/include/crt/host_runtime.h",
        "/usr/local/cuda-13.0/targets/sbsa-linux/include/crt/device_functions.h", "crt/host_runtime.h"}) {
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

// ---- Call sites on programs nobody here wrote -----------------------------------------

namespace {
Frame inl(const char* function, const char* module, const char* file, int line) {
  Frame f = frame(function, module, file, line);
  f.inlined = true;
  return f;
}
}  // namespace

TEST(CallSite, ApiNamesAreExactNotAPrefix) {
  for (const char* api : {"cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaLaunchKernel", "cudaStreamSynchronize",
                          "cudaGraphLaunch", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptds", "cuLaunchKernel",
                          "cuGetProcAddress_v2", "__cudaLaunchKernel", "__cudaPushCallConfiguration",
                          "cudaThreadSynchronize" /* removed in CUDA 13, kept for older builds */})
    EXPECT_TRUE(is_cuda_api_name(api)) << api;
  for (const char* user : {"cudaGraphsManual", "cudaSomething", "cudaMemcpyAsyncWrapper", "cuda", "cuBLASHelper",
                           "cudaMemcpyAsync_", "my::cudaMemcpyAsync", "CudaMemcpyAsync"})
    EXPECT_FALSE(is_cuda_api_name(user)) << user;
  ASSERT_GT(cuda_api_name_count(), 900u);  // CUDA 13.0: ~1100 names
  for (size_t i = 1; i < cuda_api_name_count(); ++i)
    ASSERT_LT(std::string(cuda_api_name(i - 1)), std::string(cuda_api_name(i))) << "the table must stay sorted";
}

// A user function named cudaGraphsManual() (cuda + an upper-case letter) is the user's frame,
// with the shared runtime and with the static runtime inside the executable; the API is the
// runtime's, never the user function's name.
TEST(CallSite, UserFunctionNamedCudaSomethingIsUserCode) {
  std::vector<Frame> shared = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                               frame("cudaMemcpyAsync", "/usr/local/cuda/lib64/libcudart.so.13"),
                               frame("cudaGraphsManual()", "/work/app", "/src/app.cu", 30),
                               frame("main", "/work/app", "/src/app.cu", 50)};
  CallSite c = select_call_site(shared);
  EXPECT_EQ(c.index, 2);
  EXPECT_TRUE(c.user);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
  std::vector<Frame> stat = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                             frame("libcudart_static_4d8b33a106dceb3c07a56e26de61f545e0b2ed0b", "/work/app"),
                             frame("cudaMemcpyAsync", "/work/app"),
                             frame("cudaGraphsManual(int)", "/work/app", "/src/app.cu", 30),
                             frame("main", "/work/app", "/src/app.cu", 50)};
  c = select_call_site(stat, {}, CallSitePolicy{"/work/app", {}});
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
  EXPECT_EQ(runtime_api_of_frame(frame("cudaGraphsManual()", "")), "");
  EXPECT_EQ(classify_frame(frame("cudaGraphsManual()", "/work/app", "/src/app.cu", 30)), FrameKind::User);
}

// nvcc -g -O2: the kernel's host wrapper is inlined into main; the return address's frames are
// the wrapper (at the __global__ line) and main (at the <<<...>>> line).
TEST(CallSite, InlinedKernelWrapperGivesTheLaunchLine) {
  std::vector<Frame> s = {
      frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
      frame("__cudaLaunchKernel", "/usr/local/cuda/lib64/libcudart.so.13"),
      frame("__device_stub__Z1kPii(int*, int)", "/work/app", "/tmp/tmpxft_1-6_a.cudafe1.stub.c", 13),
      inl("k(int*, int)", "/work/app", "/src/a.cu", 3), frame("main", "/work/app", "/src/a.cu", 12)};
  for (const std::string& kernel : {std::string(), std::string("k(int*, int)")}) {
    CallSite c = select_call_site(s, kernel);
    EXPECT_EQ(c.index, 4) << kernel;
    EXPECT_TRUE(c.chevron_launch);
    EXPECT_EQ(c.runtime_api, "cudaLaunchKernel");
  }
  // The stub inlined too (static runtime, LTO): one return address, four frames.
  std::vector<Frame> t = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("libcudart_static_0123abcd", "/work/app"),
                          frame("__cudaLaunchKernel", "/work/app"),
                          inl("__cudaLaunchKernel_helper", "/work/app",
                              "/usr/local/cuda/targets/x86_64-linux/include/crt/host_runtime.h", 300),
                          inl("__device_stub__Z1kPii(int*, int)", "/work/app", "/tmp/x.cudafe1.stub.c", 13),
                          inl("k(int*, int)", "/work/app", "/src/a.cu", 3),
                          frame("main", "/work/app", "/src/a.cu", 19)};
  EXPECT_EQ(select_call_site(t, "k(int*, int)", CallSitePolicy{"/work/app", {}}).index, 6);
}

// The wrapper inside a function that is itself inlined: the site is that function's <<<...>>>
// line, not its caller's call of it.
TEST(CallSite, KernelWrapperInsideAnInlinedFunction) {
  std::vector<Frame> s = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("__cudaLaunchKernel", "/usr/local/cuda/lib64/libcudart.so.13"),
                          frame("__device_stub__Z1kPii(int*, int)", "/work/app", "/tmp/x.cudafe1.stub.c", 13),
                          inl("k(int*, int)", "/work/app", "/src/a.cu", 3),
                          inl("launch_helper(int*)", "/work/app", "/src/a.cu", 7),
                          frame("main", "/work/app", "/src/a.cu", 14)};
  CallSite c = select_call_site(s, "k(int*, int)");
  EXPECT_EQ(c.index, 4);
  EXPECT_TRUE(c.chevron_launch);
}

// A copy made inside a vendor library: the site is the user's frame beneath, via the library's
// function that the user called.
TEST(CallSite, VendorLibraryFramesAreSkippedAndNamedVia) {
  std::vector<Frame> s = {
      frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), frame("", "/usr/local/cuda-13.0/lib64/libcusparse.so.12"),
      frame("cusparseSpMV", "/usr/local/cuda-13.0/lib64/libcusparse.so.12"),
      frame("main", "/work/cg", "/src/cg.cu", 253), frame("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6")};
  CallSite c = select_call_site(s, {}, CallSitePolicy{"/work/cg", {}});
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.via, 2);
  EXPECT_TRUE(c.user);
  EXPECT_EQ(frame_name_text(s[2]), "cusparseSpMV (libcusparse.so.12)");
  // NVIDIA's libraries by name wherever they are; Python packages; the system's directories.
  for (const char* m : {"/opt/conda/envs/x/lib/libcublasLt.so.13",
                        "/home/u/.venv/lib/python3.12/site-packages/"
                        "torch/lib/libtorch_cuda.so",
                        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/python3.12",
                        "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13"})
    EXPECT_EQ(classify_frame(frame("f", m, "/build/f.cpp", 1)), FrameKind::Library) << m;
  for (const char* m : {"/home/u/cuda/app", "/work/cuda-samples/bin/vectorAdd", "/usr/local/bin/app"})
    EXPECT_EQ(classify_frame(frame("f", m, "/build/f.cpp", 1)), FrameKind::User) << m;
}

// A shared library built without debug information, called from main: its frames have no source
// line, so they are library code; the program's own frames are user code even when it is stripped.
TEST(CallSite, SharedLibraryWithoutDebugInfoIsLibraryCode) {
  CallSitePolicy policy{"/work/build/test_apps/app", {}};
  std::vector<Frame> s = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("cudaMemcpyAsync", "/work/build/lib/asyncwatch/sim/libcudart.so.13"),
                          frame("aw_nodebug_copy_back", "/work/build/test_apps/libaw_nodebug.so"),
                          frame("main", "/work/build/test_apps/app", "/src/app.cu", 40)};
  CallSite c = select_call_site(s, {}, policy);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.via, 2);
  EXPECT_EQ(c.runtime_api, "cudaMemcpyAsync");
  std::vector<Frame> stripped = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                                 frame("cudaMemcpyAsync", "/usr/local/cuda/lib64/libcudart.so.13"),
                                 frame("main", "/work/build/test_apps/app")};
  c = select_call_site(stripped, {}, policy);
  EXPECT_EQ(c.index, 2);
  EXPECT_TRUE(c.user);
  // --user-code: the library is the user's after all; "!" makes code a library's.
  policy.user_code = {"libaw_nodebug.so"};
  c = select_call_site(s, {}, policy);
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.via, -1);
  policy.user_code = {"*/test_apps/*", "!app.cu"};
  EXPECT_EQ(classify_frame(s[3], policy), FrameKind::Library);
  EXPECT_EQ(classify_frame(s[2], policy), FrameKind::User);
}

// No frame is the user's (a Python program: interpreter and framework libraries only): the
// first frame outside the runtime, not marked as user code.
TEST(CallSite, NoUserFrameFallsBackToTheFirstLibraryFrame) {
  std::vector<Frame> s = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("cudaMemcpyAsync", "/site-packages/torch/lib/libcudart.so.13"),
                          frame("at::native::copy_kernel_cuda(at::TensorIterator&, bool)",
                                "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"),
                          frame("_PyEval_EvalFrameDefault", "/usr/bin/python3.12")};
  CallSite c = select_call_site(s, {}, CallSitePolicy{"/usr/bin/python3.12", {}});
  EXPECT_EQ(c.index, 2);
  EXPECT_FALSE(c.user);
  EXPECT_EQ(c.via, -1);
}

// Inline code of the toolkit's other headers (thrust, cub) is library code: the call site is
// the user's call of thrust, via the outermost thrust frame.
TEST(CallSite, ThrustHeadersAreLibraryCode) {
  std::vector<Frame> s = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("cudaMemcpyAsync", "/usr/local/cuda/lib64/libcudart.so.13"),
                          inl("thrust::cuda_cub::trivial_copy_n<...>", "/work/app",
                              "/usr/local/cuda/include/thrust/system/cuda/detail/copy.h", 90),
                          frame("thrust::copy<...>(...)", "/work/app", "/usr/local/cuda/include/thrust/copy.h", 40),
                          frame("main", "/work/app", "/src/app.cu", 12)};
  CallSite c = select_call_site(s, {}, CallSitePolicy{"/work/app", {}});
  EXPECT_EQ(c.index, 4);
  EXPECT_EQ(c.via, 3);
}

// Unsymbolized sites are told apart by module and offset, not by the absolute address: two
// processes (ASLR, fork) with the same site give the same key.
TEST(CallSite, UnsymbolizedSitesAreKeyedByModuleAndOffset) {
  Frame a = frame("", "/work/app");
  a.address = 0x55550000401234;
  a.offset = 0x1234;
  Frame b = a;
  b.address = 0x7f0000401234;
  EXPECT_EQ(call_site_key(a, Frame{}), call_site_key(b, Frame{}));
  Frame c = a;
  c.offset = 0x1240;
  EXPECT_NE(call_site_key(a, Frame{}), call_site_key(c, Frame{}));
  // a named function without a line: still by offset (two calls in one stripped main differ)
  a.function = b.function = c.function = "main";
  EXPECT_EQ(call_site_key(a, Frame{}), call_site_key(b, Frame{}));
  EXPECT_NE(call_site_key(a, Frame{}), call_site_key(c, Frame{}));
  // via: by name, whatever the offset inside the library function
  Frame v1 = frame("cusparseSpMV", "/usr/lib/libcusparse.so.12");
  v1.offset = 0x100;
  Frame v2 = v1;
  v2.offset = 0x200;
  Frame site = frame("main", "/work/cg", "/src/cg.cu", 253);
  EXPECT_EQ(call_site_key(site, v1), call_site_key(site, v2));
  EXPECT_NE(call_site_key(site, v1), call_site_key(site, Frame{}));
}

// DWARF's line 0 (calls of several lines merged into one instruction): each call instruction is a
// site of its own, as without a line; a real line keys by file and line.
TEST(CallSite, LineZeroSitesAreKeyedByOffset) {
  Frame a = frame("JacobiMethodGpu", "/work/jacobi", "/src/jacobi.cu", 0);
  a.offset = 0x5418;
  Frame b = a;
  b.offset = 0x54d8;
  EXPECT_NE(call_site_key(a, Frame{}), call_site_key(b, Frame{}));
  a.line = b.line = 366;
  EXPECT_EQ(call_site_key(a, Frame{}), call_site_key(b, Frame{}));
}

// A template kernel at -O2 (mergeSort): the stub, nvcc's __wrapper__device_stub_ and the kernel's
// wrapper are inline frames named by DWARF, "mergeSortSharedKernel<1>" for the kernel
// "void mergeSortSharedKernel<1u>(unsigned int*, ...)"; the launch's site is the inlined caller.
TEST(CallSite, TemplateKernelWrapperNamedByDwarf) {
  std::vector<Frame> s = {
      frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
      frame("", "/usr/local/cuda/lib64/libcudart.so.13"),
      frame("__device_stub__Z21mergeSortSharedKernelILj1EEvPjS0_S0_S0_j(unsigned int*, unsigned int*, unsigned int*, "
            "unsigned int*, unsigned int)",
            "/work/ms", "/tmp/x.cudafe1.stub.c", 19),
      inl("__wrapper__device_stub_mergeSortSharedKernel<1>", "/work/ms", "/tmp/x.cudafe1.stub.c", 20),
      inl("mergeSortSharedKernel<1>", "/work/ms", "/src/mergeSort.cu", 110),
      inl("mergeSortShared", "/work/ms", "/src/mergeSort.cu", 170),
      frame("mergeSort", "/work/ms", "/src/mergeSort.cu", 502)};
  const std::string kernel =
      "void mergeSortSharedKernel<1u>(unsigned int*, unsigned int*, unsigned int*, unsigned int*, unsigned int)";
  EXPECT_EQ(select_call_site(s, kernel).index, 5);
  EXPECT_EQ(select_call_site(s).index, 5);  // from the stub's name alone
  EXPECT_TRUE(is_launch_stub_frame(s[3]));
  // not right after a stub, a different template argument list is another function
  std::vector<Frame> t = {frame("", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                          frame("mergeSortSharedKernel<2>", "/work/ms", "/src/mergeSort.cu", 120),
                          frame("main", "/work/ms", "/src/main.cpp", 50)};
  EXPECT_EQ(select_call_site(t, kernel).index, 1);
}

// The library function the user's call instruction called (Symbolizer::called_function) against the
// library frame adjacent to the user's frame: a tail call leaves no frame of the former.
TEST(CallSite, ViaIsTheFunctionTheUsersCallInstructionCalled) {
  Frame site = frame("main", "/work/simpleCUFFT", "/src/simpleCUFFT.cu", 132);
  site.address = 0x401234;
  Frame lib = frame("cufftXtExec", "/usr/local/cuda/lib64/libcufft.so.12");
  lib.address = 0x7f0000001000;
  // cufftExecC2C jumped to cufftXtExec: the PLT slot's symbol wins, in the module that defines it.
  Frame called = frame("cufftExecC2C", "/usr/local/cuda/lib64/libcufft.so.12");
  called.address = 0x7f0000000800;
  Frame via = via_function(site, lib, called);
  EXPECT_EQ(via.function, "cufftExecC2C");
  EXPECT_EQ(via.module, "/usr/local/cuda/lib64/libcufft.so.12");
  EXPECT_EQ(frame_name_text(via), "cufftExecC2C (libcufft.so.12)");
  // The same function: the frame stays.
  EXPECT_EQ(via_function(site, lib, lib).address, lib.address);
  // Nothing decoded (another form of call, a module that cannot be read): the frame.
  EXPECT_EQ(via_function(site, lib, Frame{}).function, "cufftXtExec");
  // No readable module defines the symbol (the library is on the GPU machine only): the name
  // wins, the module is the frame's.
  Frame unknown_module = frame("cufftExecC2C", "");
  via = via_function(site, lib, unknown_module);
  EXPECT_EQ(via.function, "cufftExecC2C");
  EXPECT_EQ(via.module, lib.module);
  EXPECT_EQ(via.address, lib.address);
  // Defined in another library (a wrapper without debug information that jumped into cuFFT): that one.
  via = via_function(site, lib, frame("wrap_fft", "/opt/vendor/lib/libwrap.so"));
  EXPECT_EQ(frame_name_text(via), "wrap_fft (libwrap.so)");
}

TEST(CallSite, ViaKeepsTheFrameWhenTheCalledFunctionIsNotLibraryCode) {
  Frame site = frame("main", "/work/app", "/src/app.cu", 20);
  site.address = 0x401000;
  Frame lib = frame("cufftXtExec", "/usr/local/cuda/lib64/libcufft.so.12");
  lib.address = 0x7f0000001000;
  // The user's own function (with a source line, in the program) jumped into the library.
  EXPECT_EQ(via_function(site, lib, frame("do_fft(float*)", "/work/app", "/src/app.cu", 8)).function, "cufftXtExec");
  // A CUDA runtime function.
  EXPECT_EQ(via_function(site, lib, frame("cudaMemcpyAsync", "/usr/local/cuda/lib64/libcudart.so.13")).function,
            "cufftXtExec");
  // ... unless --user-code says the user's helper is library code.
  CallSitePolicy policy;
  policy.user_code = {"!*/src/fft_helpers.cpp"};
  EXPECT_EQ(via_function(site, lib, frame("do_fft(float*)", "/work/app", "/src/fft_helpers.cpp", 8), policy).function,
            "do_fft(float*)");
  // Library code inlined into the user's function (same return address): its call is the inlined code's.
  Frame inlined = frame("thrust::copy<...>", "/work/app", "/usr/local/cuda/include/thrust/copy.h", 40);
  inlined.address = site.address;
  inlined.inlined = true;
  EXPECT_EQ(via_function(site, inlined, frame("cudaMemcpyAsync", "")).function, "thrust::copy<...>");
}

// ---- Python frames ----------------------------------------------------------------
namespace {
Frame py(const char* function, const char* file, int line) {
  Frame f;
  f.origin = FrameOrigin::Python;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}
Frame interp(const char* function, const char* module) {
  Frame f = frame(function, module, "Python/ceval.c", 4769);
  f.origin = FrameOrigin::Interpreter;
  return f;
}
}  // namespace

TEST(CallSite, PythonLineOutsideTheFrameworksIsTheSite) {
  const char* sp = "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
  std::vector<Frame> s = {
      frame("cudaMemcpyAsync", "/opt/venv/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13"),
      frame("at::native::copy_kernel_cuda", sp),
      frame("THPVariable_to", "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so"),
      py("Module._call_impl", "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750),
      py("Trainer.step", "/home/me/train.py", 115),
      py("main", "/home/me/train.py", 200),
      py("run", "/usr/lib/python3.12/threading.py", 1010),
      interp("_PyEval_EvalFrameDefault", "/usr/bin/python3.12"),
      frame("__libc_start_main", "/lib/libc.so.6")};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 4);
  EXPECT_TRUE(c.user);
  EXPECT_EQ(c.via, 3);                                  // the library's Python frame the user's line called
  EXPECT_EQ(classify_frame(s[6]), FrameKind::Library);  // the standard library
  EXPECT_EQ(classify_frame(s[7]), FrameKind::Library);  // the interpreter's own frames
  // A framework's package outside site-packages (a source checkout) is library code too; an
  // override makes an installed package of one's own user code.
  EXPECT_EQ(classify_frame(py("f", "/src/pytorch/torch/_tensor.py", 1)), FrameKind::Library);
  EXPECT_EQ(classify_frame(py("f", "<frozen importlib._bootstrap>", 1)), FrameKind::Library);
  // A framework's module with a relative path (imported through a relative sys.path entry, or
  // compiled without its source): library code; a user's module that only starts like one is not.
  EXPECT_EQ(classify_frame(py("_unique_impl", "torch/functional.py", 1)), FrameKind::Library);
  EXPECT_EQ(classify_frame(py("Tensor.unique", "torch/_tensor.py", 1)), FrameKind::Library);
  EXPECT_EQ(classify_frame(py("f", "torch_helpers.py", 1)), FrameKind::User);
  {
    std::vector<Frame> u = {frame("cudaStreamSynchronize", "/sim/libcudart.so.13"),
                            py("_unique_impl", "torch/functional.py", 991), py("fn", "torch/_jit_internal.py", 627),
                            py("Tensor.unique", "torch/_tensor.py", 1000), py("step", "train.py", 12)};
    CallSite cu = select_call_site(u);
    EXPECT_EQ(cu.index, 4);  // torch.unique's sync at the user's line, via torch's wrapper
    EXPECT_TRUE(cu.user);
    EXPECT_EQ(cu.via, 3);
  }
  CallSitePolicy p;
  p.user_code = {"*/site-packages/torch/nn/*"};
  EXPECT_EQ(select_call_site(s, {}, p).index, 3);
}

TEST(CallSite, CtypesExtensionModulesAreLibraryCode) {
  std::vector<Frame> s = {
      frame("cudaMemcpyAsync", "/sim/libcudart.so.13"), frame("ffi_call", "/lib/x86_64-linux-gnu/libffi.so.8"),
      frame("_ctypes_callproc", "/root/.pyenv/versions/3.11.7/lib/python3.11/lib-dynload/_ctypes.so",
            "Modules/_ctypes/callproc.c", 1262),
      py("copies", "lines_app.py", 17)};
  EXPECT_EQ(select_call_site(s).index, 3);
}

// Code a framework generated at run time (torch.compile's inductor cache, Triton's
// launchers, torch.fx's forward) is not the user's: the call site is the user's line that called
// the compiled model.
TEST(CallSite, GeneratedCodeIsNotTheUsersLine) {
  const char* cache = "/tmp/torchinductor_root/sy/csy4y3jfdtxvnidkkmrpkvstvmfdrbgdqf3wk6zrj4w5h3dyqwlf.py";
  std::vector<Frame> s = {
      frame("cuLaunchKernel", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
      frame("_launch", "/root/.triton/cache/Xk3q/__triton_launcher.cpython-312-x86_64-linux-gnu.so"),
      py("CachingAutotuner.run", "/v/lib/python3.12/site-packages/torch/_inductor/runtime/triton_heuristics.py", 900),
      py("call", cache, 122),
      py("Runner.call", cache, 130),
      py("forward", "<eval_with_key>.3", 5),
      py("OptimizedModule.__call__", "/v/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", 400),
      py("train_step", "/home/me/train.py", 42),
      py("main", "/home/me/train.py", 80)};
  CallSite c = select_call_site(s);
  EXPECT_EQ(c.index, 7);
  EXPECT_TRUE(c.user);
  EXPECT_EQ(classify_frame(s[1]), FrameKind::Library);  // a Triton launcher in the cache
  EXPECT_EQ(classify_frame(s[3]), FrameKind::Library);
  EXPECT_EQ(classify_frame(s[5]), FrameKind::Library);
  // An override still decides (a project that wants to see the generated code as its own).
  CallSitePolicy p;
  p.user_code = {"/tmp/torchinductor_*"};
  EXPECT_EQ(select_call_site(s, {}, p).index, 3);
  // A user's directory merely named like a framework's is not generated code.
  EXPECT_EQ(classify_frame(py("f", "/home/me/inductor/model.py", 1)), FrameKind::User);
  // A function compiled from a string (Triton 3's kernel launcher, "<string>":5 `launcher`) is
  // generated code; the module level of such code (`python -c`) is the user's.
  std::vector<Frame> triton = {frame("cuLaunchKernel", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                               py("launcher", "<string>", 5),
                               py("JITFunction.run", "/v/lib/python3.12/site-packages/triton/runtime/jit.py", 700),
                               py("train_step", "/home/me/train.py", 42)};
  EXPECT_EQ(select_call_site(triton).index, 3);
  EXPECT_EQ(classify_frame(py("<module>", "<string>", 1)), FrameKind::User);
}

TEST(CallSite, FrameworkPhasesFromPythonFrames) {
  std::vector<Frame> jax = {frame("cuMemcpyDtoHAsync_v2", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
                            py("backend_compile", "/v/lib/python3.12/site-packages/jax/_src/compiler.py", 300),
                            py("step", "/home/me/train.py", 12)};
  EXPECT_STREQ(framework_phase(jax), "JAX compilation (XLA autotuning)");
  std::vector<Frame> triton = {py("Autotuner._bench", "/v/lib/python3.12/site-packages/triton/runtime/autotuner.py", 9),
                               py("step", "/home/me/train.py", 12)};
  EXPECT_STREQ(framework_phase(triton), "Triton autotuning");
  std::vector<Frame> steady = {py("Autotuner.run", "/v/lib/python3.12/site-packages/triton/runtime/autotuner.py", 9),
                               py("step", "/home/me/train.py", 12)};
  EXPECT_EQ(framework_phase(steady), nullptr);  // a tuned kernel's launch is the steady state
  EXPECT_EQ(framework_phase({frame("main", "/work/app", "app.cu", 3)}), nullptr);
  // XLA's autotuner on its own thread pool, no Python frames (the redzone check's copies).
  std::vector<Frame> xla = {
      frame("stream_executor::gpu::CudaStream::Memcpy(void*, stream_executor::DeviceAddressBase const&, unsigned long)",
            "/v/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"),
      frame("stream_executor::RedzoneAllocator::CheckRedzones() const", "/v/xla_cuda_plugin.so"),
      frame("xla::gpu::GpuProfiler::CheckInputBuffers(xla::InputBuffers&)", "/v/xla_cuda_plugin.so"),
      frame("xla::Autotuner::GetTunedConfig(xla::HloInstruction const*, int) const", "/v/xla_cuda_plugin.so")};
  EXPECT_STREQ(framework_phase(xla), "XLA autotuning");
}

TEST(CallSite, FrameworkPhaseOfAKernelWaitedFor) {
  EXPECT_STREQ(framework_phase_of_kernel("stream_executor::gpu::RedzoneAllocatorKernelImpl"), "XLA autotuning");
  EXPECT_STREQ(framework_phase_of_kernel("stream_executor::gpu::xla_fp_comparison<float>"), "XLA autotuning");
  EXPECT_EQ(framework_phase_of_kernel("stream_executor::gpu"), nullptr);
  EXPECT_EQ(framework_phase_of_kernel("fusion_12"), nullptr);
  EXPECT_EQ(framework_phase_of_kernel(""), nullptr);
}
