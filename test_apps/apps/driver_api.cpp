// The driver API without the runtime, the way CuPy, numba-cuda and Triton reach it:
// dlopen("libcuda.so.1") + cuGetProcAddress_v2 (cuda.h for the types only, no -lcuda). Built a
// second time with -DAW_DIRECT_LINK as driver_api_lcuda, which calls the exported symbols of
// libcuda directly (-lcuda).
// A sleep kernel from an embedded fatbin (cuModuleLoadData + cuModuleGetFunction, cuLaunchKernel),
// then:
//   @DRIVER_D2H_PAGEABLE  cuMemcpyDtoHAsync into malloc'd memory: blocked about the kernel's time
//   @DRIVER_D2H_PINNED    cuMemcpyDtoHAsync into cuMemAllocHost memory: only enqueues
//   @DRIVER_H2D_PAGEABLE  cuMemcpyHtoDAsync from malloc'd memory: staged
//   driver_api [cycles=1e8 (~50 ms)] [bytes=16M]
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef AW_DIRECT_LINK
#include <dlfcn.h>
#endif

#include "aw_sleep_fatbin.h"  // generated: aw_sleep_fatbin[]

#ifdef AW_DIRECT_LINK
#define AW_FN(name) static decltype(&name) p_##name = &name;
#else
#define AW_FN(name) static decltype(&name) p_##name = nullptr;
#endif
AW_FN(cuGetErrorString)
AW_FN(cuInit)
AW_FN(cuDeviceGet)
AW_FN(cuDevicePrimaryCtxRetain)
AW_FN(cuDevicePrimaryCtxRelease)
AW_FN(cuCtxSetCurrent)
#ifdef AW_DIRECT_LINK
static CUresult sync_context(CUcontext) { return cuCtxSynchronize(); }
#else
// CUDA 13: cuGetProcAddress("cuCtxSynchronize", 13000) returns cuCtxSynchronize_v2(CUcontext)
// (seen on the H200, driver 580); a pointer of the old no-argument type would pass garbage.
static decltype(&cuCtxSynchronize_v2) p_cuCtxSynchronize_v2 = nullptr;
static CUresult sync_context(CUcontext ctx) { return p_cuCtxSynchronize_v2(ctx); }
#endif
AW_FN(cuModuleLoadData)
AW_FN(cuModuleGetFunction)
AW_FN(cuModuleUnload)
AW_FN(cuMemAlloc)
AW_FN(cuMemFree)
AW_FN(cuMemAllocHost)
AW_FN(cuMemFreeHost)
AW_FN(cuMemcpyHtoD)
AW_FN(cuMemcpyHtoDAsync)
AW_FN(cuMemcpyDtoHAsync)
AW_FN(cuStreamCreate)
AW_FN(cuStreamDestroy)
AW_FN(cuStreamSynchronize)
AW_FN(cuLaunchKernel)

#define CK(call)                                                                        \
  do {                                                                                  \
    CUresult r_ = (call);                                                               \
    if (r_ != CUDA_SUCCESS) {                                                           \
      const char* s_ = "?";                                                             \
      if (p_cuGetErrorString) p_cuGetErrorString(r_, &s_);                              \
      std::fprintf(stderr, "%s:%d: %s failed: %d %s\n", __FILE__, __LINE__, #call,     \
                   int(r_), s_);                                                        \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

static long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

// argv[i] as a number: 1e8, 16M, 4K, 1G; def when absent.
static long long arg(int argc, char** argv, int i, long long def) {
  if (i >= argc) return def;
  char* end = nullptr;
  double v = std::strtod(argv[i], &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024.0;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024.0 * 1024.0;
  else if (*end) {
    std::fprintf(stderr, "bad number: %s\n", argv[i]);
    std::exit(2);
  }
  return static_cast<long long>(v);
}

#ifndef AW_DIRECT_LINK
using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
static GetProcAddress g_gpa;

static void load(const char* name, void** slot) {
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_gpa(name, slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (r != CUDA_SUCCESS || *slot == nullptr || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    std::fprintf(stderr, "cuGetProcAddress_v2(%s) failed: %d (status %d)\n", name, int(r), int(status));
    std::exit(2);
  }
}
#define AW_LOAD(name) load(#name, reinterpret_cast<void**>(&p_##name))
#endif

static bool check(const unsigned char* p, size_t n, unsigned char seed) {
  for (size_t i = 0; i < n; i += 509)
    if (p[i] != static_cast<unsigned char>(seed + i / 4096)) return false;
  return p[n - 1] == static_cast<unsigned char>(seed + (n - 1) / 4096);
}
static void fill(unsigned char* p, size_t n, unsigned char seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(seed + i / 4096);
}

int main(int argc, char** argv) {
  const long long cycles = arg(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(arg(argc, argv, 2, 16 << 20));
#ifndef AW_DIRECT_LINK
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
    return 2;
  }
  g_gpa = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!g_gpa) {
    std::fprintf(stderr, "dlsym(cuGetProcAddress_v2): %s\n", dlerror());
    return 2;
  }
  AW_LOAD(cuGetErrorString); AW_LOAD(cuInit); AW_LOAD(cuDeviceGet); AW_LOAD(cuDevicePrimaryCtxRetain);
  AW_LOAD(cuDevicePrimaryCtxRelease); AW_LOAD(cuCtxSetCurrent);
  load("cuCtxSynchronize", reinterpret_cast<void**>(&p_cuCtxSynchronize_v2)); AW_LOAD(cuModuleLoadData);
  AW_LOAD(cuModuleGetFunction); AW_LOAD(cuModuleUnload); AW_LOAD(cuMemAlloc); AW_LOAD(cuMemFree);
  AW_LOAD(cuMemAllocHost); AW_LOAD(cuMemFreeHost); AW_LOAD(cuMemcpyHtoD); AW_LOAD(cuMemcpyHtoDAsync);
  AW_LOAD(cuMemcpyDtoHAsync); AW_LOAD(cuStreamCreate); AW_LOAD(cuStreamDestroy);
  AW_LOAD(cuStreamSynchronize); AW_LOAD(cuLaunchKernel);
  std::printf("driver API: dlopen + cuGetProcAddress_v2\n");
#else
  std::printf("driver API: linked with -lcuda\n");
#endif
  CK(p_cuInit(0));
  CUdevice devnum;
  CK(p_cuDeviceGet(&devnum, 0));
  CUcontext ctx;
  CK(p_cuDevicePrimaryCtxRetain(&ctx, devnum));
  CK(p_cuCtxSetCurrent(ctx));
  CUmodule mod;
  CK(p_cuModuleLoadData(&mod, aw_sleep_fatbin));
  CUfunction fn;
  CK(p_cuModuleGetFunction(&fn, mod, "_Z12sleep_kernelx"));  // sleep_kernel(long long)
  CUstream s;
  CK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dev;
  CK(p_cuMemAlloc(&dev, bytes));
  unsigned char* pageable = static_cast<unsigned char*>(std::malloc(bytes));
  void* pinned_v = nullptr;
  CK(p_cuMemAllocHost(&pinned_v, bytes));
  unsigned char* pinned = static_cast<unsigned char*>(pinned_v);
  fill(pageable, bytes, 81);
  CK(p_cuMemcpyHtoD(dev, pageable, bytes));
  CK(sync_context(ctx));  // from pageable memory cuMemcpyHtoD may return before its DMA is done
  std::memset(pageable, 0, bytes);

  long long warm = 1000;
  void* params[] = {&warm};
  CK(p_cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));  // warm-up
  CK(p_cuStreamSynchronize(s));

  long long c = cycles;
  params[0] = &c;
  CK(p_cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  long long t0 = now_ns();
  CK(p_cuMemcpyDtoHAsync(pageable, dev, bytes, s));  // @DRIVER_D2H_PAGEABLE
  std::fprintf(stderr, "# pageable cuMemcpyDtoHAsync after a %.1f ms kernel returned after %.3f ms\n", cycles / 1.98e6, (now_ns() - t0) / 1e6);
  if (!check(pageable, bytes, 81)) {
    std::fprintf(stderr, "pageable cuMemcpyDtoHAsync: data not complete on return\n");
    return 1;
  }
  std::printf("pageable cuMemcpyDtoHAsync: complete on return\n");

  CK(p_cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  t0 = now_ns();
  CK(p_cuMemcpyDtoHAsync(pinned, dev, bytes, s));  // @DRIVER_D2H_PINNED
  std::fprintf(stderr, "# pinned cuMemcpyDtoHAsync after a %.1f ms kernel returned after %.3f ms\n", cycles / 1.98e6, (now_ns() - t0) / 1e6);
  CK(p_cuStreamSynchronize(s));
  if (!check(pinned, bytes, 81)) {
    std::fprintf(stderr, "pinned cuMemcpyDtoHAsync: wrong data\n");
    return 1;
  }
  std::printf("pinned cuMemcpyDtoHAsync: ok\n");

  fill(pageable, bytes, 82);
  t0 = now_ns();
  CK(p_cuMemcpyHtoDAsync(dev, pageable, bytes, s));  // @DRIVER_H2D_PAGEABLE
  std::fprintf(stderr, "# pageable cuMemcpyHtoDAsync returned after %.3f ms\n", (now_ns() - t0) / 1e6);
  std::memset(pageable, 0, bytes);  // the copy must have staged the source already
  CK(p_cuStreamSynchronize(s));
  CK(p_cuMemcpyDtoHAsync(pinned, dev, bytes, s));
  CK(p_cuStreamSynchronize(s));
  if (!check(pinned, bytes, 82)) {
    std::fprintf(stderr, "pageable cuMemcpyHtoDAsync: wrong data\n");
    return 1;
  }
  std::printf("pageable cuMemcpyHtoDAsync: ok\n");

  CK(p_cuMemFreeHost(pinned));
  std::free(pageable);
  CK(p_cuMemFree(dev));
  CK(p_cuStreamDestroy(s));
  CK(p_cuModuleUnload(mod));
  CK(p_cuDevicePrimaryCtxRelease(devnum));
  return 0;
}
