// One small program per behaviour, selected by argv[1]; runs under LD_PRELOAD=libasyncwatch.so
// against the fake libcuda (tests/fake_cuda.cpp). It reaches the driver the ways real programs
// do: linked directly (-lcuda), or dlopen + dlsym("cuGetProcAddress_v2") like the CUDA runtime.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;

extern "C" {
CUresult cuInit(unsigned);
CUresult cuStreamBeginCaptureToGraph(CUstream, void*, const void*, const void*, size_t, unsigned);
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemHostAlloc(void**, size_t, unsigned);
CUresult cuMemFreeHost(void*);
CUresult cuMemHostRegister_v2(void*, size_t, unsigned);
CUresult cuMemHostUnregister(void*);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void**, void**);
CUresult cuLaunchHostFunc(CUstream, void (*)(void*), void*);
CUresult cuStreamAddCallback(CUstream, void (*)(CUstream, CUresult, void*), void*, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, unsigned);
CUresult cuStreamEndCapture(CUstream, void**);
CUresult cuStreamCreate(CUstream*, unsigned);
}

#define CHECK(x)                                                   \
  do {                                                             \
    CUresult r_ = (x);                                             \
    if (r_) {                                                      \
      fprintf(stderr, "%s failed: %d\n", #x, r_);                  \
      exit(3);                                                     \
    }                                                              \
  } while (0)

static uint64_t now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

static int copies(int n, size_t bytes = 64) {
  CHECK(cuInit(0));
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> host(4096, 1);
  for (int i = 0; i < n; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), bytes, nullptr));
  return 0;
}

using GetProc = CUresult (*)(const char*, void**, int, unsigned long long, int*);

// Stands in for a statically linked runtime: every application call site reaches the driver
// from this one place, at the same stack depth.
// Several layers deep, as the runtime is: the first return addresses above the driver call are
// then the same for every application call site.
template <int Layer>
__attribute__((noinline)) CUresult runtime_layer(CUdeviceptr d, const void* src, size_t n) {
  volatile char pad[32] = {};  // a frame of its own, as the runtime's functions have
  CUresult r;
  if constexpr (Layer == 0) r = cuMemcpyHtoDAsync_v2(d, src, n + pad[0], nullptr);
  else r = runtime_layer<Layer - 1>(d, src, n + pad[0]);
  asm volatile("" ::: "memory");
  return r;
}
__attribute__((noinline)) CUresult runtime_like_copy(CUdeviceptr d, const void* src, size_t n) {
  return runtime_layer<6>(d, src, n);
}

// Read through a volatile so the compiler cannot see it is null and emit a trap instead of the store.
int* volatile g_bad_pointer = nullptr;

// Waits for `pid` up to `seconds`; kills it after that. Returns its wait status, or -1 on timeout.
static int wait_with_timeout(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 1000; ++i) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0) return -2;
    usleep(1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// mtforks THREADS KIDS CALLS [ALLOC_EVERY]: fork() from a multithreaded process. THREADS threads
// make copies continuously (thread t: 70+t bytes, pageable and pinned alternating, and a pinned
// cuMemHostAlloc + cuMemFreeHost every ALLOC_EVERY copies), so that the library's classifier lock,
// its stack interning, the trace writer and the fake driver's lock are in use when a fork happens.
// Meanwhile the main thread forks KIDS children, one after the other, each after the threads made
// 2,000 more copies. Child k makes CALLS copies of 100+k bytes (pageable and pinned) and leaves
// through _exit(0); a child that has not finished after 10 s is killed (SIGALRM) and counted bad.
// The main thread makes 1,000 copies of 64 bytes before the threads start. stdout: the exact
// number of copies each thread made, then the number of bad children.
static int mt_forks(int nthreads, int kids, int calls, int alloc_every) {
  alarm(60);  // a deadlock in the parent ends it with SIGALRM
  copies(1000, 64);
  std::atomic<bool> stop{false};
  // Once every child is forked, each thread stops after 20,000 more copies at most (the parent's
  // trace stays bounded while it waits for a child that hangs).
  std::atomic<long> more_after_forks{-1};
  std::vector<std::atomic<long>> made(static_cast<size_t>(nthreads));
  std::vector<std::thread> ts;
  for (int t = 0; t < nthreads; ++t)
    ts.emplace_back([t, alloc_every, &stop, &made, &more_after_forks] {
      CUdeviceptr d;
      CHECK(cuMemAlloc_v2(&d, 4096));
      std::vector<char> pageable(4096);
      void* pinned;
      CHECK(cuMemHostAlloc(&pinned, 4096, 0));
      const size_t bytes = static_cast<size_t>(70 + t);
      long i = 0;
      long limit = -1;
      while (!stop.load(std::memory_order_relaxed)) {
        if (limit < 0 && more_after_forks.load(std::memory_order_relaxed) >= 0)
          limit = i + more_after_forks.load(std::memory_order_relaxed);
        if (limit >= 0 && i >= limit) break;
        if (i % alloc_every == alloc_every - 1) {  // the classifier's registry changes (its lock, its sequence count)
          void* tmp;
          CHECK(cuMemHostAlloc(&tmp, 256, 0));
          CHECK(cuMemFreeHost(tmp));
        }
        CHECK(cuMemcpyHtoDAsync_v2(d, (i & 1) ? pinned : static_cast<void*>(pageable.data()), bytes, nullptr));
        made[static_cast<size_t>(t)].store(++i, std::memory_order_relaxed);
      }
    });
  auto total = [&] {
    long s = 0;
    for (auto& m : made) s += m.load(std::memory_order_relaxed);
    return s;
  };
  std::vector<pid_t> pids;
  for (int k = 0; k < kids; ++k) {
    // Let every thread get going (and the trace grow) between forks.
    long before = total();
    while (total() < before + 2000) std::this_thread::yield();
    pid_t pid = fork();
    if (pid < 0) return 11;
    if (pid == 0) {
      alarm(10);  // not inherited: a deadlocked child ends itself
      CUdeviceptr d;
      CHECK(cuMemAlloc_v2(&d, 4096));
      std::vector<char> pageable(4096);
      void* pinned;
      CHECK(cuMemHostAlloc(&pinned, 4096, 0));
      for (int i = 0; i < calls; ++i)
        CHECK(cuMemcpyHtoDAsync_v2(d, (i & 1) ? pinned : static_cast<void*>(pageable.data()),
                                   static_cast<size_t>(100 + k), nullptr));
      _exit(0);
    }
    pids.push_back(pid);
  }
  more_after_forks = 20000;
  int bad = 0;
  for (pid_t pid : pids) {
    int st = wait_with_timeout(pid, 15);
    if (st == -1) fprintf(stderr, "child %d hung: killed\n", pid);
    else if (st >= 0 && WIFSIGNALED(st))
      fprintf(stderr, "child %d: killed by signal %d%s\n", pid, WTERMSIG(st),
              WTERMSIG(st) == SIGALRM ? " (its own 10 s alarm: it hung)" : "");
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fprintf(stderr, "child %d: status %d\n", pid, st);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  stop = true;
  for (auto& t : ts) t.join();
  for (int t = 0; t < nthreads; ++t) printf("thread %d copies %ld\n", t, made[static_cast<size_t>(t)].load());
  printf("children=%d bad=%d\n", kids, bad);
  return bad ? 12 : 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "none") {
    printf("no cuda here\n");
    return 0;
  }
  if (mode == "linked") {  // -lcuda: pageable and pinned copies, memset, both directions
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 1 << 20));
    std::vector<char> pageable(1 << 20, 1);
    void* pinned;
    CHECK(cuMemHostAlloc(&pinned, 1 << 20, 0));
    CUstream s;
    CHECK(cuStreamCreate(&s, 1));
    CHECK(cuMemcpyHtoDAsync_v2(d, pageable.data(), 1000, s));
    CHECK(cuMemcpyHtoDAsync_v2(d, static_cast<char*>(pinned) + 100, 2000, s));  // interior pointer
    CHECK(cuMemcpyDtoHAsync_v2(pageable.data(), d, 3000, nullptr));
    CHECK(cuMemsetD8Async(d, 0, 4000, s));
    CHECK(cuMemFreeHost(pinned));
    char* reg = static_cast<char*>(malloc(16384));
    CHECK(cuMemHostRegister_v2(reg, 16384, 0));
    CHECK(cuMemcpyHtoDAsync_v2(d, reg + 4096, 5000, s));
    CHECK(cuMemHostUnregister(reg));
    CHECK(cuMemcpyHtoDAsync_v2(d, reg + 4096, 6000, s));
    return 0;
  }
  if (mode == "two_sites") {  // two call sites of runtime_like_copy, alternating
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> pageable(4096, 1);
    for (int i = 0; i < 10; ++i) {
      CHECK(runtime_like_copy(d, pageable.data(), 100));  // site A
      CHECK(runtime_like_copy(d, pageable.data(), 200));  // site B
    }
    return 0;
  }
  if (mode == "proc") {  // the CUDA runtime's way: dlopen, dlsym cuGetProcAddress_v2, then ask it
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 4;
    auto gp = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
    void* self = nullptr;
    CHECK(gp("cuGetProcAddress", &self, 12000, 0, nullptr));
    gp = reinterpret_cast<GetProc>(self);
    void *init, *alloc, *legacy, *per_thread, *missing = reinterpret_cast<void*>(1);
    int status = -1;
    CHECK(gp("cuInit", &init, 12000, 0, nullptr));
    CHECK(gp("cuMemAlloc", &alloc, 12000, 0, nullptr));
    CHECK(gp("cuMemcpyHtoDAsync", &legacy, 12000, 0, nullptr));
    CHECK(gp("cuMemcpyHtoDAsync", &per_thread, 12000, 2, nullptr));
    CUresult miss = gp("cuNoSuchFunction", &missing, 12000, 0, &status);
    printf("missing=%d ptr=%p status=%d\n", miss, missing, status);
    CHECK(reinterpret_cast<CUresult (*)(unsigned)>(init)(0));
    CUdeviceptr d;
    CHECK(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(alloc)(&d, 4096));
    std::vector<char> host(4096);
    using Copy = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
    CHECK(reinterpret_cast<Copy>(legacy)(d, host.data(), 111, nullptr));
    CHECK(reinterpret_cast<Copy>(per_thread)(d, host.data(), 222, nullptr));
    // Direct dlsym of a hooked name is wrapped too.
    CHECK(reinterpret_cast<Copy>(dlsym(h, "cuMemcpyHtoDAsync_v2"))(d, host.data(), 333, nullptr));
    return 0;
  }
  if (mode == "rtld_next") {  // RTLD_NEXT must be relative to the caller (this executable)
    void* next_dlsym = dlsym(RTLD_NEXT, "dlsym");  // the next definition after the executable: ours
    void* next_exit = dlsym(RTLD_NEXT, "_exit");
    Dl_info a, b;
    dladdr(next_dlsym, &a);
    dladdr(next_exit, &b);
    printf("dlsym from %s\n_exit from %s\n", a.dli_fname, b.dli_fname);
    return 0;
  }
  if (mode == "launch") {
    CHECK(cuInit(0));
    char name[] = "_Z5dummyPfi";
    for (int i = 0; i < 3; ++i) CHECK(cuLaunchKernel(name, 4, 2, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr));
    return 0;
  }
  if (mode == "hostfunc") {
    CHECK(cuInit(0));
    static std::atomic<int> ran{0};
    CHECK(cuLaunchHostFunc(nullptr, [](void* p) { usleep(2000); ++*static_cast<std::atomic<int>*>(p); }, &ran));
    CHECK(cuStreamAddCallback(nullptr, [](CUstream, CUresult status, void* p) {
      if (status == 0) ++*static_cast<std::atomic<int>*>(p);
    }, &ran, 0));
    CHECK(cuStreamSynchronize(nullptr));
    printf("ran=%d\n", ran.load());
    return ran.load() == 2 ? 0 : 5;
  }
  if (mode == "capture") {
    CHECK(cuInit(0));
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096);
    CHECK(cuStreamBeginCapture_v2(s, 0));
    CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, s));
    void* g;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 65, s));
    return 0;
  }
  if (mode == "cuda13") {  // what CUDA 13 hands out: cuCtxSynchronize_v2, capture into a graph
    CHECK(cuInit(0));
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 4;
    auto gp = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
    using CtxSync = CUresult (*)(void*);
    CtxSync sync = nullptr;
    CHECK(gp("cuCtxSynchronize", reinterpret_cast<void**>(&sync), 13000, 0, nullptr));
    CHECK(sync(nullptr));
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096);
    CHECK(cuStreamBeginCaptureToGraph(s, nullptr, nullptr, nullptr, 0, 0));
    CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, s));
    void* g;
    CHECK(cuStreamEndCapture(s, &g));
    return 0;
  }
  if (mode == "errno") {
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096);
    errno = 5;
    CUresult r = cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr);  // the fake sets errno = 77
    int e = errno;
    printf("result=%d errno=%d\n", r, e);
    return e == 77 ? 0 : 6;
  }
  if (mode == "kill") {  // N copies, then SIGKILL ourselves
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    copies(n);
    kill(getpid(), SIGKILL);
    return 0;
  }
  if (mode == "abort") {
    copies(argc > 2 ? atoi(argv[2]) : 10);
    abort();
  }
  if (mode == "exit_") {
    copies(5);
    _exit(7);
  }
  if (mode == "fork") {
    copies(3);
    pid_t pid = fork();
    if (pid == 0) {
      copies(4);
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    copies(2);
    printf("child=%d\n", pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 8;
  }
  if (mode == "exec") {  // exec ourselves with an environment that lacks LD_PRELOAD
    copies(1);
    char* args[] = {argv[0], const_cast<char*>("linked"), nullptr};
    char* env[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
    execve(argv[0], args, env);
    return 9;
  }
  if (mode == "threads") {  // threads [N [CALLS_PER_THREAD]]: 64-byte copies, pinned and pageable alternating
    int n = argc > 2 ? atoi(argv[2]) : 8;
    int calls = argc > 3 ? atoi(argv[3]) : 2000;
    alarm(120);  // watchdog: a deadlock ends the process with SIGALRM instead of hanging the suite
    CHECK(cuInit(0));
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < n; ++t)
      ts.emplace_back([&ready, n, calls] {
        CUdeviceptr d;
        CHECK(cuMemAlloc_v2(&d, 4096));
        std::vector<char> pageable(4096);
        void* pinned;
        CHECK(cuMemHostAlloc(&pinned, 4096, 0));
        ++ready;
        while (ready.load() < n) std::this_thread::yield();  // all threads start their calls together
        for (int i = 0; i < calls; ++i)
          CHECK(cuMemcpyHtoDAsync_v2(d, (i & 1) ? pinned : static_cast<void*>(pageable.data()), 64, nullptr));
      });
    for (auto& t : ts) t.join();
    printf("threads=%d calls=%d\n", n, calls);
    return 0;
  }
  if (mode == "fsize") {  // fsize LIMIT_BYTES CALLS: a small RLIMIT_FSIZE, set before the first CUDA call
    rlim_t limit = argc > 2 ? strtoull(argv[2], nullptr, 0) : 256 * 1024;
    int n = argc > 3 ? atoi(argv[3]) : 200000;
    rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    copies(n);
    printf("done %d copies\n", n);
    return 0;
  }
  if (mode == "forks") {  // forks N CALLS: multiprocessing-style; bytes tell the processes apart
    int n = argc > 2 ? atoi(argv[2]) : 4;
    int calls = argc > 3 ? atoi(argv[3]) : 20000;
    copies(1000, 64);  // before the fork: the parent's only
    std::vector<pid_t> kids;
    for (int k = 0; k < n; ++k) {
      pid_t pid = fork();
      if (pid < 0) return 11;
      if (pid == 0) {
        copies(calls, static_cast<size_t>(100 + k));  // child k: 100+k bytes
        _exit(0);  // the clean close path through the _exit interposer, no atexit handlers
      }
      kids.push_back(pid);
    }
    copies(calls, 65);  // the parent, while the children run
    int bad = 0;
    for (pid_t pid : kids) {
      int st;
      if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
    }
    printf("children=%d bad=%d\n", n, bad);
    return bad ? 12 : 0;
  }
  if (mode == "copies") {  // copies N [BYTES]: N copies, then one line on stdout
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    copies(n, argc > 3 ? static_cast<size_t>(atoi(argv[3])) : 64);
    printf("done %d copies\n", n);
    return 0;
  }
  if (mode == "segv") {  // segv N: a run of copies that dies of SIGSEGV after the Nth
    int n = argc > 2 ? atoi(argv[2]) : 100;
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // no core file in the test's working directory
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096, 1);
    printf("copying\n");
    fflush(stdout);
    for (int i = 0;; ++i) {
      if (i == n) *g_bad_pointer = i;  // a real SIGSEGV (a store to address 0), not raise()
      CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
    }
  }
  if (mode == "mtforks") {  // mtforks THREADS KIDS CALLS [ALLOC_EVERY]: fork while other threads make copies
    return mt_forks(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? atoi(argv[3]) : 2, argc > 4 ? atoi(argv[4]) : 20000,
                    argc > 5 ? std::max(1, atoi(argv[5])) : 8);
  }
  if (mode == "pause") {  // pause [END_PAUSED]: 10 copies, pause, 20 copies, resume, 5 copies (sizes 1/2/3)
    using SetRecording = int (*)(int);
    auto set_recording = reinterpret_cast<SetRecording>(dlsym(RTLD_DEFAULT, "asyncwatch_set_recording"));
    printf("control api: %s\n", set_recording ? "yes" : "no");
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096, 1);
    for (int i = 0; i < 10; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 1, nullptr));
    if (set_recording) printf("pause: was %d\n", set_recording(0));
    if (set_recording) printf("pause again: was %d\n", set_recording(0));
    for (int i = 0; i < 20; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 2, nullptr));
    usleep(20000);
    if (argc > 2) return 0;  // ends while paused
    if (set_recording) printf("resume: was %d\n", set_recording(1));
    for (int i = 0; i < 5; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 3, nullptr));
    return 0;
  }
  if (mode == "short_threads") {  // short_threads N: N threads one after another, each one pageable copy
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    for (int i = 0; i < n; ++i) {
      std::thread t([d] {
        std::vector<char> host(64, 1);
        CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
      });
      t.join();
    }
    printf("threads=%d\n", n);
    return 0;
  }
  if (mode == "mapper") {  // mapper N: N 64-byte copies, then the names of this process's threads
    copies(argc > 2 ? atoi(argv[2]) : 100000);
    std::vector<std::string> names;
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string n;
        std::getline(f, n);
        names.push_back(n);
      }
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (auto& n : names) printf("thread %s\n", n.c_str());
    return 0;
  }
  if (mode == "bench") {  // ns per call: pinned 64-byte copy and launch, as in the spec's targets
    int n = argc > 2 ? atoi(argv[2]) : 200000;
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    void* pinned;
    CHECK(cuMemHostAlloc(&pinned, 4096, 0));
    std::vector<char> pageable(4096);
    char name[] = "_Z6kernelv";
    for (int i = 0; i < 1000; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, pinned, 64, nullptr));
    uint64_t t0 = now();
    for (int i = 0; i < n; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, pinned, 64, nullptr));
    uint64_t t1 = now();
    for (int i = 0; i < n; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, pageable.data(), 64, nullptr));
    uint64_t t2 = now();
    for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(name, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
    uint64_t t3 = now();
    printf("pinned_copy_ns=%.1f pageable_copy_ns=%.1f launch_ns=%.1f\n", double(t1 - t0) / n, double(t2 - t1) / n,
           double(t3 - t2) / n);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
