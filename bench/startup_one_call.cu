// Start-up cost of tracing (docs/performance.md): a process that makes exactly one CUDA call
// (cudaFree(0), the usual way to initialize the runtime) and exits. startup.sh times it bare and
// traced.
#include <cuda_runtime_api.h>

int main() { return cudaFree(nullptr) == cudaSuccess ? 0 : 1; }
