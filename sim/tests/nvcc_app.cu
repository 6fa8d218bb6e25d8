// A CUDA program built by nvcc with -cudart shared, run unchanged on the simulator: <<<>>> with a
// sleep kernel, cudaLaunchKernel, callbacks and host functions, __device__ variables. Built twice,
// with the legacy and the per-thread default stream. Exits non-zero when a rule is not observed.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

__device__ int device_counter;

__global__ void dummy(long long sleep_cycles) {
  long long start = clock64();
  while (clock64() - start < sleep_cycles) {}
}

// extern "C": no parameter types in the name; the simulator reads the first parameter's size
// (8 bytes) from the embedded (uncompressed) cubin, so this is a sleep kernel too.
extern "C" __global__ void sleep_c(long long sleep_cycles) {
  long long start = clock64();
  while (clock64() - start < sleep_cycles) {}
}
extern "C" __global__ void wait_c(int flag) { (void)flag; }  // 4-byte first parameter: not a sleep kernel

__global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2.f;
}

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}
double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
std::thread::id main_thread;
bool callback_on_other_thread = false;
int host_fn_calls = 0;
void CUDART_CB on_callback(cudaStream_t, cudaError_t status, void*) {
  callback_on_other_thread = status == cudaSuccess && std::this_thread::get_id() != main_thread;
}
void CUDART_CB on_host_fn(void*) { ++host_fn_calls; }
// Holds its stream until released (or for 2 s): a call that returns while it still holds did not
// wait for the stream, whatever a loaded machine does to the caller's timing.
std::atomic<bool> hold_release{false}, hold_exited{false};
void CUDART_CB hold_stream(void*) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!hold_release.load() && seconds(t0) < 2.0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  hold_exited = true;
}
}  // namespace

int main() {
  main_thread = std::this_thread::get_id();
  check(cudaFree(nullptr) == cudaSuccess, "cudaFree(0) initializes");
  const double kernel_s = 0.2;
  const long long cycles = static_cast<long long>(kernel_s * 1.98e9);
  const size_t n = 1 << 20;

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  char* dev = nullptr;
  cudaMalloc(&dev, n);
  cudaMemset(dev, 0x11, n);
  std::vector<char> pageable(n, 0);
  dummy<<<1, 1, 0, stream>>>(1000);  // pays lazy loading
  cudaStreamSynchronize(stream);

  dummy<<<128, 128, 0, stream>>>(cycles);
  auto t0 = std::chrono::steady_clock::now();
  cudaMemcpyAsync(pageable.data(), dev, n, cudaMemcpyDefault, stream);
  check(seconds(t0) >= 0.9 * kernel_s, "pageable D2H cudaMemcpyAsync waits for the <<<>>> sleep kernel");
  check(pageable[n - 1] == 0x11, "the copy moved the bytes");

  void* args[] = {const_cast<long long*>(&cycles)};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(&dummy), dim3(1), dim3(1), args, 0, stream) == cudaSuccess,
        "cudaLaunchKernel");
  char* pinned = nullptr;
  cudaMallocHost(&pinned, n);
  cudaLaunchHostFunc(stream, hold_stream, nullptr);
  cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, stream);
  check(!hold_exited.load(), "pinned D2H cudaMemcpyAsync returns at once (while a host function holds its stream)");
  hold_release = true;
  cudaStreamAddCallback(stream, on_callback, nullptr, 0);
  cudaLaunchHostFunc(stream, on_host_fn, nullptr);
  check(host_fn_calls == 0, "host function not run before the kernel finished");
  cudaStreamSynchronize(stream);
  check(callback_on_other_thread, "callback ran on a driver thread");
  check(host_fn_calls == 1, "host function ran");
  check(pinned[0] == 0x11, "pinned copy done after synchronize");

  sleep_c<<<1, 1, 0, stream>>>(1000);  // pays lazy loading
  wait_c<<<1, 1, 0, stream>>>(1);
  cudaStreamSynchronize(stream);
  t0 = std::chrono::steady_clock::now();
  sleep_c<<<1, 1, 0, stream>>>(cycles);
  cudaStreamSynchronize(stream);
  check(seconds(t0) >= 0.9 * kernel_s, "extern \"C\" sleep kernel with an 8-byte first parameter sleeps");
  t0 = std::chrono::steady_clock::now();
  wait_c<<<1, 1, 0, stream>>>(1 << 30);
  cudaStreamSynchronize(stream);
  // 5 us; read as cycles, its argument would make it 0.54 s.
  check(seconds(t0) < 0.25, "extern \"C\" kernel with a 4-byte first parameter takes the default time");

  float* data = nullptr;
  cudaMalloc(&data, 256 * sizeof(float));
  scale<<<1, 256>>>(data, 256);  // legacy/per-thread default stream
  check(cudaGetLastError() == cudaSuccess, "<<<>>> on the default stream");
  int value = 7, back = 0;
  cudaMemcpyToSymbol(device_counter, &value, sizeof value);
  cudaMemcpyFromSymbol(&back, device_counter, sizeof back);
  check(back == 7, "__device__ variable round trip");
  check(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
  cudaFreeHost(pinned);
  cudaFree(dev);
  cudaFree(data);
  cudaStreamDestroy(stream);
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
