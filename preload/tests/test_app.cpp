// One small program per behaviour, selected by argv[1]; runs under LD_PRELOAD=libasyncwatch.so
// against the fake libcuda (tests/fake_cuda.cpp). It reaches the driver the ways real programs
// do: linked directly (-lcuda), or dlopen + dlsym("cuGetProcAddress_v2") like the CUDA runtime.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
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

#include "deny_unshare.h"

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;

extern "C" {
CUresult cuInit(unsigned);
CUresult cuProfilerStart();
CUresult cuProfilerStop();
CUresult cuStreamBeginCaptureToGraph(CUstream, void*, const void*, const void*, size_t, unsigned);
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemHostAlloc(void**, size_t, unsigned);
CUresult cuMemFreeHost(void*);
CUresult cuMemHostRegister_v2(void*, size_t, unsigned);
CUresult cuMemHostUnregister(void*);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                        void**);
CUresult cuLaunchHostFunc(CUstream, void (*)(void*), void*);
CUresult cuStreamAddCallback(CUstream, void (*)(CUstream, CUresult, void*), void*, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, unsigned);
CUresult cuStreamEndCapture(CUstream, void**);
CUresult cuStreamCreate(CUstream*, unsigned);
}

extern char** environ;

#define CHECK(x)                                  \
  do {                                            \
    CUresult r_ = (x);                            \
    if (r_) {                                     \
      fprintf(stderr, "%s failed: %d\n", #x, r_); \
      exit(3);                                    \
    }                                             \
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
  if constexpr (Layer == 0)
    r = cuMemcpyHtoDAsync_v2(d, src, n + pad[0], nullptr);
  else
    r = runtime_layer<Layer - 1>(d, src, n + pad[0]);
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
    if (st == -1)
      fprintf(stderr, "child %d hung: killed\n", pid);
    else if (st >= 0 && WIFSIGNALED(st))
      fprintf(stderr, "child %d: killed by signal %d%s\n", pid, WTERMSIG(st),
              WTERMSIG(st) == SIGALRM ? " (its own 10 s alarm: it hung)" : "");
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fprintf(stderr, "child %d: status %d\n", pid, st);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  stop = true;
  for (auto& t : ts) t.join();
  for (int t = 0; t < nthreads; ++t) printf("thread %d copies %ld\n", t, made[static_cast<size_t>(t)].load());
  printf("children=%d bad=%d\n", kids, bad);
  return bad ? 12 : 0;
}

// ---- Hostile but correct programs ------------------------------------------------------

// The application's own file: written in chunks of a known pattern, with CUDA calls in between.
static bool write_own_file(int fd, int chunks, CUdeviceptr d, const std::vector<char>& host, int copies_per_chunk) {
  char buf[4096];
  for (int c = 0; c < chunks; ++c) {
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = static_cast<char>('a' + (c + i) % 26);
    if (write(fd, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) return false;
    for (int k = 0; k < copies_per_chunk; ++k) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
  }
  return true;
}

static bool check_own_file(const char* path, int chunks) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  bool ok = true;
  for (int c = 0; c < chunks && ok; ++c) {
    ok = read(fd, buf, sizeof buf) == static_cast<ssize_t>(sizeof buf);
    for (size_t i = 0; ok && i < sizeof buf; ++i) ok = buf[i] == static_cast<char>('a' + (c + i) % 26);
  }
  ok = ok && read(fd, buf, 1) == 0;  // nothing more: not grown, not overwritten
  close(fd);
  return ok;
}

// fdsteal closefrom|close_range|dup2 FILE CHUNKS: after the first CUDA calls, the program closes
// (or replaces) every descriptor from 3 up, then writes its own FILE (4 KiB chunks, 40 copies
// after each: enough records for new trace segments) and checks it.
static int fd_steal(const std::string& how, const char* path, int chunks) {
  copies(1000);
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> host(4096, 1);
  int fd = -1;
  if (how == "closefrom") {
    closefrom(3);
  } else if (how == "close_range") {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return 21;
  } else if (how == "dup2") {
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 22;
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    int top = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 4096));
    for (int i = 3; i < top; ++i)
      if (i != fd) dup2(fd, i);  // every other number now refers to the program's file
  } else {
    return 2;
  }
  if (fd < 0) fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 22;
  if (!write_own_file(fd, chunks, d, host, 40)) return 23;
  if (how == "dup2") {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    int top = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 4096));
    for (int i = 3; i < top; ++i)
      if (i != fd) close(i);
  }
  close(fd);
  bool ok = check_own_file(path, chunks);
  printf("own file %s\n", ok ? "intact" : "CHANGED");
  return ok ? 0 : 24;
}

// fdsteal_fork closefrom|close_range|dup2 FILE CHUNKS: the parent opens a file of its own first
// (descriptor 3), makes 1,000 copies (its trace is open) and forks; the child closes its inherited
// copy of descriptor 3 and runs fdsteal (its own first calls, then every descriptor from 3 closed or
// replaced, then FILE written around copies); the parent makes 500 more copies and checks that its
// own file, written before and after the fork, is intact.
static int fd_steal_fork(const std::string& how, const char* path, int chunks) {
  std::string mine = std::string(path) + ".parent";
  int own = open(mine.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (own < 0) return 22;
  char buf[4096];
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = static_cast<char>('a' + i % 26);  // chunk 0's pattern
  if (write(own, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) return 23;
  copies(1000);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 11;
  if (pid == 0) {
    close(own);
    exit(fd_steal(how, path, chunks));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  copies(500);
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = static_cast<char>('a' + (1 + i) % 26);  // chunk 1's
  if (write(own, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) return 23;
  close(own);
  printf("child exit %d, parent's file %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
         check_own_file(mine.c_str(), 2) ? "intact" : "CHANGED");
  unlink(mine.c_str());
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 8;
}

// closed_stdio REPORT: run with some of 0/1/2 closed. Checks that read/write on each closed one
// fail with EBADF before and after the first CUDA calls, then writes a file of its own (it gets
// the lowest free descriptor, maybe 0/1/2) around more calls and checks it. Results go to REPORT
// (stdout may be closed).
static int closed_stdio(const char* report) {
  bool closed[3];
  for (int i = 0; i < 3; ++i) closed[i] = fcntl(i, F_GETFD) < 0 && errno == EBADF;
  std::string out;
  auto probe = [&](const char* when) {
    for (int i = 0; i < 3; ++i) {
      if (!closed[i]) continue;
      char c;
      errno = 0;
      ssize_t r = i == 0 ? read(0, &c, 1) : write(i, "x", 1);
      out += "fd " + std::to_string(i) + " " + when + ": " + (r < 0 && errno == EBADF ? "EBADF" : "usable!") + "\n";
    }
  };
  probe("before");
  copies(100);
  probe("after");
  char path[4096];
  snprintf(path, sizeof path, "%s.own", report);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 22;
  out += "own file on fd " + std::string(fd <= 2 ? "<= 2" : "> 2") + "\n";
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> host(4096, 1);
  if (!write_own_file(fd, 8, d, host, 10)) return 23;
  close(fd);
  out += std::string("own file ") + (check_own_file(path, 8) ? "intact" : "CHANGED") + "\n";
  unlink(path);
  FILE* f = fopen(report, "w");
  if (!f) return 25;
  fputs(out.c_str(), f);
  fclose(f);
  return 0;
}

// Signals. A handler that calls _exit/exit, or a CUDA function, at any moment of the first CUDA
// call (which opens the trace) or of any other.
static volatile sig_atomic_t g_handler_calls = 0;
static volatile sig_atomic_t g_handler_failed = 0;
static CUdeviceptr g_sig_dev = 0;
static char g_sig_host[4096];

// The signal tests' device buffer (g_sig_dev), after cuInit.
static void sig_device() {
  CHECK(cuInit(0));
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  g_sig_dev = d;
}

static void arm_timer(long first_us, long interval_us) {
  itimerval it{};
  it.it_value.tv_sec = first_us / 1000000;
  it.it_value.tv_usec = first_us % 1000000;
  it.it_interval.tv_sec = interval_us / 1000000;
  it.it_interval.tv_usec = interval_us % 1000000;
  setitimer(ITIMER_REAL, &it, nullptr);
}

static void on_alarm_exit(int) { _exit(42); }
static void on_alarm_libc_exit(int) { exit(43); }  // not async-signal-safe; it must not hang either
// An exit handler's CUDA call, after the trace was closed or (the process ending inside its first
// call) before it was ever published: recorded or not, it must not wait for a file.
// The trace file's mappings in this process (/proc/self/smaps): their size and resident memory.
static void print_trace_mapping() {
  const char* dir = getenv("ASYNCWATCH_OUTPUT_DIR");
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[4096];
  bool trace = false;
  long size_kib = 0, rss_kib = 0, v;
  while (fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n') line[--len] = 0;
    if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && line[0] != ' ') {  // a mapping's first line
      // In the trace directory (an unnamed file's mapping keeps the name it had: "/dir/#123 (deleted)").
      const char* path = strchr(line, '/');
      trace = path && dir && *dir && !strncmp(path, dir, strlen(dir));
    } else if (trace && sscanf(line, "Size: %ld kB", &v) == 1) {
      size_kib += v;
    } else if (trace && sscanf(line, "Rss: %ld kB", &v) == 1) {
      rss_kib += v;
    }
  }
  fclose(f);
  printf("trace mapped_kib=%ld rss_kib=%ld\n", size_kib, rss_kib);
}

// A short_threads thread that ends by returning (how 0), by pthread_exit (1) or, blocked in pause()
// after its copy, by pthread_cancel (2).
struct ShortThread {
  CUdeviceptr d;
  int how;
  std::atomic<int> copied;
};
static void* short_thread(void* p) {
  auto* st = static_cast<ShortThread*>(p);
  char host[64] = {1};
  CHECK(cuMemcpyHtoDAsync_v2(st->d, host, 64, nullptr));
  printf("tid=%ld\n", static_cast<long>(syscall(SYS_gettid)));
  fflush(stdout);
  st->copied.store(1);
  if (st->how == 1) pthread_exit(nullptr);
  if (st->how == 2)
    for (;;) pause();
  return nullptr;
}

static void copy_at_exit() { cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(g_sig_host), g_sig_host, 64, nullptr); }
static void on_alarm_copy(int) {
  int saved = errno;
  if (cuMemcpyHtoDAsync_v2(g_sig_dev, g_sig_host, 77, nullptr) != 0) g_handler_failed = 1;
  ++g_handler_calls;
  errno = saved;
}

static void install(void (*fn)(int)) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
}

// sig_exit KIND N STEP_US: N children, child k arms a timer at k * STEP_US and makes its first CUDA
// calls until the handler (KIND: _exit -> status 42, exit -> 43) ends it. Prints how many ended so
// and how many hung (killed after 10 s).
static int sig_exit(const std::string& kind, int n, long step_us) {
  int want = kind == "_exit" ? 42 : 43;
  int ok = 0, hung = 0, other = 0;
  for (int k = 0; k < n; ++k) {
    pid_t pid = fork();
    if (pid < 0) return 11;
    if (pid == 0) {
      install(kind == "_exit" ? on_alarm_exit : on_alarm_libc_exit);
      if (kind == "exit") atexit(copy_at_exit);
      arm_timer(1 + k * step_us, 0);
      CHECK(cuInit(0));
      CUdeviceptr d;
      CHECK(cuMemAlloc_v2(&d, 4096));  // the process's first intercepted call: opens the trace
      std::vector<char> host(4096, 1);
      for (;;) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
    }
    int st = wait_with_timeout(pid, 10);
    if (st == -1)
      ++hung;
    else if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == want)
      ++ok;
    else
      ++other;
  }
  printf("children=%d ended_by_handler=%d hung=%d other=%d\n", n, ok, hung, other);
  return hung || other ? 13 : 0;
}

// sig_copy N STEP_US CALLS: N children, child k arms a one-shot timer at k * STEP_US; its handler
// makes one 77-byte copy. The child makes CALLS 64-byte copies, waits for the handler, exits 0.
static int sig_copy(int n, long step_us, int calls) {
  int ok = 0, hung = 0, other = 0;
  for (int k = 0; k < n; ++k) {
    pid_t pid = fork();
    if (pid < 0) return 11;
    if (pid == 0) {
      alarm(0);
      CHECK(cuInit(0));
      install(on_alarm_copy);
      // The handler's copy needs a device pointer before the first intercepted call: the fake
      // driver's "device memory" is host memory, so a static buffer serves (an unregistered pointer).
      g_sig_dev = reinterpret_cast<CUdeviceptr>(g_sig_host);
      arm_timer(1 + k * step_us, 0);
      CUdeviceptr d;
      CHECK(cuMemAlloc_v2(&d, 4096));  // the first intercepted call
      std::vector<char> host(4096, 1);
      for (int i = 0; i < calls; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
      while (!g_handler_calls) usleep(100);
      _exit(g_handler_failed ? 14 : 0);
    }
    int st = wait_with_timeout(pid, 10);
    if (st == -1)
      ++hung;
    else if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
      ++ok;
    else
      ++other;
  }
  printf("children=%d ok=%d hung=%d other=%d\n", n, ok, hung, other);
  return hung || other ? 13 : 0;
}

// The kernel's rt_sigaction directly (as a runtime without libc would install handlers), with a
// signal-return trampoline of our own: a handler the library does not see being installed.
extern "C" void aw_test_restore_rt();
asm(".text\n.globl aw_test_restore_rt\n.type aw_test_restore_rt,@function\naw_test_restore_rt:\n"
    "  movq $15, %rax\n  syscall\n");  // rt_sigreturn
static void install_raw(int sig, void (*fn)(int)) {
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  } ksa{fn, SA_RESTART | 0x04000000 /* SA_RESTORER */, aw_test_restore_rt, 0};
  syscall(SYS_rt_sigaction, sig, &ksa, nullptr, sizeof ksa.mask);
}

// sig_storm CALLS INTERVAL_US [raw]: a timer every INTERVAL_US whose handler makes a 77-byte copy,
// while the program makes CALLS 64-byte copies (pageable). Prints the handler's count (the trace
// must hold every call or count it in records_lost). "raw": the handler installed with the system
// call, unseen by the library; its copies are from registered (pinned) memory, so that one that
// interrupted the program needs nothing but the trace.
static int sig_storm(int calls, long interval_us, bool raw) {
  sig_device();
  if (raw) {
    CHECK(cuMemHostRegister_v2(g_sig_host, sizeof g_sig_host, 0));
    install_raw(SIGALRM, on_alarm_copy);
  } else {
    install(on_alarm_copy);
  }
  std::vector<char> host(4096, 1);
  arm_timer(interval_us, interval_us);
  for (int i = 0; i < calls; ++i) CHECK(cuMemcpyHtoDAsync_v2(g_sig_dev, host.data(), 64, nullptr));
  arm_timer(0, 0);
  fprintf(stderr, "handler calls %d\n", static_cast<int>(g_handler_calls));
  printf("calls=%d handler_failed=%d\n", calls, static_cast<int>(g_handler_failed));
  return g_handler_failed ? 14 : 0;
}

// sig_fill N: a synchronization whose real call is interrupted (FAKE_CUDA_SYNC_SLEEP_US: the fake
// driver sleeps in it) by a handler that makes N 64-byte copies from registered memory, enough to
// fill the thread's block and move on past the segment that holds the synchronization's record in
// flight, then sleeps 100 ms, so that the trace's file thread releases what was retired before the
// interrupted call completes its record. Prints the handler's copies.
static volatile sig_atomic_t g_fill_copies = 0;
static void on_alarm_fill(int) {
  int saved = errno;
  for (int i = 0; i < g_fill_copies; ++i)
    if (cuMemcpyHtoDAsync_v2(g_sig_dev, g_sig_host, 64, nullptr) != 0) g_handler_failed = 1;
  ++g_handler_calls;
  timespec t{0, 100 * 1000 * 1000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
  errno = saved;
}
static int sig_fill(int n) {
  sig_device();
  CHECK(cuMemHostRegister_v2(g_sig_host, sizeof g_sig_host, 0));
  g_fill_copies = n;
  install(on_alarm_fill);
  arm_timer(20000, 0);  // one signal, 20 ms into the synchronization's sleep
  CHECK(cuStreamSynchronize(nullptr));
  arm_timer(0, 0);
  printf("handler calls %d copies %d\n", static_cast<int>(g_handler_calls), static_cast<int>(g_handler_calls) * n);
  return g_handler_failed ? 14 : 0;
}

// sig_deferred N: N pageable copies while the fake driver queues SIGUSR2 (value 1234) inside each
// of the library's pointer queries (FAKE_CUDA_QUERY_SIGNAL); the SA_SIGINFO handler checks its
// siginfo and makes a 77-byte copy. Prints how often it ran and with the queued siginfo.
static volatile sig_atomic_t g_deferred_ok = 0;
static void on_usr2_info(int, siginfo_t* si, void*) {
  int saved = errno;
  if (si->si_code == SI_QUEUE && si->si_value.sival_int == 1234) ++g_deferred_ok;
  on_alarm_copy(SIGUSR2);
  errno = saved;
}
static int sig_deferred(int n) {
  sig_device();
  struct sigaction sa {};
  sa.sa_sigaction = on_usr2_info;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  std::vector<char> host(4096, 1);
  for (int i = 0; i < n; ++i) CHECK(cuMemcpyHtoDAsync_v2(g_sig_dev, host.data(), 64, nullptr));
  printf("handler ran %d times, %d with their siginfo\n", static_cast<int>(g_handler_calls),
         static_cast<int>(g_deferred_ok));
  return g_handler_failed ? 14 : 0;
}

// sig_longjmp [alt]: a handler makes a copy and leaves with siglongjmp (on an alternate signal stack
// with "alt"); then the program makes 5 pageable copies (the thread is back in the application:
// recorded as usual, with their call site).
static sigjmp_buf g_jump;
static void on_usr1_jump(int) {
  on_alarm_copy(SIGUSR1);
  siglongjmp(g_jump, 1);
}
static int sig_longjmp(bool alt) {
  sig_device();
  static char alt_stack[1 << 16];
  if (alt) {
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    if (sigaltstack(&ss, nullptr) != 0) return 10;
  }
  struct sigaction sa {};
  sa.sa_handler = on_usr1_jump;
  sa.sa_flags = alt ? SA_ONSTACK : 0;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  for (int round = 0; round < 3; ++round) {
    if (!sigsetjmp(g_jump, 1)) raise(SIGUSR1);
    std::vector<char> host(4096, 1);
    for (int i = 0; i < 5; ++i) CHECK(cuMemcpyHtoDAsync_v2(g_sig_dev, host.data(), 64, nullptr));
  }
  printf("handler ran %d times\n", static_cast<int>(g_handler_calls));
  return g_handler_failed ? 14 : 0;
}

// sig_api: what sigaction/signal/sysv_signal/sigset report and do, with and without the library:
// every query returns the program's own handler, System V semantics reset the handler.
static volatile sig_atomic_t g_h2_runs = 0, g_h3_runs = 0;
static void api_h1(int, siginfo_t*, void*) {}
static void api_h2(int) { ++g_h2_runs; }
static void api_h3(int s) {
  ++g_h3_runs;
  on_alarm_copy(s);
}
static int sig_api() {
  sig_device();
  struct sigaction a {
  }, q{};
  a.sa_sigaction = api_h1;
  a.sa_flags = SA_SIGINFO;
  sigemptyset(&a.sa_mask);
  sigaction(SIGUSR1, &a, nullptr);
  sigaction(SIGUSR1, nullptr, &q);
  printf("sigaction: h1 %d, siginfo %d\n", q.sa_sigaction == api_h1, (q.sa_flags & SA_SIGINFO) != 0);
  sighandler_t old = signal(SIGUSR1, api_h2);
  printf("signal: returned h1 %d\n", old == reinterpret_cast<sighandler_t>(reinterpret_cast<void (*)()>(api_h1)));
  sigaction(SIGUSR1, nullptr, &q);
  printf("now h2 %d, restart %d, siginfo %d\n", q.sa_handler == api_h2, (q.sa_flags & SA_RESTART) != 0,
         (q.sa_flags & SA_SIGINFO) != 0);
  old = sysv_signal(SIGUSR1, api_h3);
  printf("sysv_signal: returned h2 %d\n", old == api_h2);
  raise(SIGUSR1);
  sigaction(SIGUSR1, nullptr, &q);
  printf("after one delivery: h3 ran %d, reset to default %d\n", static_cast<int>(g_h3_runs), q.sa_handler == SIG_DFL);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  old = sigset(SIGUSR2, api_h2);  // obsolete, still interposed
#pragma GCC diagnostic pop
  printf("sigset: returned default %d\n", old == SIG_DFL);
  raise(SIGUSR2);
  old = signal(SIGUSR2, SIG_IGN);
  printf("h2 ran %d, signal returned h2 %d, handler copies %d\n", static_cast<int>(g_h2_runs), old == api_h2,
         static_cast<int>(g_handler_calls));
  return g_handler_failed ? 14 : 0;
}

// cancel [inside]: a thread with a cancellation pending makes the process's first CUDA call (with
// FAKE_CUDA_CANCEL_POINT=1 the call itself is a cancellation point), then reaches pthread_testcancel.
static std::atomic<int> g_cancel_step{0};
static void* cancel_thread(void*) {
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  g_cancel_step = 1;
  while (g_cancel_step.load() < 2) usleep(100);         // main has called pthread_cancel
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);  // now pending; deferred
  CUdeviceptr d;
  CUresult r = cuMemAlloc_v2(&d, 4096);  // the process's first intercepted call
  std::vector<char> host(4096, 1);
  if (r == 0) r = cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr);
  fprintf(stderr, "thread: calls returned %d\n", r);
  pthread_testcancel();
  return reinterpret_cast<void*>(1);  // not cancelled
}
static int cancel_pending() {
  CHECK(cuInit(0));
  pthread_t t;
  if (pthread_create(&t, nullptr, cancel_thread, nullptr) != 0) return 11;
  while (g_cancel_step.load() < 1) usleep(100);
  pthread_cancel(t);
  g_cancel_step = 2;
  void* ret = nullptr;
  pthread_join(t, &ret);
  printf("thread %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
  copies(5);
  printf("main copies done\n");
  return ret == PTHREAD_CANCELED ? 0 : 15;
}

// nofile: RLIMIT_NOFILE lowered so that exactly one descriptor is free when the first CUDA call
// starts (with FAKE_CUDA_NEEDS_FD=1 the driver takes it). Prints the calls' results.
static int nofile() {
  CHECK(cuInit(0));
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlimit low{64, rl.rlim_max};
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 16;
  std::vector<int> fillers;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    fillers.push_back(fd);
  }
  if (fillers.empty()) return 17;
  close(fillers.back());  // exactly one free number
  fillers.pop_back();
  CUdeviceptr d;
  CUresult r = cuMemAlloc_v2(&d, 4096);  // the first intercepted call; the driver opens a descriptor
  printf("alloc result %d\n", r);
  if (r != 0) return 18;
  std::vector<char> host(4096, 1);
  for (int i = 0; i < 10; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  printf("copies done; a further open %s\n", fd < 0 ? "fails (EMFILE)" : "succeeds");
  return 0;
}

// Runtime instances. The tests pass the paths of copies of libcudart_fake.so.
using MemsetFn = int (*)(void*, int, size_t);
using RtCopyFn = int (*)(void*, const void*, size_t, int, void*);
using CallsFn = int (*)();
struct FakeRuntime {
  void* handle;
  MemsetFn memset_fn;
  RtCopyFn copy_fn;
  CallsFn calls_fn;
};
static bool load_runtime(const char* path, FakeRuntime* rt) {
  rt->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!rt->handle) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return false;
  }
  rt->memset_fn = reinterpret_cast<MemsetFn>(dlsym(rt->handle, "cudaMemset"));
  rt->copy_fn = reinterpret_cast<RtCopyFn>(dlsym(rt->handle, "cudaMemcpyAsync"));
  rt->calls_fn = reinterpret_cast<CallsFn>(dlsym(rt->handle, "fake_cudart_calls"));
  return rt->memset_fn && rt->copy_fn && rt->calls_fn;
}

// runtimes PATH...: copy i gets i + 1 memsets (of 100 + i bytes) and one copy of 1000 + i bytes;
// each copy must have served exactly its own calls.
static int runtimes(int argc, char** argv) {
  CHECK(cuInit(0));
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> host(4096, 1);
  std::vector<FakeRuntime> rts(static_cast<size_t>(argc));
  for (int i = 0; i < argc; ++i)
    if (!load_runtime(argv[i], &rts[static_cast<size_t>(i)])) return 19;
  bool ok = true;
  for (int i = 0; i < argc; ++i) {
    FakeRuntime& rt = rts[static_cast<size_t>(i)];
    for (int k = 0; k <= i; ++k) ok = ok && rt.memset_fn(host.data(), 0, static_cast<size_t>(100 + i)) == 0;
    ok = ok && rt.copy_fn(reinterpret_cast<void*>(d), host.data(), static_cast<size_t>(1000 + i), 1, nullptr) == 0;
  }
  for (int i = 0; i < argc; ++i) printf("runtime %d served %d calls\n", i, rts[static_cast<size_t>(i)].calls_fn());
  return ok ? 0 : 26;
}

// rt_launch PATH: kernel launches through a (fake) shared runtime, each kernel's name its handle:
// three of _Z5firstv on the null stream, two of _Z6secondv with other dimensions, shared memory and
// an explicit stream, one of _Z5firstv on cudaStreamPerThread, and one of no kernel (it fails).
struct Dim3 {
  unsigned x, y, z;
};
using RtLaunchFn = int (*)(const void*, Dim3, Dim3, void**, size_t, void*);
static int rt_launch(const char* path) {
  CHECK(cuInit(0));
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  auto launch = h ? reinterpret_cast<RtLaunchFn>(dlsym(h, "cudaLaunchKernel")) : nullptr;
  if (!launch) return 19;
  static char first[] = "_Z5firstv", second[] = "_Z6secondv";
  bool ok = true;
  for (int i = 0; i < 3; ++i) ok = ok && launch(first, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, nullptr) == 0;
  for (int i = 0; i < 2; ++i)
    ok = ok && launch(second, Dim3{7, 5, 3}, Dim3{32, 8, 2}, nullptr, 1024, reinterpret_cast<void*>(0x1230)) == 0;
  ok = ok && launch(first, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, reinterpret_cast<void*>(2)) == 0;
  int failed = launch(nullptr, Dim3{1, 1, 1}, Dim3{1, 1, 1}, nullptr, 0, nullptr);
  printf("launches %s, the last %d\n", ok ? "ok" : "FAILED", failed);
  return ok ? 0 : 26;
}

// rt_copy PATH: copies through a (fake) shared runtime from and to one pinned buffer: three host to
// device copies (100, 101, 102 bytes, explicit stream, cudaMemcpyDefault), two device to host (200,
// 201, null stream), one host to device by the fake's tail call (cudaMemcpyHostToDevice, 250), then
// one from pageable memory (300 bytes, cudaMemcpyDefault).
static int rt_copy(const char* path) {
  CHECK(cuInit(0));
  FakeRuntime rt;
  if (!load_runtime(path, &rt)) return 19;
  void* pinned = nullptr;
  CHECK(cuMemHostAlloc(&pinned, 4096, 0));
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> pageable(4096, 1);
  auto* dev = reinterpret_cast<void*>(d);
  bool ok = true;
  for (int i = 0; i < 3; ++i)
    ok = ok && rt.copy_fn(dev, pinned, static_cast<size_t>(100 + i), 4, reinterpret_cast<void*>(0x5670)) == 0;
  for (int i = 0; i < 2; ++i) ok = ok && rt.copy_fn(pinned, dev, static_cast<size_t>(200 + i), 2, nullptr) == 0;
  ok = ok && rt.copy_fn(dev, pinned, 250, 1, nullptr) == 0;
  ok = ok && rt.copy_fn(dev, pageable.data(), 300, 4, nullptr) == 0;
  printf("copies %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 26;
}

// reload PATH: load, call, unload; hold the old address range so the next load lands elsewhere;
// load again, call through the new function.
static int reload(const char* path) {
  CHECK(cuInit(0));
  std::vector<char> host(4096, 1);
  FakeRuntime a;
  if (!load_runtime(path, &a)) return 19;
  Dl_info info;
  dladdr(reinterpret_cast<void*>(a.calls_fn), &info);
  uintptr_t old_base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (a.memset_fn(host.data(), 0, 10) != 0) return 26;
  printf("first load served %d\n", a.calls_fn());
  dlclose(a.handle);
  // Occupy its first page (the loader would likely map it there again).
  void* hold = mmap(reinterpret_cast<void*>(old_base), 4096, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  FakeRuntime b;
  if (!load_runtime(path, &b)) return 19;
  dladdr(reinterpret_cast<void*>(b.calls_fn), &info);
  printf("loaded again %s\n",
         reinterpret_cast<uintptr_t>(info.dli_fbase) != old_base ? "elsewhere" : "at the same address");
  if (b.memset_fn(host.data(), 0, 11) != 0) return 26;
  printf("second load served %d\n", b.calls_fn());
  if (hold != MAP_FAILED) munmap(hold, 4096);
  return 0;
}

// runtime_fsize LIMIT N PATH: a small RLIMIT_FSIZE and N copies through a (fake) shared runtime.
static int runtime_fsize(rlim_t limit, int n, const char* path) {
  rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
  CHECK(cuInit(0));
  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, 4096));
  std::vector<char> host(4096, 1);
  FakeRuntime rt;
  if (!load_runtime(path, &rt)) return 19;
  for (int i = 0; i < n; ++i)
    if (rt.copy_fn(reinterpret_cast<void*>(d), host.data(), 64, 1, nullptr) != 0) return 26;
  printf("done %d runtime copies\n", n);
  return 0;
}

// exec_form FORM: one copy, then the program runs itself ("linked") through that exec function.
static int exec_form(const std::string& form, char* self) {
  copies(1);
  char* args[] = {self, const_cast<char*>("linked"), nullptr};
  if (form == "execv")
    execv(self, args);
  else if (form == "execvp")
    execvp(self, args);
  else if (form == "execl")
    execl(self, self, "linked", static_cast<char*>(nullptr));
  else if (form == "execlp")
    execlp(self, self, "linked", static_cast<char*>(nullptr));
  else if (form == "execle")
    execle(self, self, "linked", static_cast<char*>(nullptr), environ);
  else if (form == "fexecve") {
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    fexecve(fd, args, environ);
  } else if (form == "execveat") {
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    execveat(fd, "", args, environ, AT_EMPTY_PATH);
  } else {
    return 2;
  }
  perror(form.c_str());
  return 9;
}

// clone_child clone|clone3: a child made by the raw system call (no fork handlers run), which
// makes copies of its own (123 bytes) while the parent's trace is open; then the parent goes on.
static int clone_child(const std::string& how) {
  copies(1000, 64);
  long pid;
  if (how == "clone") {
    pid = syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  } else {
    clone_args ca{};
    ca.exit_signal = SIGCHLD;
    pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0 && errno == ENOSYS) {
      printf("clone3 unsupported\n");
      return 0;
    }
  }
  if (pid < 0) return 11;
  if (pid == 0) {
    CUdeviceptr d;
    if (cuMemAlloc_v2(&d, 4096) != 0) syscall(SYS_exit_group, 3);
    static char host[4096];
    for (int i = 0; i < 500; ++i)
      if (cuMemcpyHtoDAsync_v2(d, host, 123, nullptr) != 0) syscall(SYS_exit_group, 4);
    syscall(SYS_exit_group, 0);
  }
  int st;
  waitpid(static_cast<pid_t>(pid), &st, 0);
  copies(100, 65);  // fewer than the child made: whatever it wrote into the shared block would remain
  printf("child %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 8;
}

#ifdef AW_BIG_TLS
// As a program linked with cuBLAS (libcublasLt's static TLS): every thread's stack holds this.
__thread char g_big_tls[AW_BIG_TLS];
#endif

int main(int argc, char** argv) {
  deny_unshare_if("AW_TEST_DENY_UNSHARE");
  deny_tmpfile_if("AW_TEST_DENY_TMPFILE");
  deny_syscalls_if("AW_TEST_DENY_SYSCALLS");
#ifdef AW_BIG_TLS
  g_big_tls[0] = 1;
#endif
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
    free(reg);  // (LeakSanitizer: with ASYNCWATCH_DISABLE=1 no registry of ours points at it)
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
  if (mode == "rtld_next") {                       // RTLD_NEXT must be relative to the caller (this executable)
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
    CHECK(cuLaunchHostFunc(
        nullptr,
        [](void* p) {
          usleep(2000);
          ++*static_cast<std::atomic<int>*>(p);
        },
        &ran));
    CHECK(cuStreamAddCallback(
        nullptr,
        [](CUstream, CUresult status, void* p) {
          if (status == 0) ++*static_cast<std::atomic<int>*>(p);
        },
        &ran, 0));
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
  if (mode == "sync-loop") {  // sync-loop N: N synchronizations of the null stream, from one call site
    int n = argc > 2 ? atoi(argv[2]) : 10;
    CHECK(cuInit(0));
    for (int i = 0; i < n; ++i) CHECK(cuStreamSynchronize(nullptr));
    return 0;
  }
  if (mode ==
      "sync-results") {  // sync-results N: N synchronizations of the null stream from one call site, results kept
    int n = argc > 2 ? atoi(argv[2]) : 10;
    CHECK(cuInit(0));
    int failed = 0;
    for (int i = 0; i < n; ++i) failed += cuStreamSynchronize(nullptr) != 0;
    printf("failed %d\n", failed);
    return 0;
  }
  if (mode == "stuck_fs") {  // stuck_fs linkat|ftruncate N [RELEASE_MS]: that call held (hold_syscall); N copies
    const std::string call = argc > 2 ? argv[2] : "linkat";
    int n = argc > 3 ? atoi(argv[3]) : 10;
    if (!hold_syscall(call == "ftruncate" ? SYS_ftruncate : SYS_linkat, argc > 4 ? atol(argv[4]) : -1)) {
      perror("seccomp user notification");
      return 21;
    }
    copies(n);
    // The file thread names the file beside the first call: wait until it is held there (the
    // truncation comes only with the process's end).
    for (int i = 0; call == "linkat" && i < 3000 && g_held_calls.load() == 0; ++i) usleep(1000);
    printf("copies=%d held=%d\n", n, g_held_calls.load());
    return 0;
  }
  if (mode == "kill") {  // N copies, then SIGKILL ourselves
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    copies(n);
    kill(getpid(), SIGKILL);
    return 0;
  }
  // counted FILE N [threads]: N copies (with `threads`, each by a thread of its own, one after another),
  // the count of returned ones kept in FILE (mapped)
  if (mode == "counted" && argc > 3) {
    int fd = open(argv[2], O_RDWR);
    auto* returned = fd >= 0 ? static_cast<volatile uint64_t*>(
                                   mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0))
                             : nullptr;
    if (!returned || returned == MAP_FAILED) return 9;
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096, 1);
    const int n = atoi(argv[3]);
    const bool threads = argc > 4 && !strcmp(argv[4], "threads");
    for (int i = 0; i < n; ++i) {
      if (!threads) {
        CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
      } else {
        std::thread([&] { CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr)); }).join();
      }
      *returned = static_cast<uint64_t>(i) + 1;
    }
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
  if (mode == "exec_chain") {  // exec_chain N: one copy, then exec itself with N-1 (one pid for all N+1 images)
    int n = argc > 2 ? atoi(argv[2]) : 0;
    copies(1);
    if (n <= 0) {
      printf("chain done\n");
      return 0;
    }
    std::string next = std::to_string(n - 1);
    char* args[] = {argv[0], const_cast<char*>("exec_chain"), next.data(), nullptr};
    execv(argv[0], args);
    return 9;
  }
  if (mode == "nproc_threads") {  // nproc_threads N: a copy, then N threads alive at once (a copy each); tasks=
    int n = argc > 2 ? atoi(argv[2]) : 8;
    copies(1);
    static std::atomic<int> go{0};
    std::vector<pthread_t> ts;
    for (int i = 0; i < n; ++i) {
      pthread_t t;
      auto body = [](void*) -> void* {
        while (!go.load()) usleep(100);
        copies(1);
        return nullptr;
      };
      if (pthread_create(&t, nullptr, body, nullptr) == 0) ts.push_back(t);
    }
    int tasks = 0;  // this process's threads while all of them live
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Threads:", 0) == 0) tasks = atoi(line.c_str() + 8);
    printf("tasks=%d\n", tasks);
    go = 1;
    for (pthread_t t : ts) pthread_join(t, nullptr);
    printf("started %zu of %d threads\n", ts.size(), n);
    return static_cast<int>(ts.size()) == n ? 0 : 4;
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
  if (mode == "return_status") {  // return_status N: one copy, then main returns N (no exit() call)
    copies(1, 64);
    return argc > 2 ? atoi(argv[2]) : 0;
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
  if (mode ==
      "profiler") {  // profiler [never]: 10 copies, cuProfilerStart, 20 copies, cuProfilerStop, 5 copies (sizes 1/2/3)
    const bool open_range = argc <= 2;
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(4096, 1);
    for (int i = 0; i < 10; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 1, nullptr));
    if (open_range) CHECK(cuProfilerStart());
    for (int i = 0; i < 20; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 2, nullptr));
    usleep(20000);
    if (open_range) CHECK(cuProfilerStop());
    for (int i = 0; i < 5; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 3, nullptr));
    return 0;
  }
  if (mode == "timed") {  // timed MS: one 1-byte copy every millisecond for MS ms, then 100 ms idle
    const int ms = argc > 2 ? atoi(argv[2]) : 300;
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    std::vector<char> host(64, 1);
    for (int i = 0; i < ms; ++i) {
      CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 1, nullptr));
      usleep(1000);
    }
    usleep(100000);
    return 0;
  }
  if (mode == "long") {  // long N [THREADS=2]: N 64-byte copies in all, then what of the trace is still mapped
    const long n = argc > 2 ? atol(argv[2]) : 1000000;
    const int threads = argc > 3 ? atoi(argv[3]) : 2;
    CHECK(cuInit(0));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([n, threads] {
        CUdeviceptr d;  // a buffer per thread: the fake driver's copy is a plain memcpy
        CHECK(cuMemAlloc_v2(&d, 4096));
        std::vector<char> host(64, 1);
        for (long i = 0; i < n / threads; ++i) CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
      });
    for (auto& t : pool) t.join();
    usleep(100000);  // the file thread's release is asynchronous
    print_trace_mapping();
    return 0;
  }
  // short_threads N [maps|tids [mixed]]: N threads one after another, each one pageable copy (tids:
  // each prints its kernel thread id after it; mixed: they end in turn by returning, by pthread_exit
  // and by cancellation)
  if (mode == "short_threads") {
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    const bool tids = argc > 3 && !strcmp(argv[3], "tids");
    CHECK(cuInit(0));
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, 4096));
    if (tids && argc > 4 && !strcmp(argv[4], "mixed")) {
      for (int i = 0; i < n; ++i) {
        ShortThread st{d, i % 3, {0}};
        pthread_t t;
        if (pthread_create(&t, nullptr, short_thread, &st) != 0) return 8;
        if (st.how == 2) {
          while (!st.copied.load()) usleep(50);
          pthread_cancel(t);
        }
        pthread_join(t, nullptr);
      }
      printf("threads=%d\n", n);
      return 0;
    }
    for (int i = 0; i < n; ++i) {
      std::thread t([d, tids] {
        std::vector<char> host(64, 1);
        CHECK(cuMemcpyHtoDAsync_v2(d, host.data(), 64, nullptr));
        if (tids) printf("tid=%ld\n", static_cast<long>(syscall(SYS_gettid)));
      });
      t.join();
    }
    printf("threads=%d\n", n);
    if (argc > 3 && !tids) {
      usleep(100000);
      print_trace_mapping();
    }
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
  if (mode == "fdsteal" && argc > 4) return fd_steal(argv[2], argv[3], atoi(argv[4]));
  if (mode == "fdsteal_fork" && argc > 4) return fd_steal_fork(argv[2], argv[3], atoi(argv[4]));
  if (mode == "closed_stdio" && argc > 2) return closed_stdio(argv[2]);
  if (mode == "sig_exit" && argc > 4) return sig_exit(argv[2], atoi(argv[3]), atol(argv[4]));
  if (mode == "sig_copy" && argc > 4) return sig_copy(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
  if (mode == "sig_storm" && argc > 3)
    return sig_storm(atoi(argv[2]), atol(argv[3]), argc > 4 && !strcmp(argv[4], "raw"));
  if (mode == "sig_fill" && argc > 2) return sig_fill(atoi(argv[2]));
  if (mode == "cancel") return cancel_pending();
  if (mode == "sig_deferred" && argc > 2) return sig_deferred(atoi(argv[2]));
  if (mode == "sig_longjmp") return sig_longjmp(argc > 2 && !strcmp(argv[2], "alt"));
  if (mode == "sig_api") return sig_api();
  if (mode == "nofile") return nofile();
  if (mode == "runtimes") return runtimes(argc - 2, argv + 2);
  if (mode == "reload" && argc > 2) return reload(argv[2]);
  if (mode == "rt_launch" && argc > 2) return rt_launch(argv[2]);
  if (mode == "rt_copy" && argc > 2) return rt_copy(argv[2]);
  if (mode == "runtime_fsize" && argc > 4) return runtime_fsize(strtoull(argv[2], nullptr, 0), atoi(argv[3]), argv[4]);
  if (mode == "exec_form" && argc > 2) return exec_form(argv[2], argv[0]);
  if (mode == "vfork_exit") {  // a vfork()ed child's _exit(7) must not become this process's status
    copies(3);
    pid_t pid = vfork();
    if (pid == 0) _exit(7);
    int st;
    waitpid(pid, &st, 0);
    copies(2);
    printf("child status %d\n", WEXITSTATUS(st));
    return 0;  // through main's return: the trace's exit status is unknown (-1), never the child's 7
  }
  if (mode == "clone_child" && argc > 2) return clone_child(argv[2]);
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
