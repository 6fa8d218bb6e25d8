// A tiny libcudart test double for the runtime-instance tests (e2e "runtimes" and "reload" modes of
// test_app.cpp): the tests copy this library to several paths and load each copy RTLD_LOCAL.
//   cudaMemset       memset only, no driver call: the runtime wrapper writes a record of its own
//   cudaMemcpyAsync  host to device through the fake driver's cuMemcpyHtoDAsync_v2, found with
//                    dlsym as the real runtime finds its driver functions (cuGetProcAddress)
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
}  // namespace

EXPORT int cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  ++g_calls;
  return 0;
}

EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind, void* stream) {
  ++g_calls;
  if (kind != 1) return 1;  // cudaMemcpyHostToDevice only: cudaErrorInvalidValue otherwise
  CopyFn copy = g_copy.load();
  if (!copy) {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    copy = h ? reinterpret_cast<CopyFn>(dlsym(h, "cuMemcpyHtoDAsync_v2")) : nullptr;
    g_copy.store(copy);
  }
  return copy ? copy(reinterpret_cast<unsigned long long>(dst), src, n, stream) : 3;
}

EXPORT int fake_cudart_calls() { return g_calls.load(); }
