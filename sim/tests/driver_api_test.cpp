// A driver-API program, as CuPy or numba would be: dlopen("libcuda.so.1") + cuGetProcAddress_v2,
// no runtime. Also pins down which exported symbol cuGetProcAddress returns for each flag.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "../driver/toolkit_entry_points.h"
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

// Names whose CUDA 13 variant changed (cudaTypedefs.h PFN_*_v13000; measured on the H200 for
// cuCtxSynchronize): version >= 13000 gets the _v2 with a context argument, older versions the v1.
static std::string symbol_at(const Driver& drv, const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (drv.get_proc(name, &fn, version, flags, &status) != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS)
    return "";
  Dl_info info{};
  return fn && dladdr(fn, &info) && info.dli_sname ? info.dli_sname : "";
}

TEST_F(DriverApi, Cuda13VersionedNamesFollowTheRequestedVersion) {
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  for (cuuint64_t flags : {cuuint64_t{0}, ptds}) {
    EXPECT_EQ(symbol_at(drv, "cuCtxSynchronize", 13000, flags), "cuCtxSynchronize_v2");
    EXPECT_EQ(symbol_at(drv, "cuCtxSynchronize", 13010, flags), "cuCtxSynchronize_v2");
    EXPECT_EQ(symbol_at(drv, "cuCtxSynchronize", 12090, flags), "cuCtxSynchronize");
    EXPECT_EQ(symbol_at(drv, "cuCtxSynchronize", 2000, flags), "cuCtxSynchronize");
    EXPECT_EQ(symbol_at(drv, "cuCtxGetDevice", 13000, flags), "cuCtxGetDevice_v2");
    EXPECT_EQ(symbol_at(drv, "cuCtxGetDevice", 12080, flags), "cuCtxGetDevice");
    // Already versioned before 13.0; 13.0 keeps the newest.
    EXPECT_EQ(symbol_at(drv, "cuEventElapsedTime", 13000, flags), "cuEventElapsedTime_v2");
    EXPECT_EQ(symbol_at(drv, "cuEventElapsedTime", 12000, flags), "cuEventElapsedTime");
    EXPECT_EQ(symbol_at(drv, "cuCtxCreate", 13000, flags), "cuCtxCreate_v4");
    EXPECT_EQ(symbol_at(drv, "cuCtxCreate", 12000, flags), "cuCtxCreate_v2");
  }
  EXPECT_EQ(symbol_at(drv, "cuStreamGetCaptureInfo", 13000, 0), "cuStreamGetCaptureInfo_v3");
  EXPECT_EQ(symbol_at(drv, "cuStreamGetCaptureInfo", 13000, ptds), "cuStreamGetCaptureInfo_v3_ptsz");
  // Before 12.3 the older signatures (v1/v2) would be due; the simulator lacks them: not sufficient.
  EXPECT_EQ(symbol_at(drv, "cuStreamGetCaptureInfo", 12020, 0), "");
}

// The graph, prefetch and batch names whose signature changed (cudaTypedefs.h PFN_*_vNNNNN): what a
// CUDA 13 runtime asks for at 13000 gets the newest variant; older requests the one of their time.
TEST_F(DriverApi, NewerApisFollowTheRequestedVersion) {
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(symbol_at(drv, "cuGraphInstantiate", 13000, 0), "cuGraphInstantiateWithFlags");
  EXPECT_EQ(symbol_at(drv, "cuGraphInstantiate", 11000, 0), "cuGraphInstantiate_v2");
  EXPECT_EQ(symbol_at(drv, "cuGraphInstantiate", 10000, 0), "cuGraphInstantiate");
  EXPECT_EQ(symbol_at(drv, "cuGraphExecUpdate", 13000, 0), "cuGraphExecUpdate_v2");
  EXPECT_EQ(symbol_at(drv, "cuGraphExecUpdate", 11000, 0), "cuGraphExecUpdate");
  EXPECT_EQ(symbol_at(drv, "cuGraphAddKernelNode", 13000, 0), "cuGraphAddKernelNode_v2");
  EXPECT_EQ(symbol_at(drv, "cuGraphAddKernelNode", 11000, 0), "cuGraphAddKernelNode");
  EXPECT_EQ(symbol_at(drv, "cuGraphAddDependencies", 13000, 0), "cuGraphAddDependencies_v2");
  EXPECT_EQ(symbol_at(drv, "cuGraphAddDependencies", 12000, 0), "cuGraphAddDependencies");
  EXPECT_EQ(symbol_at(drv, "cuGraphAddMemcpyNode", 13000, 0), "cuGraphAddMemcpyNode");
  EXPECT_EQ(symbol_at(drv, "cuGraphExecMemcpyNodeSetParams", 13000, 0), "cuGraphExecMemcpyNodeSetParams");
  EXPECT_EQ(symbol_at(drv, "cuGraphLaunch", 13000, ptds), "cuGraphLaunch_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuGraphUpload", 13000, ptds), "cuGraphUpload_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuStreamBeginCaptureToGraph", 13000, ptds), "cuStreamBeginCaptureToGraph_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyBatchAsync", 13000, 0), "cuMemcpyBatchAsync_v2");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyBatchAsync", 13000, ptds), "cuMemcpyBatchAsync_v2_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyBatchAsync", 12080, 0), "cuMemcpyBatchAsync");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyBatchAsync", 12080, ptds), "cuMemcpyBatchAsync_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyBatchAsync", 12060, 0), "");  // did not exist yet
  EXPECT_EQ(symbol_at(drv, "cuMemcpy3DBatchAsync", 13000, ptds), "cuMemcpy3DBatchAsync_v2_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemPrefetchAsync", 13000, 0), "cuMemPrefetchAsync_v2");
  EXPECT_EQ(symbol_at(drv, "cuMemPrefetchAsync", 13000, ptds), "cuMemPrefetchAsync_v2_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemPrefetchAsync", 12000, ptds), "cuMemPrefetchAsync_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemAdvise", 13000, 0), "cuMemAdvise_v2");
  EXPECT_EQ(symbol_at(drv, "cuStreamAttachMemAsync", 13000, ptds), "cuStreamAttachMemAsync_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemcpy3DPeerAsync", 13000, ptds), "cuMemcpy3DPeerAsync_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyPeer", 13000, ptds), "cuMemcpyPeer_ptds");
  EXPECT_EQ(symbol_at(drv, "cuMemcpy3D", 13000, 0), "cuMemcpy3D_v2");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyHtoA", 13000, ptds), "cuMemcpyHtoA_v2_ptds");
  EXPECT_EQ(symbol_at(drv, "cuMemcpyAtoHAsync", 13000, ptds), "cuMemcpyAtoHAsync_v2_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemAllocAsync", 13000, ptds), "cuMemAllocAsync_ptsz");
  EXPECT_EQ(symbol_at(drv, "cuMemFreeAsync", 13000, 0), "cuMemFreeAsync");
  EXPECT_EQ(symbol_at(drv, "cuCtxEnablePeerAccess", 13000, 0), "cuCtxEnablePeerAccess");
  EXPECT_EQ(symbol_at(drv, "cuStreamUpdateCaptureDependencies", 13000, 0), "cuStreamUpdateCaptureDependencies_v2");
}

// A graph built with the driver's node API (as numba-cuda/cuda-python or the static runtime would):
// kernel -> memcpy into pageable memory. cuGraphLaunch itself waits for the kernel (as
// measured on the H200); after cuGraphExecMemcpyNodeSetParams to pinned memory it does not.
TEST_F(DriverApi, ExplicitGraphWithAPageableMemcpyNodeBlocksTheLaunch) {
  auto mem_alloc = drv.get<decltype(&cuMemAlloc_v2)>("cuMemAlloc");
  auto mem_alloc_host = drv.get<decltype(&cuMemAllocHost_v2)>("cuMemAllocHost");
  auto memset_d8 = drv.get<decltype(&cuMemsetD8_v2)>("cuMemsetD8");
  auto module_load = drv.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
  auto get_function = drv.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  auto stream_create = drv.get<decltype(&cuStreamCreate)>("cuStreamCreate");
  auto sync = drv.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
  auto graph_create = drv.get<decltype(&cuGraphCreate)>("cuGraphCreate");
  auto add_kernel = drv.get<decltype(&cuGraphAddKernelNode_v2)>("cuGraphAddKernelNode");
  auto add_memcpy = drv.get<decltype(&cuGraphAddMemcpyNode)>("cuGraphAddMemcpyNode");
  auto instantiate = drv.get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiate");
  auto exec_set = drv.get<decltype(&cuGraphExecMemcpyNodeSetParams)>("cuGraphExecMemcpyNodeSetParams");
  auto graph_launch = drv.get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
  auto node_type = drv.get<decltype(&cuGraphNodeGetType)>("cuGraphNodeGetType");
  auto get_params = drv.get<decltype(&cuGraphMemcpyNodeGetParams)>("cuGraphMemcpyNodeGetParams");
  auto host_func = drv.get<decltype(&cuLaunchHostFunc)>("cuLaunchHostFunc");
  ASSERT_TRUE(add_kernel && add_memcpy && instantiate && exec_set && graph_launch && node_type && get_params &&
              host_func);
  const size_t n = 64;
  CUdeviceptr dev;
  ASSERT_EQ(mem_alloc(&dev, n), CUDA_SUCCESS);
  ASSERT_EQ(memset_d8(dev, 0x33, n), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(mem_alloc_host(&pinned, n), CUDA_SUCCESS);
  CUmodule mod;
  ASSERT_EQ(module_load(&mod, "any image"), CUDA_SUCCESS);
  CUfunction sleeper;
  ASSERT_EQ(get_function(&sleeper, mod, "_Z12sleep_cyclesx"), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUgraph g;
  ASSERT_EQ(graph_create(&g, 0), CUDA_SUCCESS);
  const double kernel_s = 0.2;
  long long cycles = cycles_for(kernel_s);
  void* params[] = {&cycles};
  CUDA_KERNEL_NODE_PARAMS k{};
  k.func = sleeper;
  k.gridDimX = k.gridDimY = k.gridDimZ = k.blockDimX = k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = params;
  CUgraphNode kernel, copy;
  ASSERT_EQ(add_kernel(&kernel, g, nullptr, 0, &k), CUDA_SUCCESS);
  char pageable[n] = {};
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = dev;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = pageable;
  c.WidthInBytes = n;
  c.Height = c.Depth = 1;
  ASSERT_EQ(add_memcpy(&copy, g, &kernel, 1, &c, ctx), CUDA_SUCCESS);
  CUgraphNodeType type;
  ASSERT_EQ(node_type(copy, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMCPY);
  CUDA_MEMCPY3D got{};
  ASSERT_EQ(get_params(copy, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.dstHost, pageable);
  CUgraphExec e;
  ASSERT_EQ(instantiate(&e, g, 0), CUDA_SUCCESS);  // pays the kernel's lazy loading
  EXPECT_GE(time_call([&] { ASSERT_EQ(graph_launch(e, s), CUDA_SUCCESS); }), 0.9 * kernel_s);
  EXPECT_EQ(pageable[n - 1], 0x33);
  c.dstHost = pinned;
  ASSERT_EQ(exec_set(e, copy, &c, ctx), CUDA_SUCCESS);
  // Returns at once: while a host function holds the stream (no time bound a loaded machine could break).
  EXPECT_TRUE(returns_while_stream_held([&](CUhostFn fn, void* user) { return host_func(s, fn, user); },
                                        [&] { ASSERT_EQ(graph_launch(e, s), CUDA_SUCCESS); }));
  ASSERT_EQ(sync(s), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<char*>(pinned)[n - 1], 0x33);
}

TEST_F(DriverApi, CtxSynchronizeV2TakesTheContext) {
  auto sync_v2 = drv.get<decltype(&cuCtxSynchronize_v2)>("cuCtxSynchronize");  // 13000: the _v2
  auto get_device_v2 = drv.get<decltype(&cuCtxGetDevice_v2)>("cuCtxGetDevice");
  ASSERT_NE(sync_v2, nullptr);
  ASSERT_NE(get_device_v2, nullptr);
  EXPECT_EQ(sync_v2(nullptr), CUDA_SUCCESS);  // NULL: the current context
  EXPECT_EQ(sync_v2(ctx), CUDA_SUCCESS);
  EXPECT_EQ(sync_v2(reinterpret_cast<CUcontext>(0x1234)), CUDA_ERROR_INVALID_CONTEXT);
  CUdevice d = -1;
  EXPECT_EQ(get_device_v2(&d, ctx), CUDA_SUCCESS);
  EXPECT_EQ(d, 0);
  d = -1;
  EXPECT_EQ(get_device_v2(&d, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(d, 0);
  // A named context works on a thread where it is not current; NULL there has no context.
  std::thread([&] {
    EXPECT_EQ(sync_v2(ctx), CUDA_SUCCESS);
    EXPECT_EQ(sync_v2(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  }).join();
}

// Every entry point of the toolkit answers, as a driver's do: NVIDIA's runtime fetches several
// hundred at start-up (440 lookups for CUDA 13's static runtime) and a refusal ends its
// initialisation. The ones the simulator does not model return CUDA_ERROR_NOT_SUPPORTED when
// called, and say so once; a lookup says nothing.
TEST_F(DriverApi, EveryToolkitEntryPointAnswers) {
  const auto& entries = aw_sim::kToolkitEntries;
  ASSERT_GT(sizeof entries / sizeof entries[0], 400u);
  testing::internal::CaptureStderr();
  for (const aw_sim::ToolkitEntry& e : entries) {
    for (cuuint64_t flags : {cuuint64_t{0}, cuuint64_t{CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}}) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      EXPECT_EQ(drv.get_proc(e.name, &fn, 13000, flags, &status), CUDA_SUCCESS) << e.name;
      EXPECT_NE(fn, nullptr) << e.name;
      EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << e.name;
    }
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(DriverApi, UnmodelledEntryPointsReturnNotSupportedAndSaySoOnce) {
  auto create = drv.get<decltype(&cuTexObjectCreate)>("cuTexObjectCreate");
  ASSERT_NE(create, nullptr);
  CUtexObject tex = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(create(&tex, nullptr, nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(create(&tex, nullptr, nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "asyncwatch-sim: cuTexObjectCreate is not supported by the simulator\n");
  // Asked for a version before its first: as a driver, "version not sufficient".
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(drv.get_proc("cuTexObjectCreate", &fn, 4000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST_F(DriverApi, NamesNoToolkitHasAreNotFoundSilently) {
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  testing::internal::CaptureStderr();
  EXPECT_EQ(drv.get_proc("cuNoSuchEntryPoint", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(drv.get_proc("", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);  // the static runtime asks this
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

// NVIDIA's own runtime needs the driver's private tables: refused, with what to do instead.
TEST_F(DriverApi, ExportTablesAreRefusedWithAHint) {
  auto get_table = drv.get<decltype(&cuGetExportTable)>("cuGetExportTable");
  ASSERT_NE(get_table, nullptr);
  const void* table = reinterpret_cast<const void*>(1);
  CUuuid id{};
  testing::internal::CaptureStderr();
  EXPECT_EQ(get_table(&table, &id), CUDA_ERROR_NO_DEVICE);  // the runtime's calls then fail "no device"
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(table, nullptr);
  EXPECT_NE(err.find("-cudart shared"), std::string::npos) << err;
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
  auto ctx_sync = drv.get<decltype(&cuCtxSynchronize_v2)>("cuCtxSynchronize");  // 13000: the _v2
  auto host_func = drv.get<decltype(&cuLaunchHostFunc)>("cuLaunchHostFunc");
  ASSERT_TRUE(host_func);

  const size_t n = 1 << 20;
  CUdeviceptr dev;
  ASSERT_EQ(mem_alloc(&dev, n), CUDA_SUCCESS);
  ASSERT_EQ(memset_d8(dev, 0x5a, n), CUDA_SUCCESS);
  ASSERT_EQ(ctx_sync(nullptr), CUDA_SUCCESS);
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
  const auto launched = std::chrono::steady_clock::now();
  ASSERT_EQ(launch(sleeper, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  std::vector<char> pageable(n, 0);
  EXPECT_TRUE(returns_while_stream_held([&](CUhostFn fn, void* user) { return host_func(s, fn, user); },
                                        [&] { ASSERT_EQ(dtoh_async(pinned, dev, n, s), CUDA_SUCCESS); }));
  ASSERT_EQ(dtoh_async(pageable.data(), dev, n, s), CUDA_SUCCESS);
  EXPECT_GE(seconds_since(launched), 0.9 * kernel_s);  // it waited for the kernel
  EXPECT_EQ(pageable[12345], 0x5a);
  EXPECT_EQ(static_cast<char*>(pinned)[12345], 0x5a);
}

// extern "C" kernels: a sleep kernel only where the image declares an 8-byte first parameter.
TEST_F(DriverApi, ExternCKernelsAreSleepKernelsOnlyWhenTheImageGivesAnEightByteFirstParameter) {
  auto module_load = drv.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
  auto get_function = drv.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  auto stream_create = drv.get<decltype(&cuStreamCreate)>("cuStreamCreate");
  auto launch = drv.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  auto sync = drv.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
  static const char ptx[] =
      "//\n// Generated by NVIDIA NVVM Compiler\n//\n.version 9.0\n.target sm_90\n.address_size 64\n\n"
      ".visible .entry sleep_kernel(\n\t.param .u64 sleep_kernel_param_0\n)\n{\n\tret;\n}\n"
      ".visible .entry wait_int(\n\t.param .u32 wait_int_param_0,\n\t.param .u64 wait_int_param_1\n)\n{\n\tret;\n}\n";
  CUmodule with_sizes, without_sizes;
  ASSERT_EQ(module_load(&with_sizes, ptx), CUDA_SUCCESS);
  ASSERT_EQ(module_load(&without_sizes, "an image the simulator cannot read"), CUDA_SUCCESS);
  CUfunction sleeper, int_first, unknown;
  ASSERT_EQ(get_function(&sleeper, with_sizes, "sleep_kernel"), CUDA_SUCCESS);
  ASSERT_EQ(get_function(&int_first, with_sizes, "wait_int"), CUDA_SUCCESS);
  ASSERT_EQ(get_function(&unknown, without_sizes, "sleep_kernel"), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  long long cycles = 1000;
  int small = 1;
  void* p64[] = {&cycles};
  void* p32[] = {&small, &cycles};
  for (CUfunction f : {sleeper, int_first, unknown}) {  // pay lazy loading first
    ASSERT_EQ(launch(f, 1, 1, 1, 1, 1, 1, 0, s, f == int_first ? p32 : p64, nullptr), CUDA_SUCCESS);
  }
  ASSERT_EQ(sync(s), CUDA_SUCCESS);
  cycles = cycles_for(0.2);  // a default-time kernel taking it as cycles would be 0.2 s: bounds at half
  auto timed = [&](CUfunction f, void** params) {
    return time_call([&] {
      ASSERT_EQ(launch(f, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
      ASSERT_EQ(sync(s), CUDA_SUCCESS);
    });
  };
  EXPECT_GE(timed(sleeper, p64), 0.18);   // PTX: .param .u64 first
  EXPECT_LT(timed(int_first, p32), 0.1);  // first parameter 4 bytes: the default 5 us
  EXPECT_LT(timed(unknown, p64), 0.1);    // size unknown: never guessed
}

TEST_F(DriverApi, StreamHandlesAreDecoded) {
  auto query = drv.get<decltype(&cuStreamQuery)>("cuStreamQuery");
  EXPECT_EQ(query(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(query(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(query(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(query(reinterpret_cast<CUstream>(0x1234)), CUDA_ERROR_INVALID_HANDLE);
}
