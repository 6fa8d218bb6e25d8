// libaw_nodebug.so: built with -g0 (see CMakeLists.txt); nodebug_copy.h says why.
#include "nodebug_copy.h"

#include <cuda_runtime_api.h>

extern "C" int aw_nodebug_roundtrip(void* host, size_t n) {
  void* dev = nullptr;
  if (cudaMalloc(&dev, n) != cudaSuccess) return 2;
  bool ok = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0) == cudaSuccess &&
            cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, 0) == cudaSuccess &&
            cudaStreamSynchronize(0) == cudaSuccess;
  return cudaFree(dev) == cudaSuccess && ok ? 0 : 2;
}
