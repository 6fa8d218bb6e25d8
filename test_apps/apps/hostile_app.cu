// Hostile but correct programs, run bare and under asyncwatch by
// test_apps/gpu/run_hostile.sh (the H200, static and shared runtime) and on the simulator in CI:
// what they print and their exit status must not depend on asyncwatch.
//
//   hostile_app fds closefrom|close_range|dup2 FILE [CHUNKS=2048]
//       after its first CUDA calls, closes (or dup2()s its own file over) every descriptor from 3 up
//       that is not the driver's (devices, pipes, sockets, anonymous inodes, and whatever was open
//       once the context existed), then writes FILE (CHUNKS x 4 KiB, 40 copies after each chunk)
//       and checks it and the device data
//   hostile_app fork_fds closefrom|dup2 FILE [CHUNKS=2048]
//       after its first CUDA calls, opens FILE and writes half of it around copies, then fork()s: the
//       child (no CUDA calls: a real driver refuses them after fork) closes its copy of FILE, then
//       closes (or dup2()s its own FILE.child over) every descriptor from 3 up, writes FILE.child and
//       checks it; meanwhile the parent writes the other half around copies; both files checked
//   hostile_app stdio REPORT
//       run with some of 0/1/2 closed: read(0)/write(1|2) on the closed ones before and after the
//       first CUDA calls, a file of its own (the lowest free descriptor) written around copies and
//       checked; results to REPORT (stdout may be closed)
//   hostile_app sig_exit _exit|exit N STEP_US
//       N children; child k arms a timer at k * STEP_US, makes its first CUDA calls, and is ended
//       by the handler (_exit(42) or exit(43)); prints how many ended so, hung (killed after 20 s)
//   hostile_app sig_cuda N STEP_US
//       N children; child k's timer at k * STEP_US calls cudaStreamQuery in the handler while the
//       first CUDA call may be in progress; the child waits for it and exits 0
//   hostile_app cancel
//       a thread with a pending pthread_cancel makes the first intercepted CUDA call
//   hostile_app nofile
//       RLIMIT_NOFILE lowered so that exactly one descriptor is free at the first intercepted call
//
// AW_HOSTILE_DENY_UNSHARE=1: a seccomp filter makes unshare() fail (a container's default profile),
// so that asyncwatch keeps its trace descriptor in the process's table.
// Exit status: 0 fine, 1 wrong data, 2 a failing CUDA call, other codes per mode (stderr says).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "aw_common.h"
#include "deny_unshare.h"

namespace {

constexpr size_t kChunk = 4096;

std::set<int> open_fds() {
  std::set<int> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    int self = dirfd(d);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = atoi(e->d_name);
      if (fd != self) fds.insert(fd);
    }
    closedir(d);
  }
  return fds;
}

// The driver's descriptors: devices, pipes, sockets, anonymous inodes (eventfd...), plus whatever
// was open right after the context was created (`at_context`).
bool drivers(int fd, const std::set<int>& at_context) {
  if (fd <= 2 || at_context.count(fd)) return true;
  char link[64], target[512];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return true;
  target[n] = 0;
  return !strncmp(target, "/dev/", 5) || !strncmp(target, "pipe:", 5) || !strncmp(target, "socket:", 7) ||
         !strncmp(target, "anon_inode:", 11);
}

void fill_chunk(char* buf, int c) {
  for (size_t i = 0; i < kChunk; ++i) buf[i] = static_cast<char>('a' + (c + i) % 26);
}

bool check_file(const char* path, int chunks) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char want[kChunk], got[kChunk];
  bool ok = true;
  for (int c = 0; c < chunks && ok; ++c) {
    fill_chunk(want, c);
    ok = read(fd, got, kChunk) == static_cast<ssize_t>(kChunk) && !memcmp(want, got, kChunk);
  }
  ok = ok && read(fd, got, 1) == 0;  // not grown, not overwritten
  close(fd);
  return ok;
}

struct Buffers {
  char* dev = nullptr;
  char* pinned = nullptr;
  cudaStream_t stream = nullptr;
};

Buffers first_calls() {
  Buffers b;
  AW_CHECK(cudaMalloc(&b.dev, 1 << 20));  // the first intercepted call: asyncwatch opens its trace
  AW_CHECK(cudaMallocHost(&b.pinned, 1 << 20));
  AW_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  for (int i = 0; i < 1 << 20; ++i) b.pinned[i] = static_cast<char>(i * 7);
  AW_CHECK(cudaMemcpyAsync(b.dev, b.pinned, 1 << 20, cudaMemcpyHostToDevice, b.stream));
  for (int i = 0; i < 1000; ++i) AW_CHECK(cudaMemcpyAsync(b.dev, b.pinned, 64, cudaMemcpyHostToDevice, b.stream));
  AW_CHECK(cudaStreamSynchronize(b.stream));
  return b;
}

bool device_data_ok(const Buffers& b) {
  std::vector<char> back(1 << 20);
  if (cudaMemcpy(back.data(), b.dev, back.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (size_t i = 0; i < back.size(); ++i)
    if (back[i] != static_cast<char>(i * 7)) return false;
  return true;
}

int fds_mode(const std::string& how, const char* path, int chunks) {
  AW_CHECK(cudaSetDevice(0));  // the context (not an intercepted call)
  std::set<int> at_context = open_fds();
  Buffers b = first_calls();
  int own = -1;
  std::vector<int> replaced;
  if (how == "dup2") own = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::set<int> now = open_fds();
  int last_drivers = 2;
  for (int fd : now)
    if (drivers(fd, at_context)) last_drivers = std::max(last_drivers, fd);
  if (how == "closefrom" || how == "close_range") {
    // Every run of numbers between the driver's descriptors with close_range(), the rest with
    // closefrom() (close_range mode: close_range(last + 1, ~0U) instead).
    int run_start = 3;
    for (int fd = 3; fd <= last_drivers; ++fd) {
      if (!(now.count(fd) && drivers(fd, at_context))) continue;
      if (fd > run_start) syscall(SYS_close_range, run_start, fd - 1, 0);
      run_start = fd + 1;
    }
    if (last_drivers >= run_start) syscall(SYS_close_range, run_start, last_drivers, 0);
    if (how == "closefrom") closefrom(last_drivers + 1);
    else syscall(SYS_close_range, last_drivers + 1, ~0u, 0);
  }
  if (how == "dup2") {
    if (own < 0) return 22;
    // Every number from 3 up that is not the driver's now refers to the program's own file.
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd == own || (now.count(fd) && drivers(fd, at_context))) continue;
      if (dup2(own, fd) == fd) replaced.push_back(fd);
    }
  } else if (how != "closefrom" && how != "close_range") {
    return 3;
  }
  if (own < 0) own = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (own < 0) return 22;
  char buf[kChunk];
  for (int c = 0; c < chunks; ++c) {
    fill_chunk(buf, c);
    if (write(own, buf, kChunk) != static_cast<ssize_t>(kChunk)) return 23;
    for (int k = 0; k < 40; ++k) AW_CHECK(cudaMemcpyAsync(b.dev, b.pinned, 64, cudaMemcpyHostToDevice, b.stream));
    if (c % 16 == 15) AW_CHECK(cudaStreamSynchronize(b.stream));
  }
  AW_CHECK(cudaStreamSynchronize(b.stream));
  for (int fd : replaced) close(fd);
  close(own);
  printf("own file %s\n", check_file(path, chunks) ? "intact" : "CHANGED");
  AW_EXPECT(device_data_ok(b), "device data differs");
  printf("device data ok\n");
  return 0;
}

int stdio_mode(const char* report) {
  bool closed[3];
  for (int i = 0; i < 3; ++i) closed[i] = fcntl(i, F_GETFD) < 0 && errno == EBADF;
  std::string out;
  auto probe = [&](const char* when) {
    for (int i = 0; i < 3; ++i) {
      if (!closed[i]) continue;
      char c;
      errno = 0;
      ssize_t r = i == 0 ? read(0, &c, 1) : write(i, "x", 1);
      out += "fd " + std::to_string(i) + " " + when + ": " +
             (r < 0 && errno == EBADF ? "EBADF" : fcntl(i, F_GETFD) >= 0 ? "open (the driver's?)" : "other") + "\n";
    }
  };
  probe("before");
  AW_CHECK(cudaSetDevice(0));
  Buffers b = first_calls();
  probe("after");
  std::string path = std::string(report) + ".own";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 22;
  char buf[kChunk];
  for (int c = 0; c < 64; ++c) {
    fill_chunk(buf, c);
    if (write(fd, buf, kChunk) != static_cast<ssize_t>(kChunk)) return 23;
    for (int k = 0; k < 10; ++k) AW_CHECK(cudaMemcpyAsync(b.dev, b.pinned, 64, cudaMemcpyHostToDevice, b.stream));
  }
  AW_CHECK(cudaStreamSynchronize(b.stream));
  close(fd);
  out += std::string("own file ") + (check_file(path.c_str(), 64) ? "intact" : "CHANGED") + "\n";
  out += std::string("device data ") + (device_data_ok(b) ? "ok" : "DIFFERS") + "\n";
  unlink(path.c_str());
  FILE* f = fopen(report, "w");
  if (!f) return 25;
  fputs(out.c_str(), f);
  fclose(f);
  return 0;
}

// Waits for `pid` up to `seconds`, then kills it. Its wait status, or -1 when it had to be killed.
int wait_with_timeout(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0) return -2;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Item 1 after fork(): the child's descriptor games must leave the parent's file, the parent's
// trace and its own file alone.
int fork_fds_mode(const std::string& how, const char* path, int chunks) {
  if (how != "closefrom" && how != "dup2") return 3;
  AW_CHECK(cudaSetDevice(0));
  Buffers b = first_calls();
  int own = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (own < 0) return 22;
  char buf[kChunk];
  auto write_half = [&](int from, int to) {
    for (int c = from; c < to; ++c) {
      fill_chunk(buf, c);
      if (write(own, buf, kChunk) != static_cast<ssize_t>(kChunk)) return false;
      for (int k = 0; k < 40; ++k) AW_CHECK(cudaMemcpyAsync(b.dev, b.pinned, 64, cudaMemcpyHostToDevice, b.stream));
      if (c % 16 == 15) AW_CHECK(cudaStreamSynchronize(b.stream));
    }
    return true;
  };
  if (!write_half(0, chunks / 2)) return 23;
  AW_CHECK(cudaStreamSynchronize(b.stream));
  std::string child_path = std::string(path) + ".child";
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return 11;
  if (pid == 0) {
    close(own);  // its inherited copy of the parent's file
    int mine = open(child_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (mine < 0) _exit(22);
    std::vector<int> replaced;
    if (how == "closefrom") {
      if (mine != 3) {
        if (dup2(mine, 3) != 3) _exit(24);
        close(mine);
        mine = 3;
      }
      closefrom(4);
    } else {
      for (int fd = 3; fd < 1024; ++fd)
        if (fd != mine && dup2(mine, fd) == fd) replaced.push_back(fd);
    }
    for (int c = 0; c < chunks; ++c) {
      fill_chunk(buf, c);
      if (write(mine, buf, kChunk) != static_cast<ssize_t>(kChunk)) _exit(23);
    }
    for (int fd : replaced) close(fd);
    close(mine);
    _exit(check_file(child_path.c_str(), chunks) ? 0 : 1);
  }
  if (!write_half(chunks / 2, chunks)) return 23;
  AW_CHECK(cudaStreamSynchronize(b.stream));
  int st = wait_with_timeout(pid, 60);
  close(own);
  unlink(child_path.c_str());
  printf("child %s\n", st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "exit 0, its file intact" : "FAILED");
  printf("own file %s\n", check_file(path, chunks) ? "intact" : "CHANGED");
  AW_EXPECT(device_data_ok(b), "device data differs");
  printf("device data ok\n");
  return 0;
}

// SIGALRM to this thread (not to the process: a driver thread that does not block it would get
// it, and a handler that interrupts the driver's own worker is not what is being tested).
void arm_timer(long first_us) {
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGALRM;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));  // sigev_notify_thread_id (glibc >= 2.38)
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
    perror("timer_create");
    _exit(21);
  }
  itimerspec its{};
  its.it_value.tv_sec = first_us / 1000000;
  its.it_value.tv_nsec = (first_us % 1000000) * 1000;
  timer_settime(timer, 0, &its, nullptr);
}

void install(void (*fn)(int)) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
}

volatile sig_atomic_t g_handler_ran = 0;
volatile sig_atomic_t g_handler_failed = 0;
void on_alarm_exit(int) { _exit(42); }
void on_alarm_libc_exit(int) { exit(43); }
void on_alarm_query(int) {
  int saved = errno;
  cudaError_t e = cudaStreamQuery(0);
  if (e != cudaSuccess && e != cudaErrorNotReady) g_handler_failed = 1;
  g_handler_ran = 1;
  errno = saved;
}

int children(int n, long step_us, bool query, const std::string& kind) {
  int want = query ? 0 : kind == "_exit" ? 42 : 43;
  int ok = 0, hung = 0, other = 0;
  for (int k = 0; k < n; ++k) {
    pid_t pid = fork();
    if (pid < 0) return 11;
    if (pid == 0) {
      AW_CHECK(cudaSetDevice(0));  // the context, before the timer (not an intercepted call)
      if (query) {
        // The legacy stream exists before the handler queries it (an event recorded on it: not an
        // intercepted call). The simulator creates it on first use, allocating: a handler that
        // interrupted an allocation of the first call would deadlock in the simulator, with or
        // without asyncwatch (a real driver has it since the context).
        cudaEvent_t ev;
        AW_CHECK(cudaEventCreate(&ev));
        AW_CHECK(cudaEventRecord(ev, 0));
      }
      install(query ? on_alarm_query : kind == "_exit" ? on_alarm_exit : on_alarm_libc_exit);
      arm_timer(1 + k * step_us);
      char* dev;
      AW_CHECK(cudaMalloc(&dev, 4096));  // the first intercepted call: the trace opens here
      if (query) {
        while (!g_handler_ran) usleep(100);
        _exit(g_handler_failed ? 14 : 0);
      }
      std::vector<char> host(4096, 1);
      for (;;) AW_CHECK(cudaMemcpy(dev, host.data(), 64, cudaMemcpyHostToDevice));
    }
    int st = wait_with_timeout(pid, 20);
    if (st == -1) ++hung;
    else if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == want) ++ok;
    else ++other;
  }
  printf("children=%d %s=%d hung=%d other=%d\n", n, query ? "ok" : "ended_by_handler", ok, hung, other);
  return hung || other ? 13 : 0;
}

std::atomic<int> g_cancel_step{0};
void* cancel_thread(void*) {
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  g_cancel_step = 1;
  while (g_cancel_step.load() < 2) usleep(100);
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);  // the cancellation is pending now
  char* dev;
  cudaError_t e = cudaMalloc(&dev, 4096);  // the first intercepted call
  static char host[64];
  if (e == cudaSuccess) e = cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
  g_cancel_step = e == cudaSuccess ? 3 : 4;
  pthread_testcancel();
  return nullptr;
}

int cancel_mode() {
  AW_CHECK(cudaSetDevice(0));
  pthread_t t;
  if (pthread_create(&t, nullptr, cancel_thread, nullptr) != 0) return 11;
  while (g_cancel_step.load() < 1) usleep(100);
  pthread_cancel(t);
  g_cancel_step = 2;
  void* ret = nullptr;
  pthread_join(t, &ret);
  printf("thread %s, its calls %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled",
         g_cancel_step.load() == 3 ? "succeeded" : g_cancel_step.load() == 4 ? "failed" : "did not return");
  Buffers b = first_calls();
  AW_EXPECT(device_data_ok(b), "device data differs");
  printf("main: device data ok\n");
  return ret == PTHREAD_CANCELED ? 0 : 15;
}

int nofile_mode() {
  AW_CHECK(cudaSetDevice(0));
  std::set<int> fds = open_fds();
  int top = fds.empty() ? 2 : *fds.rbegin();
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlimit low{static_cast<rlim_t>(std::max(256, top + 2)), rl.rlim_max};
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
  char* dev = nullptr;
  cudaError_t e = cudaMalloc(&dev, 4096);  // the first intercepted call
  printf("first call: %s\n", cudaGetErrorName(e));
  if (e == cudaSuccess) {
    static char host[4096];
    for (int i = 0; i < 10; ++i) e = e == cudaSuccess ? cudaMemcpy(dev, host, 64, cudaMemcpyHostToDevice) : e;
    printf("copies: %s\n", cudaGetErrorName(e));
  }
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  printf("a further open %s\n", fd < 0 ? "fails" : "succeeds");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  deny_unshare_if("AW_HOSTILE_DENY_UNSHARE");
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "fds" && argc > 3) return fds_mode(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 2048);
  if (mode == "fork_fds" && argc > 3) return fork_fds_mode(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 2048);
  if (mode == "stdio" && argc > 2) return stdio_mode(argv[2]);
  if (mode == "sig_exit" && argc > 4) return children(atoi(argv[3]), atol(argv[4]), false, argv[2]);
  if (mode == "sig_cuda" && argc > 3) return children(atoi(argv[2]), atol(argv[3]), true, "");
  if (mode == "cancel") return cancel_mode();
  if (mode == "nofile") return nofile_mode();
  fprintf(stderr,
          "usage: hostile_app fds closefrom|close_range|dup2 FILE [CHUNKS] | fork_fds closefrom|dup2 FILE [CHUNKS] | stdio REPORT | sig_exit _exit|exit N "
          "STEP_US | sig_cuda N STEP_US | cancel | nofile\n");
  return 2;
}
