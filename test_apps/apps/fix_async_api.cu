// Fix pair, written as NVIDIA's CUDA sample asyncAPI (Samples/0_Introduction/asyncAPI) writes it: an
// upload, an increment kernel and a download queued on the legacy stream, an event recorded after
// them, and the host counting while it polls the event. The sample allocates the host buffer with
// cudaMallocHost (the fix, --fixed); the flagged variant is the same code with malloc
// (pageable-async-copy twice: the upload staged, the download waiting for the kernel), so the
// counting overlaps nothing. Both variants allocate both buffers.
//   fix_async_api [--fixed] [ints=16M] [repeats=4]
#include "fix_pair.h"

__global__ void increment_kernel(int* g_data, int inc_value) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  g_data[idx] = g_data[idx] + inc_value;
}

static bool correct_output(const int* data, int n, int x) {
  for (int i = 0; i < n; i++)
    if (data[i] != x) return false;
  return true;
}

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const int n = int(aw::arg_num(argc, argv, a, 16 * 1024 * 1024));
  const int repeats = int(aw::arg_num(argc, argv, a + 1, 4));
  const size_t nbytes = size_t(n) * sizeof(int);
  const int value = 26;
  cudaDeviceProp prop;
  AW_CHECK(cudaGetDeviceProperties(&prop, 0));
  const bool simulated = std::strstr(prop.name, "asyncwatch") != nullptr;  // runs no device code
  int* pinned = nullptr;
  AW_CHECK(cudaMallocHost(&pinned, nbytes));
  int* pageable = static_cast<int*>(malloc(nbytes));
  int* h_a = fixed ? pinned : pageable;
  std::memset(pinned, 0, nbytes);
  std::memset(pageable, 0, nbytes);
  int* d_a = nullptr;
  AW_CHECK(cudaMalloc(&d_a, nbytes));
  AW_CHECK(cudaMemset(d_a, 255, nbytes));
  const dim3 threads(512, 1);
  const dim3 blocks(unsigned(n) / threads.x, 1);
  cudaEvent_t start, stop;
  AW_CHECK(cudaEventCreate(&start));
  AW_CHECK(cudaEventCreate(&stop));
  increment_kernel<<<1, 1>>>(d_a, 0);  // warm-up: module loading is not part of the pair
  AW_CHECK(cudaDeviceSynchronize());
  unsigned long counter = 0;
  bool ok = true;
  const long long t0 = aw::now_ns();
  for (int r = 0; r < repeats; ++r) {
    std::memset(h_a, 0, nbytes);
    AW_CHECK(cudaEventRecord(start, 0));
    AW_CHECK(cudaMemcpyAsync(d_a, h_a, nbytes, cudaMemcpyHostToDevice, 0));  // @UPLOAD
    increment_kernel<<<blocks, threads, 0, 0>>>(d_a, value);
    AW_CHECK(cudaMemcpyAsync(h_a, d_a, nbytes, cudaMemcpyDeviceToHost, 0));  // @DOWNLOAD
    AW_CHECK(cudaEventRecord(stop, 0));
    while (cudaEventQuery(stop) == cudaErrorNotReady) counter++;  // the CPU's own work, meanwhile
    ok = ok && (simulated || correct_output(h_a, n, value));
  }
  aw::timing("loop", aw::now_ns() - t0);
  float gpu_ms = 0;
  AW_CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  AW_EXPECT(ok, "increment result wrong");
  std::printf("%d rounds of %d ints (%s): ok, CPU counted to %lu meanwhile\n", repeats, n,
              fixed ? "cudaMallocHost" : "malloc", counter);
  AW_CHECK(cudaEventDestroy(start));
  AW_CHECK(cudaEventDestroy(stop));
  AW_CHECK(cudaFreeHost(pinned));
  free(pageable);
  AW_CHECK(cudaFree(d_a));
  return 0;
}
