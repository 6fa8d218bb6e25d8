// A tiny libcuda.so.1 test double: just enough of the driver API, with the real exported names,
// for end-to-end tests of libasyncwatch without a GPU or the simulator. "Device memory" is host
// memory from malloc; copies are memcpy; host functions run on a driver thread, as in CUDA.
// FAKE_CUDA_COPY_SLEEP_US makes every copy block for that long (FAKE_CUDA_SYNC_SLEEP_US every
// cuStreamSynchronize); FAKE_CUDA_SYNC_FAIL_FROM=N makes the process's cuStreamSynchronize calls from
// the Nth (0-based) on return CUDA_ERROR_UNKNOWN (999); FAKE_CUDA_INCOMPLETE=1 makes
// cuEventQuery report CUDA_ERROR_NOT_READY. FAKE_CUDA_NEEDS_FD=1: the first cuMemAlloc opens a
// descriptor and keeps it, as the real driver opens /dev/nvidia* (CUDA_ERROR_OPERATING_SYSTEM (304)
// when none is free). FAKE_CUDA_CANCEL_POINT=1: every copy is a cancellation point (it calls
// pthread_testcancel, as a driver call may reach one inside).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#define EXPORT extern "C" __attribute__((visibility("default")))

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;

namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t> g_pinned;  // host ranges pinned through the fake
std::map<uintptr_t, size_t> g_device;  // "device" allocations
bool g_initialized = false;
int g_capturing = 0;

int kind_of(uintptr_t p) {  // 0 unregistered, 1 host (pinned), 2 device
  std::lock_guard<std::mutex> l(g_mu);
  for (auto* m : {&g_pinned, &g_device}) {
    auto it = m->upper_bound(p);
    if (it != m->begin()) {
      --it;
      if (p < it->first + it->second) return m == &g_pinned ? 1 : 2;
    }
  }
  return 0;
}

// Read at load time, not in a function-local static: a copy may be made by a signal handler that
// interrupted the first copy (a guarded static's initialization would deadlock there).
const bool g_cancel_point = getenv("FAKE_CUDA_CANCEL_POINT") != nullptr;
void copy_delay() {
  if (const char* s = getenv("FAKE_CUDA_COPY_SLEEP_US")) usleep(static_cast<useconds_t>(atoi(s)));
  if (g_cancel_point) pthread_testcancel();
}

int g_device_fd = -1;

// One driver thread runs host functions in order, like a stream's callback thread.
struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> q;
  bool started = false;
  void push(std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu);
    if (!started) {
      started = true;
      std::thread([this] {
        for (;;) {
          std::function<void()> f2;
          {
            std::unique_lock<std::mutex> l2(mu);
            cv.wait(l2, [&] { return !q.empty(); });
            f2 = std::move(q.front());
          }
          f2();
          {
            std::lock_guard<std::mutex> l2(mu);
            q.pop_front();
          }
          cv.notify_all();
        }
      }).detach();
    }
    q.push_back(std::move(f));
    cv.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return q.empty(); });
  }
};
Worker& g_worker = *new Worker;  // never destroyed: its thread outlives exit()

// Fork safety of the fake itself (the tests fork from multithreaded processes): the forking thread
// holds g_mu across fork(), so the child never inherits it locked by a thread it does not have.
const int g_fork_guard = pthread_atfork([] { g_mu.lock(); }, [] { g_mu.unlock(); }, [] { g_mu.unlock(); });

}  // namespace

EXPORT CUresult cuInit(unsigned) {
  g_initialized = true;
  return 0;
}
EXPORT CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
EXPORT CUresult cuCtxGetCurrent(void** ctx) {
  *ctx = g_initialized ? reinterpret_cast<void*>(0x1000) : nullptr;
  return 0;
}
EXPORT CUresult cuCtxGetDevice(int* d) {
  if (!g_initialized) return 201;
  *d = 0;
  return 0;
}
EXPORT CUresult cuDeviceGetName(char* name, int len, int) {
  snprintf(name, static_cast<size_t>(len), "asyncwatch fake device");
  return 0;
}

#define COPY_BODY(dst, src, n)                                                   \
  do {                                                                           \
    copy_delay();                                                                \
    memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); \
    errno = 77;                                                                  \
    return 0;                                                                    \
  } while (0)
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, CUstream) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* s, size_t n, CUstream) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, CUstream) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* d, CUdeviceptr s, size_t n, CUstream) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) { COPY_BODY(d, s, n); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
  memset(reinterpret_cast<void*>(d), v, n);
  return 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  if (g_device_fd < 0 && getenv("FAKE_CUDA_NEEDS_FD")) {
    g_device_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (g_device_fd < 0) return 304;  // CUDA_ERROR_OPERATING_SYSTEM
  }
  void* m = malloc(n);
  std::lock_guard<std::mutex> l(g_mu);
  g_device[reinterpret_cast<uintptr_t>(m)] = n;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return 0;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  std::lock_guard<std::mutex> l(g_mu);
  g_device.erase(static_cast<uintptr_t>(p));
  free(reinterpret_cast<void*>(p));
  return 0;
}
EXPORT CUresult cuMemHostAlloc(void** p, size_t n, unsigned) {
  *p = malloc(n);
  std::lock_guard<std::mutex> l(g_mu);
  g_pinned[reinterpret_cast<uintptr_t>(*p)] = n;
  return 0;
}
EXPORT CUresult cuMemAllocHost_v2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
EXPORT CUresult cuMemFreeHost(void* p) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_pinned.erase(reinterpret_cast<uintptr_t>(p));
  }
  free(p);
  return 0;
}
EXPORT CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned) {
  std::lock_guard<std::mutex> l(g_mu);
  g_pinned[reinterpret_cast<uintptr_t>(p)] = n;
  return 0;
}
EXPORT CUresult cuMemHostUnregister(void* p) {
  std::lock_guard<std::mutex> l(g_mu);
  return g_pinned.erase(reinterpret_cast<uintptr_t>(p)) ? 0 : 1;
}
// FAKE_CUDA_QUERY_SIGNAL=N: each pointer query (made by the library, in its own code) queues signal
// N with the value 1234 to the calling thread, which the library must defer until it returns.
const int g_query_signal = getenv("FAKE_CUDA_QUERY_SIGNAL") ? atoi(getenv("FAKE_CUDA_QUERY_SIGNAL")) : 0;
EXPORT CUresult cuPointerGetAttributes(unsigned n, int* attrs, void** data, CUdeviceptr p) {
  if (g_query_signal) {
    sigval v{};
    v.sival_int = 1234;
    pthread_sigqueue(pthread_self(), g_query_signal, v);
  }
  int k = kind_of(static_cast<uintptr_t>(p));
  for (unsigned i = 0; i < n; ++i) {
    if (attrs[i] == 2)
      *static_cast<unsigned*>(data[i]) = static_cast<unsigned>(k);
    else if (attrs[i] == 8)
      *static_cast<int*>(data[i]) = 0;
  }
  return 0;
}

// Live events, reported at exit with FAKE_CUDA_REPORT_EVENTS=1 (tests of the library's cleanup).
std::atomic<long> g_live_events{0};
struct EventReport {
  ~EventReport() {
    if (getenv("FAKE_CUDA_REPORT_EVENTS")) fprintf(stderr, "fake_cuda: live events %ld\n", g_live_events.load());
  }
} g_event_report;
EXPORT CUresult cuEventCreate(void** e, unsigned) {
  *e = malloc(8);
  ++g_live_events;
  return 0;
}
EXPORT CUresult cuEventDestroy_v2(void* e) {
  if (!e) return 400;
  free(e);
  --g_live_events;
  return 0;
}
EXPORT CUresult cuEventRecord(void*, CUstream) { return 0; }
EXPORT CUresult cuEventRecord_ptsz(void*, CUstream) { return 0; }
EXPORT CUresult cuEventQuery(void*) { return getenv("FAKE_CUDA_INCOMPLETE") ? 600 : 0; }
EXPORT CUresult cuStreamIsCapturing(CUstream, int* s) {
  *s = g_capturing ? 1 : 0;
  return 0;
}
EXPORT CUresult cuStreamBeginCapture_v2(CUstream, unsigned) {
  g_capturing = 1;
  return 0;
}
EXPORT CUresult cuStreamEndCapture(CUstream, void** g) {
  g_capturing = 0;
  *g = nullptr;
  return 0;
}
EXPORT CUresult cuStreamCreate(CUstream* s, unsigned) {
  *s = malloc(8);
  return 0;
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  free(s);
  return 0;
}
EXPORT CUresult cuStreamSynchronize(CUstream) {
  g_worker.drain();
  if (const char* s = getenv("FAKE_CUDA_SYNC_SLEEP_US")) usleep(static_cast<useconds_t>(atoi(s)));
  static std::atomic<long> calls{0};
  const long n = calls.fetch_add(1);
  if (const char* s = getenv("FAKE_CUDA_SYNC_FAIL_FROM"); s && n >= atol(s)) return static_cast<CUresult>(999);
  return 0;
}
EXPORT CUresult cuProfilerStart() { return 0; }
EXPORT CUresult cuProfilerStop() { return 0; }

EXPORT CUresult cuCtxSynchronize() {
  g_worker.drain();
  return 0;
}
// CUDA 13: cuGetProcAddress("cuCtxSynchronize", 13000) answers this one (the table prefers _v2).
EXPORT CUresult cuCtxSynchronize_v2(void*) {
  g_worker.drain();
  return 0;
}
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream, void*, const void*, const void*, size_t, unsigned) {
  g_capturing = 1;
  return 0;
}

EXPORT CUresult cuFuncGetName(const char** name, void* f) {
  if (!f) return 1;
  *name = static_cast<const char*>(f);  // tests pass the kernel's name as its handle
  return 0;
}
// FAKE_CUDA_LAUNCH_NESTED=1: each launch also makes a copy through the exported cuMemcpyHtoDAsync_v2
// (the driver calling one of its own entry points: not an application call).
const bool g_launch_nested = getenv("FAKE_CUDA_LAUNCH_NESTED") != nullptr;
EXPORT CUresult cuLaunchKernel(void* f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                               void**, void**) {
  if (g_launch_nested) {
    static char host[8], dev[8];
    using CopyFn = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
    // Through the symbol's lookup, as a call of the exported name from inside the library resolves.
    static const auto copy = reinterpret_cast<CopyFn>(dlsym(RTLD_DEFAULT, "cuMemcpyHtoDAsync_v2"));
    if (!copy || copy(reinterpret_cast<CUdeviceptr>(dev), host, sizeof host, nullptr) != 0) return 2;
  }
  return f ? 0 : 1;
}
EXPORT CUresult cuLaunchHostFunc(CUstream, void (*fn)(void*), void* data) {
  g_worker.push([fn, data] { fn(data); });
  return 0;
}
EXPORT CUresult cuStreamAddCallback(CUstream s, void (*cb)(CUstream, CUresult, void*), void* data, unsigned) {
  g_worker.push([s, cb, data] { cb(s, 0, data); });
  return 0;
}

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, unsigned long long flags, int* status);
EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int v, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, v, flags, nullptr);
}

namespace {
struct Entry {
  const char* name;
  void* fn;
};
#define E(f) \
  { #f, reinterpret_cast < void*>(&f) }
const Entry kEntries[] = {
    E(cuInit),
    E(cuDriverGetVersion),
    E(cuCtxGetCurrent),
    E(cuCtxGetDevice),
    E(cuDeviceGetName),
    E(cuMemcpyHtoDAsync_v2),
    E(cuMemcpyHtoDAsync_v2_ptsz),
    E(cuMemcpyDtoHAsync_v2),
    E(cuMemcpyDtoHAsync_v2_ptsz),
    E(cuMemcpyHtoD_v2),
    E(cuMemcpyAsync),
    E(cuMemsetD8Async),
    E(cuMemAlloc_v2),
    E(cuMemFree_v2),
    E(cuMemHostAlloc),
    E(cuMemAllocHost_v2),
    E(cuMemFreeHost),
    E(cuMemHostRegister_v2),
    E(cuMemHostUnregister),
    E(cuPointerGetAttributes),
    E(cuEventCreate),
    E(cuEventDestroy_v2),
    E(cuEventRecord),
    E(cuEventQuery),
    E(cuStreamIsCapturing),
    E(cuStreamBeginCapture_v2),
    E(cuStreamEndCapture),
    E(cuStreamCreate),
    E(cuStreamDestroy_v2),
    E(cuStreamSynchronize),
    E(cuCtxSynchronize),
    E(cuCtxSynchronize_v2),
    E(cuStreamBeginCaptureToGraph),
    E(cuFuncGetName),
    E(cuLaunchKernel),
    E(cuLaunchHostFunc),
    E(cuStreamAddCallback),
    E(cuGetProcAddress),
    E(cuGetProcAddress_v2),
};
#undef E
void* lookup(const std::string& name) {
  for (const Entry& e : kEntries)
    if (name == e.name) return e.fn;
  return nullptr;
}
}  // namespace

// Like the driver: picks the newest ABI (_v2) and, with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// (flags 2), the _ptsz/_ptds variant, from a table (not dlsym), returning exact exported symbols.
EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, unsigned long long flags, int* status) {
  std::string base(symbol);
  void* f = nullptr;
  if (base == "cuGetProcAddress") f = lookup("cuGetProcAddress_v2");
  const char* const per_thread[] = {"_v2_ptsz", "_v2_ptds", "_ptsz", "_ptds"};
  if (!f && (flags & 2))
    for (const char* s : per_thread)
      if ((f = lookup(base + s))) break;
  if (!f) f = lookup(base + "_v2");
  if (!f) f = lookup(base);
  *pfn = f;
  if (status) *status = f ? 0 : 1;
  return f ? 0 : 500;
}
