// The documented CUDA synchronization rules, as the simulated runtime + driver implement them.
// Timing assertions are ratios of the simulated kernel/copy time, so they hold on slow CI machines.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "sim_test_support.h"

using namespace aw_sim_test;

namespace {

// Host stubs: only their addresses matter (nvcc passes the stub's address as the kernel's identity).
void stub_dummy() {}
void stub_spin() {}
void stub_compute() {}
void stub_lazy_a() {}
void stub_lazy_b() {}
int g_device_var_shadow;

const void* dummy_kernel() {
  static const void* k = register_kernel(reinterpret_cast<const void*>(&stub_dummy), "_Z5dummyx");
  return k;
}

const double kKernelSeconds = 0.2;

struct TimedMark {
  std::chrono::steady_clock::time_point at;
  std::thread::id thread;
};

void CUDART_CB mark_time(void* p) {
  auto* m = static_cast<TimedMark*>(p);
  m->at = std::chrono::steady_clock::now();
  m->thread = std::this_thread::get_id();
}

class DefaultEnv : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaFree(nullptr), cudaSuccess); }
};

}  // namespace

TEST_F(DefaultEnv, PageableDeviceToHostWaitsForTheKernelPinnedDoesNot) {
  const size_t n = 1 << 20;
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n), cudaSuccess);
  std::vector<char> pageable(n, 1);
  char* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), n), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 7, n), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  launch_sleep(dummy_kernel(), 0.01, s);  // pay lazy loading outside the measurements
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);

  // Pinned copies return while a host function holds the stream (not a time bound a loaded machine
  // could break); the pageable one returns only after the stream finished, at least the kernel's
  // time after the kernel was launched.
  const auto launched = std::chrono::steady_clock::now();
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernelSeconds, s), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] {
    ASSERT_EQ(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, s), cudaSuccess);
  }));
  ASSERT_EQ(cudaMemcpyAsync(pageable.data(), dev, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_GE(seconds_since(launched), 0.9 * kKernelSeconds);
  EXPECT_EQ(pageable[0], 7);  // the bytes were really copied
  EXPECT_EQ(pageable[n - 1], 7);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);  // a pageable D2H returns after the copy completed
  cudaFreeHost(pinned);
  cudaFree(dev);
  cudaStreamDestroy(s);
}

TEST_F(DefaultEnv, HostToHostAsyncCopyIsSynchronous) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  std::vector<char> a(4096, 5), b(4096, 0);
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.1, s), cudaSuccess);
  double t = time_call([&] { cudaMemcpyAsync(b.data(), a.data(), a.size(), cudaMemcpyHostToHost, s); });
  EXPECT_GE(t, 0.09);
  EXPECT_EQ(b[100], 5);
  cudaStreamDestroy(s);
}

TEST_F(DefaultEnv, LegacyStreamWaitsForBlockingStreamsButNotNonBlockingOnes) {
  cudaStream_t blocking, non_blocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);

  // Legacy-stream work completes while the non-blocking stream is held.
  EXPECT_TRUE(returns_while_stream_held(non_blocking, [] {
    TimedMark after_non_blocking;
    ASSERT_EQ(cudaLaunchHostFunc(0, mark_time, &after_non_blocking), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  }));

  auto t0 = std::chrono::steady_clock::now();
  TimedMark after_blocking;
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.1, blocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(0, mark_time, &after_blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  EXPECT_GE(std::chrono::duration<double>(after_blocking.at - t0).count(), 0.09);

  // And the other way round: a blocking stream waits for earlier legacy-stream work.
  cudaDeviceSynchronize();
  t0 = std::chrono::steady_clock::now();
  TimedMark blocking_after_legacy;
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.1, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(blocking, mark_time, &blocking_after_legacy), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_GE(std::chrono::duration<double>(blocking_after_legacy.at - t0).count(), 0.09);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(non_blocking);
}

namespace {
struct CallbackLog {
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
};
struct CallbackArg {
  CallbackLog* log;
  int index;
};
void CUDART_CB logging_callback(cudaStream_t, cudaError_t status, void* p) {
  auto* a = static_cast<CallbackArg*>(p);
  EXPECT_EQ(status, cudaSuccess);
  if (a->index == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // holds back later work
  std::lock_guard<std::mutex> lock(a->log->mutex);
  a->log->order.push_back(a->index);
  a->log->threads.push_back(std::this_thread::get_id());
}
}  // namespace

TEST_F(DefaultEnv, CallbacksRunInOrderOnADriverThreadAndHoldBackLaterWork) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  CallbackLog log;
  CallbackArg args[3] = {{&log, 0}, {&log, 1}, {&log, 2}};
  auto t0 = std::chrono::steady_clock::now();
  for (auto& a : args) ASSERT_EQ(cudaStreamAddCallback(s, logging_callback, &a, 0), cudaSuccess);
  TimedMark after;
  ASSERT_EQ(cudaLaunchHostFunc(s, mark_time, &after), cudaSuccess);
  EXPECT_LT(seconds_since(t0), 0.1);  // enqueuing does not wait for the callbacks (200 ms)
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2}));
  for (auto id : log.threads) EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_NE(after.thread, std::this_thread::get_id());
  EXPECT_GE(std::chrono::duration<double>(after.at - t0).count(), 0.19);
  cudaStreamDestroy(s);
}

TEST_F(DefaultEnv, PointerAttributesFollowTheFactsTable) {
  cudaPointerAttributes a{};
  std::vector<char> heap(1 << 16);
  int on_stack = 0;
  ASSERT_EQ(cudaPointerGetAttributes(&a, heap.data()), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  ASSERT_EQ(cudaPointerGetAttributes(&a, &on_stack), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);

  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(pinned) + 100), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  cudaFreeHost(pinned);

  ASSERT_EQ(cudaHostRegister(heap.data(), heap.size(), cudaHostRegisterDefault), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, heap.data() + 1000), cudaSuccess);  // interior pointer
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaHostUnregister(heap.data()), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, heap.data() + 1000), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);

  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4096), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, dev), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 0);

  void* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, managed), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeManaged);

  // Driver level: managed memory is DEVICE with IS_MANAGED = 1; unknown memory is type 0, success.
  Driver drv;
  auto get_attrs = drv.get<decltype(&cuPointerGetAttributes)>("cuPointerGetAttributes");
  ASSERT_NE(get_attrs, nullptr);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  unsigned type = 99;
  bool is_managed = false;
  void* data[] = {&type, &is_managed};
  ASSERT_EQ(get_attrs(2, attrs, data, reinterpret_cast<CUdeviceptr>(managed)), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
  EXPECT_TRUE(is_managed);
  ASSERT_EQ(get_attrs(2, attrs, data, reinterpret_cast<CUdeviceptr>(heap.data())), CUDA_SUCCESS);
  EXPECT_EQ(type, 0u);
  EXPECT_FALSE(is_managed);
  cudaFree(dev);
  ASSERT_EQ(get_attrs(2, attrs, data, reinterpret_cast<CUdeviceptr>(dev)), CUDA_SUCCESS);  // freed
  EXPECT_EQ(type, 0u);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);  // cudaFree frees managed memory too
}

TEST_F(DefaultEnv, FailingPointerQuerySetsTheLastError) {
  (void)cudaGetLastError();
  int x = 0;
  EXPECT_EQ(cudaPointerGetAttributes(nullptr, &x), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);  // peek keeps it
  cudaPointerAttributes a{};
  EXPECT_EQ(cudaPointerGetAttributes(&a, &x), cudaSuccess);  // success does not clear it
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // get resets it
  // Per thread: another thread's error is not ours.
  std::thread([] { cudaPointerGetAttributes(nullptr, nullptr); }).join();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
}

TEST_F(DefaultEnv, CaptureRecordsWithoutExecutingOrBlocking) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const size_t n = 1 << 20;
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 9, n), cudaSuccess);
  cudaDeviceSynchronize();
  std::vector<char> host(n, 0);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  double t = time_call([&] {
    launch_sleep(dummy_kernel(), 0.2, s);
    cudaMemcpyAsync(host.data(), dev, n, cudaMemcpyDeviceToHost, s);  // pageable D2H: would block
  });
  EXPECT_LT(t, 0.1);      // executed, the pageable copy would wait for the 0.2 s kernel
  EXPECT_EQ(host[0], 0);  // nothing executed
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(host[0], 0);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(host[0], 9);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(dev);
  cudaStreamDestroy(s);
}

TEST_F(DefaultEnv, MemsetToDeviceReturnsEarlyMemsetToPinnedWaits) {
  char* dev = nullptr;
  char* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 4096), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4096), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(cudaStream_t(0), [&] { ASSERT_EQ(cudaMemset(dev, 1, 4096), cudaSuccess); }));
  EXPECT_TRUE(
      returns_while_stream_held(cudaStream_t(0), [&] { ASSERT_EQ(cudaMemsetAsync(pinned, 1, 4096, 0), cudaSuccess); }));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.1, 0), cudaSuccess);
  EXPECT_GE(time_call([&] { cudaMemset(pinned, 2, 4096); }), 0.08);
  EXPECT_EQ(pinned[4095], 2);
  cudaFree(dev);
  cudaFreeHost(pinned);
}

TEST_F(DefaultEnv, EventsMeasureKernelTime) {
  cudaEvent_t a, b;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.05, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(b), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // "not ready" is not an error
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 45.f);
  // Another stream waits for the event.
  cudaStream_t other;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  auto t0 = std::chrono::steady_clock::now();  // before the launch: the kernel cannot start earlier
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.05, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, a, 0), cudaSuccess);
  TimedMark m;
  ASSERT_EQ(cudaLaunchHostFunc(other, mark_time, &m), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_GE(std::chrono::duration<double>(m.at - t0).count(), 0.045);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  cudaStreamDestroy(other);
}

TEST_F(DefaultEnv, PerThreadDefaultStreamsAreIndependent) {
  std::atomic<bool> launched{false};
  std::thread worker([&] {
    launch_sleep(dummy_kernel(), 0.4, cudaStreamPerThread);
    launched = true;
    cudaStreamSynchronize(cudaStreamPerThread);
  });
  while (!launched) std::this_thread::yield();
  EXPECT_LT(time_call([] { cudaStreamSynchronize(cudaStreamPerThread); }), 0.1);  // the worker's kernel: 0.4 s
  // The legacy stream does wait for a per-thread stream (it is a blocking stream).
  EXPECT_GE(time_call([] { cudaStreamSynchronize(0); }), 0.1);
  worker.join();
}

TEST_F(DefaultEnv, FirstLaunchOfEachKernelPaysLazyLoading) {
  const void* k = register_kernel(reinterpret_cast<const void*>(&stub_lazy_a), "_Z6lazy_ai");
  int arg = 0;
  void* args[] = {&arg};
  double first = time_call([&] { cudaLaunchKernel(k, dim3(1), dim3(1), args, 0, 0); });
  // Later launches do not pay it: the fastest of five, so that one stall of a loaded machine (2.5 ms
  // seen under ASan) does not look like loading. sim_lazy_loading checks this with a 200 ms load.
  double later = 1e9;
  for (int i = 0; i < 5; ++i)
    later = std::min(later, time_call([&] { cudaLaunchKernel(k, dim3(1), dim3(1), args, 0, 0); }));
  EXPECT_GE(first, 0.0014);  // ASYNCWATCH_SIM_LAZY_LOAD_US default: 1500
  EXPECT_LT(later, 0.0007);
  cudaDeviceSynchronize();
}

TEST_F(DefaultEnv, KernelNamesComeFromTheDriver) {
  cudaKernel_t k = nullptr;
  ASSERT_EQ(__cudaGetKernel(&k, dummy_kernel()), cudaSuccess);
  Driver drv;
  auto kernel_name = drv.get<decltype(&cuKernelGetName)>("cuKernelGetName");
  auto func_name = drv.get<decltype(&cuFuncGetName)>("cuFuncGetName");
  const char* name = nullptr;
  ASSERT_EQ(kernel_name(&name, reinterpret_cast<CUkernel>(k)), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z5dummyx");
  ASSERT_EQ(func_name(&name, reinterpret_cast<CUfunction>(k)), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z5dummyx");
}

TEST_F(DefaultEnv, NonSleepKernelsTakeTheDefaultTime) {
  const void* k = register_kernel(reinterpret_cast<const void*>(&stub_compute), "_Z7computePfi");
  const void* spin = register_kernel(reinterpret_cast<const void*>(&stub_spin), "_Z4spini");  // int: not a sleep kernel
  int arg = 1 << 30;
  float* p = nullptr;
  void* args2[] = {&p, &arg};
  void* args1[] = {&arg};
  cudaLaunchKernel(k, dim3(1), dim3(1), args2, 0, 0);
  cudaLaunchKernel(spin, dim3(1), dim3(1), args1, 0, 0);
  cudaDeviceSynchronize();
  double t = time_call([&] {
    cudaLaunchKernel(k, dim3(1), dim3(1), args2, 0, 0);
    cudaLaunchKernel(spin, dim3(1), dim3(1), args1, 0, 0);
    cudaDeviceSynchronize();
  });
  EXPECT_LT(t, 0.1);  // 5 us each; taken as cycles the int would be 0.54 s
}

TEST_F(DefaultEnv, DeviceVariablesWorkWithSymbolCopies) {
  static char fake[8];
  void** h = __cudaRegisterFatBinary(fake);
  __cudaRegisterVar(h, reinterpret_cast<char*>(&g_device_var_shadow), nullptr, "g_device_var", 0, sizeof(int), 0, 0);
  int in = 42, out = 0;
  ASSERT_EQ(cudaMemcpyToSymbol(&g_device_var_shadow, &in, sizeof in, 0, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpyFromSymbol(&out, &g_device_var_shadow, sizeof out, 0, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, 42);
  void* addr = nullptr;
  ASSERT_EQ(cudaGetSymbolAddress(&addr, &g_device_var_shadow), cudaSuccess);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, addr), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
}

TEST_F(DefaultEnv, PitchedCopiesRoundTrip) {
  const size_t width = 10, height = 4, pitch = 16;
  std::vector<char> host(width * height), back(width * height, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i);
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), pitch * height), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2D(dev, pitch, host.data(), width, width, height, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2DAsync(back.data(), width, dev, pitch, width, height, cudaMemcpyDeviceToHost, 0), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(dev[pitch + 1], 11);  // row 1 starts at the pitch
  cudaFree(dev);
}

TEST_F(DefaultEnv, DeviceQueries) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "asyncwatch simulated GPU");
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST_F(DefaultEnv, CudaFreeReleasesManagedMemoryAfterQueuedWork) {
  void* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 1 << 20, cudaMemAttachGlobal), cudaSuccess);
  static_cast<char*>(managed)[0] = 1;  // host-accessible, like managed memory
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  launch_sleep(dummy_kernel(), 0.001, s);  // pay lazy loading outside the measurement
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.1, s), cudaSuccess);
  (void)cudaGetLastError();
  double t = time_call([&] { EXPECT_EQ(cudaFree(managed), cudaSuccess); });
  EXPECT_GE(t, 0.09);  // cudaFree synchronizes the device first
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, managed), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);        // really gone
  EXPECT_EQ(cudaFree(managed), cudaErrorInvalidValue);  // a second free fails
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  cudaStreamDestroy(s);
}

// The stream's device clock: the worker sleeps only for simulated time that remains, so launch-heavy
// programs drain at the simulated rate (a bound on wall time that guards the model, not speed).
// The bounds are for an unsanitized build: under a sanitizer every launch costs ~50x (4.6 s for the
// 50,000 under TSan on a loaded 2-core CI machine), and the model is checked there only
// loosely.
// GCC names a sanitizer build by a macro, clang (14) by __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AW_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(AW_SANITIZED_BUILD)
constexpr double kLaunchBoundSeconds = 20.0;
#else
constexpr double kLaunchBoundSeconds = 2.0;
#endif
TEST_F(DefaultEnv, FiftyThousandEmptyLaunchesDrainQuickly) {
  static int stub_empty;
  const void* empty = register_kernel(&stub_empty, "_Z5emptyv");  // not a sleep kernel: 5000 ns
  const int n = 50000;
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaLaunchKernel(empty, dim3(1), dim3(1), nullptr, 0, s), cudaSuccess);  // lazy loading
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  double t = time_call([&] {
    for (int i = 0; i < n; ++i) ASSERT_EQ(cudaLaunchKernel(empty, dim3(1), dim3(1), nullptr, 0, s), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  });
  EXPECT_GE(t, n * 5000e-9);  // never faster than the simulated GPU
  EXPECT_LT(t, kLaunchBoundSeconds);
  // 0-ns kernels (a sleep kernel asked for 0 cycles) drain as fast as they are launched.
  long long zero = 0;
  void* args[] = {&zero};
  double t0ns = time_call([&] {
    for (int i = 0; i < n; ++i) ASSERT_EQ(cudaLaunchKernel(dummy_kernel(), dim3(1), dim3(1), args, 0, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  });
  EXPECT_LT(t0ns, kLaunchBoundSeconds);
  std::printf("50000 launches + sync: 5 us kernels %.3f s, 0 ns kernels %.3f s\n", t, t0ns);
  cudaStreamDestroy(s);
}

// Back-to-back kernels keep their simulated durations: the end of one is the start of the next,
// whatever the worker's wake-up latency. A 50 ms kernel holds the stream while everything is
// enqueued, so the result does not depend on how fast this (possibly loaded) host launches.
TEST_F(DefaultEnv, BackToBackKernelsKeepTheirDurations) {
  const int n = 200;
  const double kernel_s = 202e-6, blocker_s = 0.05;
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  launch_sleep(dummy_kernel(), 0.001, s);  // lazy loading
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaEvent_t a, b;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  double launched = 0;
  double wall = time_call([&] {
    ASSERT_EQ(launch_sleep(dummy_kernel(), blocker_s, s), cudaSuccess);
    launched = time_call([&] {
      ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
      for (int i = 0; i < n; ++i) ASSERT_EQ(launch_sleep(dummy_kernel(), kernel_s, s), cudaSuccess);
      ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
    });
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  });
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  const double expected = n * kernel_s;
  // Events carry simulated timestamps: the elapsed time is exactly the kernels' sum (was 1.4-2.9x
  // when every kernel restarted the clock at the worker's late wake-up).
  if (launched < blocker_s) {
    EXPECT_NEAR(ms / 1e3, expected, 0.01 * expected);
  }
  EXPECT_GE(ms / 1e3, 0.999 * expected);
  EXPECT_GE(wall, blocker_s + expected);
  std::printf("%d x 202 us kernels: events %.3f ms (%.1f us each), wall after the 50 ms blocker %.3f ms\n", n, ms,
              ms * 1e3 / n, (wall - blocker_s) * 1e3);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
}

// ---- groups run by their own ctest entries with a different environment ----

TEST(QueueDepth4, EnqueueIntoAFullStreamBlocks) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  launch_sleep(dummy_kernel(), 0.001, s);
  cudaStreamSynchronize(s);
  // 200 ms kernels: four enqueues return long before the first kernel ends (even under TSan on a
  // loaded 2-core machine, where 4 enqueues once took 20 ms), the fifth waits for it.
  double t4 = time_call([&] {
    for (int i = 0; i < 4; ++i) launch_sleep(dummy_kernel(), 0.2, s);
  });
  double t5 = time_call([&] { launch_sleep(dummy_kernel(), 0.2, s); });
  EXPECT_LT(t4, 0.1);
  EXPECT_GE(t5, 0.09);
  cudaStreamDestroy(s);
}

// Run with ASYNCWATCH_SIM_STAGING_GBPS=0.1, so staging time dwarfs the real memcpy even on a loaded machine.
TEST(SlowStaging, PageableHostToDeviceBlocksInProportionToSize) {
  const double staging_bytes_per_s = 0.1e9;
  const size_t small = 1u << 20, large = 4u << 20;  // 10 ms and 42 ms
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  std::vector<char> host(large, 3);
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), large), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, large), cudaSuccess);  // first touch outside the measurement
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  // The fastest of three small copies: one stall of a loaded machine does not make it look large.
  double t_small = 1e9;
  for (int i = 0; i < 3; ++i)
    t_small =
        std::min(t_small, time_call([&] { cudaMemcpyAsync(dev, host.data(), small, cudaMemcpyHostToDevice, s); }));
  double t_large = time_call([&] { cudaMemcpyAsync(dev, host.data(), large, cudaMemcpyHostToDevice, s); });
  EXPECT_GE(t_small, 0.9 * small / staging_bytes_per_s);
  EXPECT_GE(t_large, 0.9 * large / staging_bytes_per_s);
  EXPECT_LT(t_small, 0.5 * large / staging_bytes_per_s);
  // Staging returns before the stream finished: a pinned copy would not block at all.
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<char> back(large);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, large, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(back.data(), host.data(), large), 0);
  cudaFree(dev);
  cudaStreamDestroy(s);
}

// Both run with ASYNCWATCH_SIM_LAZY_LOAD_US=200000, so the 0.2 s dwarfs sanitizer overhead and stalls.
TEST(EagerLoading, FirstLaunchDoesNotBlock) {
  const void* k = register_kernel(reinterpret_cast<const void*>(&stub_lazy_b), "_Z6lazy_bi");
  int arg = 0;
  void* args[] = {&arg};
  cudaFree(nullptr);
  EXPECT_LT(time_call([&] { cudaLaunchKernel(k, dim3(1), dim3(1), args, 0, 0); }), 0.1);
  cudaDeviceSynchronize();
}

TEST(LazyLoading, FirstLaunchOfEachKernelBlocksOnce) {
  const void* a = register_kernel(reinterpret_cast<const void*>(&stub_lazy_a), "_Z6lazy_ai");
  const void* b = register_kernel(reinterpret_cast<const void*>(&stub_lazy_b), "_Z6lazy_bi");
  int arg = 0;
  void* args[] = {&arg};
  cudaFree(nullptr);
  EXPECT_GE(time_call([&] { cudaLaunchKernel(a, dim3(1), dim3(1), args, 0, 0); }), 0.18);
  EXPECT_LT(time_call([&] { cudaLaunchKernel(a, dim3(1), dim3(1), args, 0, 0); }), 0.1);
  EXPECT_GE(time_call([&] { cudaLaunchKernel(b, dim3(1), dim3(1), args, 0, 0); }), 0.18);  // per kernel
  cudaDeviceSynchronize();
}

TEST(LaunchBlocking, EveryLaunchIsSynchronous) {
  cudaFree(nullptr);
  launch_sleep(dummy_kernel(), 0.001, 0);
  EXPECT_GE(time_call([&] { launch_sleep(dummy_kernel(), 0.05, 0); }), 0.045);
}
