// A driver-API program, as CuPy or numba would be: dlopen("libcuda.so.1") + cuGetProcAddress_v2,
// no runtime. Also pins down which exported symbol cuGetProcAddress returns for each flag.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim_test_support.h"

using namespace aw_sim_test;

namespace {

class DriverApi : public ::testing::Test {
 protected:
  Driver drv;
  CUcontext ctx = nullptr;
  void SetUp() override {
    ASSERT_NE(drv.get_proc, nullptr) << "libcuda.so.1 not found: is LD_LIBRARY_PATH the simulator's?";
    auto init = drv.get<decltype(&cuInit)>("cuInit");
    auto device_get = drv.get<decltype(&cuDeviceGet)>("cuDeviceGet");
    auto retain = drv.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    auto set_current = drv.get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
    ASSERT_EQ(init(0), CUDA_SUCCESS);
    CUdevice dev;
    ASSERT_EQ(device_get(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(retain(&ctx, dev), CUDA_SUCCESS);
    ASSERT_EQ(set_current(ctx), CUDA_SUCCESS);
  }
};

}  // namespace

TEST_F(DriverApi, ProcAddressReturnsTheExactlyNamedExport) {
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(drv.symbol_for("cuMemcpyHtoDAsync", 0), "cuMemcpyHtoDAsync_v2");
  EXPECT_EQ(drv.symbol_for("cuMemcpyHtoDAsync", ptds), "cuMemcpyHtoDAsync_v2_ptsz");
  EXPECT_EQ(drv.symbol_for("cuMemcpyDtoHAsync", ptds), "cuMemcpyDtoHAsync_v2_ptsz");
  EXPECT_EQ(drv.symbol_for("cuMemcpyAsync", ptds), "cuMemcpyAsync_ptsz");
  EXPECT_EQ(drv.symbol_for("cuMemcpyHtoD", 0), "cuMemcpyHtoD_v2");
  EXPECT_EQ(drv.symbol_for("cuMemcpyHtoD", ptds), "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(drv.symbol_for("cuMemsetD8", ptds), "cuMemsetD8_v2_ptds");
  EXPECT_EQ(drv.symbol_for("cuMemsetD8Async", ptds), "cuMemsetD8Async_ptsz");
  EXPECT_EQ(drv.symbol_for("cuLaunchKernel", 0), "cuLaunchKernel");
  EXPECT_EQ(drv.symbol_for("cuLaunchKernel", ptds), "cuLaunchKernel_ptsz");
  EXPECT_EQ(drv.symbol_for("cuStreamSynchronize", ptds), "cuStreamSynchronize_ptsz");
  EXPECT_EQ(drv.symbol_for("cuStreamBeginCapture", ptds), "cuStreamBeginCapture_v2_ptsz");
  EXPECT_EQ(drv.symbol_for("cuMemAlloc", ptds), "cuMemAlloc_v2");  // no per-thread variant
  EXPECT_EQ(drv.symbol_for("cuStreamDestroy", 0), "cuStreamDestroy_v2");
  EXPECT_EQ(drv.symbol_for("cuMemHostRegister", 0), "cuMemHostRegister_v2");
  EXPECT_EQ(drv.symbol_for("cuGetProcAddress", 0), "cuGetProcAddress_v2");
  void* fn = nullptr;
  EXPECT_EQ(drv.get_proc("cuGetProcAddress", &fn, 11030, 0, nullptr), CUDA_SUCCESS);
  Dl_info info{};
  ASSERT_TRUE(dladdr(fn, &info));
  EXPECT_STREQ(info.dli_sname, "cuGetProcAddress");
}

TEST_F(DriverApi, UnknownEntryPointsFailLoudly) {
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  testing::internal::CaptureStderr();
  EXPECT_EQ(drv.get_proc("cuTexObjectCreate", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_NE(err.find("asyncwatch-sim: cuTexObjectCreate is not supported by the simulator"), std::string::npos);
}

TEST_F(DriverApi, PageableDtoHAsyncWaitsForTheSleepKernel) {
  auto mem_alloc = drv.get<decltype(&cuMemAlloc_v2)>("cuMemAlloc");
  auto mem_alloc_host = drv.get<decltype(&cuMemAllocHost_v2)>("cuMemAllocHost");
  auto memset_d8 = drv.get<decltype(&cuMemsetD8_v2)>("cuMemsetD8");
  auto module_load = drv.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
  auto get_function = drv.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  auto func_name = drv.get<decltype(&cuFuncGetName)>("cuFuncGetName");
  auto stream_create = drv.get<decltype(&cuStreamCreate)>("cuStreamCreate");
  auto launch = drv.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  auto dtoh_async = drv.get<decltype(&cuMemcpyDtoHAsync_v2)>("cuMemcpyDtoHAsync");
  auto sync = drv.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
  auto ctx_sync = drv.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");

  const size_t n = 1 << 20;
  CUdeviceptr dev;
  ASSERT_EQ(mem_alloc(&dev, n), CUDA_SUCCESS);
  ASSERT_EQ(memset_d8(dev, 0x5a, n), CUDA_SUCCESS);
  ASSERT_EQ(ctx_sync(), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(mem_alloc_host(&pinned, n), CUDA_SUCCESS);
  const char image[] = "any image: the simulator runs no device code";
  CUmodule mod;
  ASSERT_EQ(module_load(&mod, image), CUDA_SUCCESS);
  CUfunction sleeper;
  ASSERT_EQ(get_function(&sleeper, mod, "_Z12sleep_cyclesx"), CUDA_SUCCESS);
  const char* name = nullptr;
  ASSERT_EQ(func_name(&name, sleeper), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z12sleep_cyclesx");
  CUstream s;
  ASSERT_EQ(stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  long long cycles = cycles_for(0.01);
  void* params[] = {&cycles};
  ASSERT_EQ(launch(sleeper, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);  // pays lazy loading
  ASSERT_EQ(sync(s), CUDA_SUCCESS);

  const double kernel_s = 0.2;
  cycles = cycles_for(kernel_s);
  ASSERT_EQ(launch(sleeper, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  std::vector<char> pageable(n, 0);
  double pinned_t = time_call([&] { dtoh_async(pinned, dev, n, s); });
  double pageable_t = time_call([&] { dtoh_async(pageable.data(), dev, n, s); });
  EXPECT_LT(pinned_t, 0.01 * kernel_s);
  EXPECT_GE(pageable_t, 0.9 * kernel_s);
  EXPECT_EQ(pageable[12345], 0x5a);
  EXPECT_EQ(static_cast<char*>(pinned)[12345], 0x5a);
}

TEST_F(DriverApi, StreamHandlesAreDecoded) {
  auto query = drv.get<decltype(&cuStreamQuery)>("cuStreamQuery");
  EXPECT_EQ(query(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(query(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(query(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(query(reinterpret_cast<CUstream>(0x1234)), CUDA_ERROR_INVALID_HANDLE);
}
