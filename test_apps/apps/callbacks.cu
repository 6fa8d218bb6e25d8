// Host callbacks hold their stream: cudaStreamAddCallback (deprecated) and cudaLaunchHostFunc, each
// sleeping in the callback, then a pageable D2H copy in the same stream that must wait for both.
// Also the seed's flag: set by the callback, read right after enqueuing and after synchronizing.
//   callbacks [callback_ms=100]
//   @ADD_CALLBACK      cudaStreamAddCallback, the callback sleeps callback_ms
//   @LAUNCH_HOST_FUNC  cudaLaunchHostFunc, the function sleeps callback_ms
//   @D2H_AFTER_HOSTFN  pageable D2H behind both: blocked about 2 * callback_ms
//   @SEED_FLAG_CALLBACK the seed's callback (sets a flag), behind a sleep kernel
#include "aw_common.h"

#include <atomic>
#include <thread>

static std::atomic<int> g_ms{100};
static std::atomic<int> g_order{0};

static void sleeping_callback(cudaStream_t, cudaError_t status, void* arg) {
  std::this_thread::sleep_for(std::chrono::milliseconds(g_ms.load()));
  if (status == cudaSuccess) *static_cast<int*>(arg) = ++g_order;
}

static void sleeping_host_func(void* arg) {
  std::this_thread::sleep_for(std::chrono::milliseconds(g_ms.load()));
  *static_cast<int*>(arg) = ++g_order;
}

static void callback(cudaStream_t, cudaError_t, void* ptr) { *(reinterpret_cast<bool*>(ptr)) = true; }

int main(int argc, char** argv) {
  g_ms = int(aw::arg_num(argc, argv, 1, 100));
  const size_t bytes = 1 << 20;
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  char* host = static_cast<char*>(malloc(bytes));
  aw::fill(host, bytes, 41);
  AW_CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
  AW_CHECK(cudaDeviceSynchronize());  // pageable cudaMemcpy may return before its DMA is done
  std::memset(host, 0, bytes);

  volatile int cb_order = 0, fn_order = 0;
  long long t0 = aw::now_ns();
  AW_CHECK(cudaStreamAddCallback(s, sleeping_callback, (void*)&cb_order, 0));  // @ADD_CALLBACK
  AW_CHECK(cudaLaunchHostFunc(s, sleeping_host_func, (void*)&fn_order));  // @LAUNCH_HOST_FUNC
  aw::timing("enqueuing both callbacks took", aw::now_ns() - t0);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));  // @D2H_AFTER_HOSTFN
  aw::timing("pageable D2H behind the two sleeping callbacks returned after", aw::now_ns() - t0);
  AW_EXPECT(cb_order == 1 && fn_order == 2, "callbacks ran out of order or not before the copy returned (%d, %d)", cb_order, fn_order);
  AW_EXPECT(aw::check(host, bytes, 41), "D2H after callbacks: wrong data");
  std::printf("callbacks ran in stream order before the pageable copy returned\n");

  // The seed's flag, behind a 10 ms sleep kernel so that "not concluded" is deterministic.
  bool callback_executed = false;
  sleep_kernel<<<1, 1, 0, s>>>(19800000);
  AW_CHECK(cudaStreamAddCallback(s, callback, &callback_executed, 0));  // @SEED_FLAG_CALLBACK
  auto snapshot = callback_executed;
  std::printf("Right after we finished enqueuing work, the stream has %sconcluded execution.\n", snapshot ? "" : "not ");
  AW_CHECK(cudaStreamSynchronize(s));
  snapshot = callback_executed;
  std::printf("After cudaStreamSynchronize, the stream has %sconcluded execution.\n", snapshot ? "" : "not ");
  AW_EXPECT(snapshot, "callback did not run before cudaStreamSynchronize returned");

  free(host);
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
