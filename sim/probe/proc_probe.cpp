// A measuring tool for the GPU machine, not a test: an LD_PRELOAD library that logs which driver entry
// points a program (the real libcudart, static or shared) asks cuGetProcAddress for (name, version,
// flags, the exported symbol handed out), and every call of a chosen set of entry points, with the
// program's phase markers (aw_probe_mark) in between. The simulator's runtime and driver model these
// choices (docs/simulator.md, "Checked on a GPU"); run_probe.sh runs it there.
//   AW_PROBE_LOG=/path/log LD_PRELOAD=libaw_proc_probe.so ./program
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

std::mutex g_log_mutex;
FILE* g_log = nullptr;

void logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char* fmt, ...) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (!g_log) {
    const char* path = std::getenv("AW_PROBE_LOG");
    g_log = path ? std::fopen(path, "a") : stderr;
    if (!g_log) g_log = stderr;
  }
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(g_log, fmt, ap);
  va_end(ap);
  std::fflush(g_log);
}

using DlsymFn = void* (*)(void*, const char*);
DlsymFn real_dlsym() {
  static DlsymFn fn = [] {
    auto f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!f) f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    return f;
  }();
  return fn;
}

// A logging wrapper for an entry point of type F.
template <int Id, typename F>
struct Wrap;
template <int Id, typename R, typename... A>
struct Wrap<Id, R(CUDAAPI*)(A...)> {
  static inline R(CUDAAPI* real)(A...) = nullptr;
  static inline const char* name = nullptr;
  static R CUDAAPI call(A... a) {
    logf("call %s tid=%ld\n", name, static_cast<long>(gettid()));
    return real(a...);
  }
};

struct Hook {
  const char* symbol;  // the exact exported name cuGetProcAddress returned
  void* wrapper;
  void** real;
  const char** name;
};

#define H(id, sym, proto)                                                                              \
  Hook {                                                                                               \
    sym, reinterpret_cast<void*>(&Wrap<id, decltype(&proto)>::call),                                   \
        reinterpret_cast<void**>(&Wrap<id, decltype(&proto)>::real), &Wrap<id, decltype(&proto)>::name \
  }

Hook g_hooks[] = {
    H(1, "cuMemcpyAsync", cuMemcpyAsync),
    H(2, "cuMemcpyAsync_ptsz", cuMemcpyAsync),
    H(3, "cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync_v2),
    H(4, "cuMemcpyHtoDAsync_v2_ptsz", cuMemcpyHtoDAsync_v2),
    H(5, "cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync_v2),
    H(6, "cuMemcpyDtoHAsync_v2_ptsz", cuMemcpyDtoHAsync_v2),
    H(7, "cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync_v2),
    H(8, "cuMemcpyDtoDAsync_v2_ptsz", cuMemcpyDtoDAsync_v2),
    H(9, "cuMemcpy2DAsync_v2", cuMemcpy2DAsync_v2),
    H(10, "cuMemcpy2DAsync_v2_ptsz", cuMemcpy2DAsync_v2),
    H(11, "cuMemcpy3DAsync_v2", cuMemcpy3DAsync_v2),
    H(12, "cuMemcpy3DAsync_v2_ptsz", cuMemcpy3DAsync_v2),
    H(13, "cuGraphAddMemcpyNode", cuGraphAddMemcpyNode),
    H(14, "cuGraphAddKernelNode_v2", cuGraphAddKernelNode_v2),
    H(15, "cuGraphAddMemsetNode", cuGraphAddMemsetNode),
    H(16, "cuGraphAddHostNode", cuGraphAddHostNode),
    H(17, "cuGraphAddNode_v2", cuGraphAddNode_v2),
    H(18, "cuStreamGetCaptureInfo_v3", cuStreamGetCaptureInfo_v3),
    H(19, "cuStreamGetCaptureInfo_v3_ptsz", cuStreamGetCaptureInfo_v3),
    H(20, "cuStreamUpdateCaptureDependencies_v2", cuStreamUpdateCaptureDependencies_v2),
    H(21, "cuStreamUpdateCaptureDependencies_v2_ptsz", cuStreamUpdateCaptureDependencies_v2),
    H(22, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    H(23, "cuGraphInstantiateWithParams", cuGraphInstantiateWithParams),
    H(24, "cuGraphInstantiateWithParams_ptsz", cuGraphInstantiateWithParams),
    H(25, "cuGraphLaunch", cuGraphLaunch),
    H(26, "cuGraphLaunch_ptsz", cuGraphLaunch),
    H(27, "cuGraphExecMemcpyNodeSetParams", cuGraphExecMemcpyNodeSetParams),
    H(28, "cuGraphExecUpdate_v2", cuGraphExecUpdate_v2),
    H(29, "cuMemPrefetchAsync_v2", cuMemPrefetchAsync_v2),
    H(30, "cuMemPrefetchAsync_v2_ptsz", cuMemPrefetchAsync_v2),
    H(31, "cuMemcpyBatchAsync_v2", cuMemcpyBatchAsync_v2),
    H(32, "cuMemcpyBatchAsync_v2_ptsz", cuMemcpyBatchAsync_v2),
    H(33, "cuMemcpy3DBatchAsync_v2", cuMemcpy3DBatchAsync_v2),
    H(34, "cuMemcpy3DBatchAsync_v2_ptsz", cuMemcpy3DBatchAsync_v2),
    H(35, "cuStreamAttachMemAsync", cuStreamAttachMemAsync),
    H(36, "cuStreamAttachMemAsync_ptsz", cuStreamAttachMemAsync),
    H(37, "cuMemAllocAsync", cuMemAllocAsync),
    H(38, "cuMemAllocAsync_ptsz", cuMemAllocAsync),
    H(39, "cuMemFreeAsync", cuMemFreeAsync),
    H(40, "cuMemFreeAsync_ptsz", cuMemFreeAsync),
    H(41, "cuMemcpyPeerAsync", cuMemcpyPeerAsync),
    H(42, "cuMemcpyPeerAsync_ptsz", cuMemcpyPeerAsync),
    H(43, "cuMemcpy3DPeerAsync", cuMemcpy3DPeerAsync),
    H(44, "cuMemcpy3DPeerAsync_ptsz", cuMemcpy3DPeerAsync),
    H(45, "cuLaunchKernel", cuLaunchKernel),
    H(46, "cuLaunchKernel_ptsz", cuLaunchKernel),
    H(47, "cuStreamBeginCapture_v2", cuStreamBeginCapture_v2),
    H(48, "cuStreamBeginCapture_v2_ptsz", cuStreamBeginCapture_v2),
    H(49, "cuStreamEndCapture", cuStreamEndCapture),
    H(50, "cuStreamEndCapture_ptsz", cuStreamEndCapture),
    H(51, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    H(52, "cuCtxCreate_v4", cuCtxCreate_v4),
    H(53, "cuInit", cuInit),
    H(54, "cuLibraryLoadData", cuLibraryLoadData),
    H(55, "cuLibraryGetKernel", cuLibraryGetKernel),
    H(56, "cuMemsetD8Async", cuMemsetD8Async),
    H(57, "cuMemsetD8Async_ptsz", cuMemsetD8Async),
    H(58, "cuLaunchHostFunc", cuLaunchHostFunc),
    H(59, "cuLaunchHostFunc_ptsz", cuLaunchHostFunc),
    H(60, "cuMemcpyPeer", cuMemcpyPeer),
    H(61, "cuMemcpy3DPeer", cuMemcpy3DPeer),
    H(62, "cuMemcpy2D_v2", cuMemcpy2D_v2),
    H(63, "cuMemcpy3D_v2", cuMemcpy3D_v2),
    H(64, "cuCtxSetCurrent", cuCtxSetCurrent),
    H(65, "cuKernelGetFunction", cuKernelGetFunction),
};

void* maybe_wrap(void* fn) {
  Dl_info info{};
  if (!fn || !dladdr(fn, &info) || !info.dli_sname) return fn;
  for (Hook& h : g_hooks) {
    if (std::strcmp(h.symbol, info.dli_sname) != 0) continue;
    *h.real = fn;
    *h.name = h.symbol;
    return h.wrapper;
  }
  return fn;
}

using GetProcV2 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);
GetProcV2 g_real_v2 = nullptr;
GetProcV1 g_real_v1 = nullptr;

CUresult CUDAAPI probe_get_proc_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
CUresult CUDAAPI probe_get_proc_v1(const char*, void**, int, cuuint64_t);

void* after_lookup(const char* symbol, void* fn, int version, cuuint64_t flags, CUresult r) {
  Dl_info info{};
  const char* got = fn && dladdr(fn, &info) && info.dli_sname ? info.dli_sname : "-";
  logf("proc %s %d %llu -> %s (%d)\n", symbol ? symbol : "(null)", version, static_cast<unsigned long long>(flags), got,
       static_cast<int>(r));
  if (!fn) return fn;
  if (std::strcmp(got, "cuGetProcAddress_v2") == 0) return reinterpret_cast<void*>(&probe_get_proc_v2);
  if (std::strcmp(got, "cuGetProcAddress") == 0) return reinterpret_cast<void*>(&probe_get_proc_v1);
  return maybe_wrap(fn);
}

CUresult CUDAAPI probe_get_proc_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult* status) {
  CUresult r = g_real_v2(symbol, pfn, version, flags, status);
  if (pfn) *pfn = after_lookup(symbol, *pfn, version, flags, r);
  return r;
}

CUresult CUDAAPI probe_get_proc_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  CUresult r = g_real_v1 ? g_real_v1(symbol, pfn, version, flags) : g_real_v2(symbol, pfn, version, flags, nullptr);
  if (pfn) *pfn = after_lookup(symbol, *pfn, version, flags, r);
  return r;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  void* fn = real_dlsym()(handle, name);
  if (!fn) return fn;  // found, so `name` was a valid string (glibc declares it nonnull)
  if (std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    g_real_v2 = reinterpret_cast<GetProcV2>(fn);
    logf("dlsym %s\n", name);
    return reinterpret_cast<void*>(&probe_get_proc_v2);
  }
  if (std::strcmp(name, "cuGetProcAddress") == 0) {
    g_real_v1 = reinterpret_cast<GetProcV1>(fn);
    logf("dlsym %s\n", name);
    return reinterpret_cast<void*>(&probe_get_proc_v1);
  }
  if (std::strncmp(name, "cu", 2) == 0) logf("dlsym %s\n", name);
  return fn;
}

// Programs call this (found with dlsym(RTLD_DEFAULT, "aw_probe_mark")) between the phases they measure.
extern "C" __attribute__((visibility("default"))) void aw_probe_mark(const char* what) { logf("mark %s\n", what); }
