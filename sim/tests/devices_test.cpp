// Devices and contexts on the simulator: context creation paid by the call that creates the context
// (ASYNCWATCH_SIM_CONTEXT_INIT_US), and two simulated devices (ASYNCWATCH_SIM_DEVICES=2): per-device
// memory, streams, default streams, peer access and copies across devices. Each group runs in its own
// ctest entry (tests/CMakeLists.txt) with the environment it needs.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sim_test_support.h"

using namespace aw_sim_test;

namespace {

void stub_dummy() {}
void stub_first() {}
void stub_second() {}
const void* dummy_kernel() {
  static const void* k = register_kernel(reinterpret_cast<const void*>(&stub_dummy), "_Z5dummyx");
  return k;
}

constexpr double kKernel = 0.2;
constexpr double kContextInit = 0.2;  // ASYNCWATCH_SIM_CONTEXT_INIT_US=200000 in the ContextInit entries
// "Returned at once" is checked by holding the stream (returns_while_stream_held), never by a time bound.

// Enqueues a host function on `device`'s legacy default stream (the caller's device is restored).
auto hold_default_stream_of(int device) {
  return [device](cudaHostFn_t fn, void* user) {
    int current = 0;
    (void)cudaGetDevice(&current);
    (void)cudaSetDevice(device);
    const cudaError_t r = cudaLaunchHostFunc(0, fn, user);
    (void)cudaSetDevice(current);
    return r;
  };
}

// Whether device 0's primary context exists (cuDevicePrimaryCtxGetState): which call created it is
// checked this way, not by a time bound that a loaded machine could break.
// 1 active, 0 not, -1 when the query itself fails.
int primary_context_active() {
  Driver drv;
  auto state = drv.get<decltype(&cuDevicePrimaryCtxGetState)>("cuDevicePrimaryCtxGetState");
  unsigned flags = 0;
  int active = 0;
  if (!state || state(0, &flags, &active) != CUDA_SUCCESS) return -1;
  return active != 0 ? 1 : 0;
}

}  // namespace

// ---- context creation ----

TEST(ContextInit, FirstLaunchPaysContextCreation) {
  const void* first = register_kernel(reinterpret_cast<const void*>(&stub_first), "_Z5firsti");
  const void* second = register_kernel(reinterpret_cast<const void*>(&stub_second), "_Z6secondi");
  int arg = 0;
  void* args[] = {&arg};
  // Looking a kernel up needs no context (libraries are context-independent), so nvcc's
  // __cudaGetKernel before the launch does not create it.
  cudaKernel_t k = nullptr;
  ASSERT_EQ(__cudaGetKernel(&k, first), cudaSuccess);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(primary_context_active(), 0);
  // The launch is the first call that needs the context: it pays its creation (plus lazy loading).
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaLaunchKernel(first, dim3(1), dim3(1), args, 0, 0), cudaSuccess); }),
            0.9 * kContextInit);
  EXPECT_EQ(primary_context_active(), 1);
  EXPECT_LT(time_call([&] { ASSERT_EQ(cudaLaunchKernel(second, dim3(1), dim3(1), args, 0, 0), cudaSuccess); }),
            0.5 * kContextInit);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // cudaDeviceReset destroys the context: the next call creates it again.
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(primary_context_active(), 0);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaFree(nullptr), cudaSuccess); }), 0.9 * kContextInit);
  EXPECT_LT(time_call([&] { ASSERT_EQ(cudaFree(nullptr), cudaSuccess); }), 0.5 * kContextInit);
}

TEST(ContextInit, AfterCudaFreeALaunchPaysOnlyLazyLoading) {
  const void* first = register_kernel(reinterpret_cast<const void*>(&stub_first), "_Z5firsti");
  int arg = 0;
  void* args[] = {&arg};
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaFree(nullptr), cudaSuccess); }), 0.9 * kContextInit);
  const double launch =
      time_call([&] { ASSERT_EQ(cudaLaunchKernel(first, dim3(1), dim3(1), args, 0, 0), cudaSuccess); });
  EXPECT_LT(launch, 0.5 * kContextInit);
  EXPECT_GE(launch, 0.0014);  // ASYNCWATCH_SIM_LAZY_LOAD_US default: 1500
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(ContextInit, DriverRetainPaysCreationOncePerActivation) {
  Driver drv;
  auto init = drv.get<decltype(&cuInit)>("cuInit");
  auto retain = drv.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  auto state = drv.get<decltype(&cuDevicePrimaryCtxGetState)>("cuDevicePrimaryCtxGetState");
  auto reset = drv.get<decltype(&cuDevicePrimaryCtxReset_v2)>("cuDevicePrimaryCtxReset");
  auto create = drv.get<decltype(&cuCtxCreate_v4)>("cuCtxCreate");
  auto pop = drv.get<decltype(&cuCtxPopCurrent_v2)>("cuCtxPopCurrent");
  ASSERT_TRUE(init && retain && state && reset && create && pop);
  ASSERT_EQ(init(0), CUDA_SUCCESS);  // cuInit creates no context (checked next)
  unsigned flags = 0;
  int active = 1;
  ASSERT_EQ(state(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  CUcontext ctx = nullptr, again = nullptr;
  EXPECT_GE(time_call([&] { ASSERT_EQ(retain(&ctx, 0), CUDA_SUCCESS); }), 0.9 * kContextInit);
  ASSERT_EQ(state(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_LT(time_call([&] { ASSERT_EQ(retain(&again, 0), CUDA_SUCCESS); }), 0.5 * kContextInit);
  EXPECT_EQ(again, ctx);
  EXPECT_LT(time_call([&] { ASSERT_EQ(create(&again, nullptr, 0, 0), CUDA_SUCCESS); }), 0.5 * kContextInit);
  CUcontext popped = nullptr;
  ASSERT_EQ(pop(&popped), CUDA_SUCCESS);  // cuCtxCreate pushed it
  EXPECT_EQ(popped, ctx);
  ASSERT_EQ(reset(0), CUDA_SUCCESS);
  EXPECT_GE(time_call([&] { ASSERT_EQ(retain(&ctx, 0), CUDA_SUCCESS); }), 0.9 * kContextInit);
}

// ---- one device (the default) ----

TEST(OneDevice, OnlyDeviceZeroExists) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  int can = 1;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 0), cudaSuccess);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);  // a device is not its own peer
  (void)cudaGetLastError();
}

// ---- two devices (ASYNCWATCH_SIM_DEVICES=2) ----

namespace {
class TwoDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    ASSERT_EQ(n, 2) << "run with ASYNCWATCH_SIM_DEVICES=2";
    for (int d : {1, 0}) {
      ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
      ASSERT_EQ(launch_sleep(dummy_kernel(), 0.001, 0), cudaSuccess);  // lazy loading outside the measurements
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
  }
};
}  // namespace

TEST_F(TwoDevices, MemoryStreamsAndDefaultStreamsBelongToADevice) {
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  std::thread([] {
    int d = -1;
    EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
    EXPECT_EQ(d, 0);  // the device is per host thread
  }).join();
  void* on1 = nullptr;
  ASSERT_EQ(cudaMalloc(&on1, 4096), cudaSuccess);
  cudaStream_t s1;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  int stream_device = -1;
  ASSERT_EQ(cudaStreamGetDevice(s1, &stream_device), cudaSuccess);
  EXPECT_EQ(stream_device, 1);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, on1), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 1);
  Driver drv;
  auto attrs = drv.get<decltype(&cuPointerGetAttributes)>("cuPointerGetAttributes");
  int ordinal = -1;
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* data[] = {&ordinal};
  ASSERT_EQ(attrs(1, which, data, reinterpret_cast<CUdeviceptr>(on1)), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  // Device 1 busy on its default stream: device 0's default stream and cudaDeviceSynchronize do not wait.
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, 0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_TRUE(
      returns_while_stream_held(hold_default_stream_of(1), [] { ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess); }));
  EXPECT_TRUE(
      returns_while_stream_held(hold_default_stream_of(1), [] { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }));
  // A launch into another device's stream fails; a copy into it is fine (CUDA programming guide).
  EXPECT_EQ(launch_sleep(dummy_kernel(), 0.001, s1), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  char* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4096), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(pinned, on1, 4096, cudaMemcpyDeviceToHost, s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_GE(time_call([] { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }), 0.5 * kKernel);
  // Events: recording an event of device 0 into a stream of device 1 fails.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaEvent_t e0;
  ASSERT_EQ(cudaEventCreate(&e0), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  cudaEventDestroy(e0);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s1);
  cudaFree(on1);
}

TEST_F(TwoDevices, PeerCopiesAreQueuedWithAndWithoutPeerAccess) {
  const size_t n = 1 << 20;
  char *d0 = nullptr, *d1 = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d1), n), cudaSuccess);
  ASSERT_EQ(cudaMemset(d1, 6, n), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d0), n), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int can = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  EXPECT_EQ(can, 1);
  // Without peer access: staged by the driver, still asynchronous to the host.
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, s), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpyPeerAsync(d0, 0, d1, 1, n, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<char> host(n);
  ASSERT_EQ(cudaMemcpy(host.data(), d0, n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[n - 1], 6);
  // With peer access.
  ASSERT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  (void)cudaGetLastError();
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, s), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpyPeerAsync(d0, 0, d1, 1, n, s), cudaSuccess); }));
  // Device to device across devices through cudaMemcpyAsync (unified addressing): queued too.
  EXPECT_TRUE(
      returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpyAsync(d1, d0, n, cudaMemcpyDefault, s), cudaSuccess); }));
  EXPECT_TRUE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaMemcpyAsync(d1, d0, n, cudaMemcpyDeviceToDevice, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
  (void)cudaGetLastError();
  // cudaMemcpyPeer is asynchronous to the host but serialized with both devices' work: it returns
  // at once behind device 1's kernel, and device 0's default stream then waits for it.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, 0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(hold_default_stream_of(1),
                                        [&] { ASSERT_EQ(cudaMemcpyPeer(d0, 0, d1, 1, n), cudaSuccess); }));
  EXPECT_GE(time_call([] { ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess); }), 0.5 * kKernel);
  // A pageable copy from device 1's memory waits for device 1's stream, as on one device.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t s1;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, s1), cudaSuccess);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaMemcpyAsync(host.data(), d1, n, cudaMemcpyDeviceToHost, s1), cudaSuccess); }),
            0.9 * kKernel);
  cudaStreamDestroy(s1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStreamDestroy(s);
  cudaFree(d0);
  cudaFree(d1);
}

TEST_F(TwoDevices, ResetFreesOnlyThatDevicesMemory) {
  void *d0 = nullptr, *d1 = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d0, 64), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d1, 64), cudaSuccess);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, d1), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  ASSERT_EQ(cudaPointerGetAttributes(&a, d0), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 0);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaFree(d0);
}
