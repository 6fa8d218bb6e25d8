// Real-GPU check of libasyncwatch (not built by CMake; compiled with nvcc on the GPU machine):
// the seed's pattern (a sleep kernel, then H2D/D2H cudaMemcpyAsync from pageable and pinned
// memory), a host function, and the per-call overhead loops of the spec's targets.
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void sleep_kernel(long long ns) {
  long long start = clock64();
  while (clock64() - start < ns) {}
}
__global__ void empty_kernel() {}

static double us_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? atol(argv[1]) : 64) << 20;  // MiB
  int iters = argc > 2 ? atoi(argv[2]) : 20000;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  char* dev;
  cudaMalloc(&dev, bytes);
  char* pageable = static_cast<char*>(malloc(bytes));
  memset(pageable, 1, bytes);
  char* pinned;
  cudaMallocHost(&pinned, bytes);
  for (int pass = 0; pass < 2; ++pass) {
    char* host = pass == 0 ? pageable : pinned;
    sleep_kernel<<<1, 1, 0, s>>>(200000000);  // ~0.1 s at ~2 GHz
    auto t0 = std::chrono::steady_clock::now();
    cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
    double h2d = us_since(t0);
    sleep_kernel<<<1, 1, 0, s>>>(200000000);
    t0 = std::chrono::steady_clock::now();
    cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s);
    double d2h = us_since(t0);
    cudaStreamSynchronize(s);
    printf("%s: H2D returned after %.0f us, D2H after %.0f us\n", pass ? "pinned" : "pageable", h2d, d2h);
  }
  cudaLaunchHostFunc(
      s, [](void*) { usleep(1000); }, nullptr);
  cudaStreamSynchronize(s);
  // Overhead loops: 64-byte pinned copies and empty launches.
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 1, 0, s>>>();
  cudaStreamSynchronize(s);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) cudaMemcpyAsync(dev, pinned, 64, cudaMemcpyHostToDevice, s);
  double copy_us = us_since(t0) / iters;
  cudaStreamSynchronize(s);
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) empty_kernel<<<1, 1, 0, s>>>();
  double launch_us = us_since(t0) / iters;
  cudaStreamSynchronize(s);
  printf("per call: pinned 64 B cudaMemcpyAsync %.3f us, launch %.3f us\n", copy_us, launch_us);
  printf("last error: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
