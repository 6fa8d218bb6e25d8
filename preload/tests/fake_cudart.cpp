// A tiny libcudart test double for the runtime-instance tests (e2e "runtimes" and "reload" modes of
// test_app.cpp): the tests copy this library to several paths and load each copy RTLD_LOCAL.
//   cudaMemset       memset only, no driver call: the runtime wrapper writes a record of its own
//   cudaMemcpyAsync  host to device through the fake driver's cuMemcpyHtoDAsync_v2, found with
//                    dlsym as the real runtime finds its driver functions (cuGetProcAddress);
//                    device to host through its cuMemcpyDtoHAsync_v2 (kinds: below)
//   cudaLaunchKernel through the fake driver's cuLaunchKernel (found the same way): the kernel's
//                    name is its handle, the kernel's arguments are not looked at
//   fake_cudart_calls()  how many of those calls this copy served
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {
std::atomic<int> g_calls{0};
using CopyFn = int (*)(unsigned long long, const void*, size_t, void*);
std::atomic<CopyFn> g_copy{nullptr};
using LaunchFn = int (*)(const void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                         void**, void**);
std::atomic<LaunchFn> g_launch{nullptr};
void* driver_fn(const char* name) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  return h ? dlsym(h, name) : nullptr;
}
struct dim3 {
  unsigned x, y, z;
};
}  // namespace

EXPORT int cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  ++g_calls;
  return 0;
}

// cudaMemcpyHostToDevice (1): the driver's result returned as it is, by a tail call (the driver
// function's return address is then the caller's); cudaMemcpyDefault (4, taken as host to device)
// and cudaMemcpyDeviceToHost (2): its result checked after the call, as the real runtime does;
// other kinds: cudaErrorInvalidValue.
EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind, void* stream) {
  ++g_calls;
  if (kind == 2) {
    static const auto to_host =
        reinterpret_cast<int (*)(void*, unsigned long long, size_t, void*)>(driver_fn("cuMemcpyDtoHAsync_v2"));
    return to_host && to_host(dst, reinterpret_cast<unsigned long long>(src), n, stream) == 0 ? 0 : 700;
  }
  if (kind != 1 && kind != 4) return 1;
  CopyFn copy = g_copy.load();
  if (!copy) {
    copy = reinterpret_cast<CopyFn>(driver_fn("cuMemcpyHtoDAsync_v2"));
    g_copy.store(copy);
  }
  if (kind == 4) return copy && copy(reinterpret_cast<unsigned long long>(dst), src, n, stream) == 0 ? 0 : 700;
  return copy ? copy(reinterpret_cast<unsigned long long>(dst), src, n, stream) : 3;
}

EXPORT int cudaLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shared, void* stream) {
  ++g_calls;
  LaunchFn launch = g_launch.load();
  if (!launch) {
    launch = reinterpret_cast<LaunchFn>(driver_fn("cuLaunchKernel"));
    g_launch.store(launch);
  }
  if (!launch) return 3;
  return launch(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, static_cast<unsigned>(shared), stream, args,
                nullptr) == 0
             ? 0
             : 98;  // cudaErrorInvalidDeviceFunction
}

EXPORT int fake_cudart_calls() { return g_calls.load(); }
