// Child processes: a fork()ed child and an exec()ed child (this program again, with the argument
// "exec-child") each make a pageable D2H copy after a sleep kernel, then the parent does too.
// CUDA is first used in each process after the fork, as CUDA requires.
//   fork_exec [cycles=4e7 (~20 ms)] [bytes=4M]
//   @FORK_CHILD_D2H  @EXEC_CHILD_D2H  @PARENT_D2H   (three processes, one copy each)
#include "aw_common.h"

#include <sys/wait.h>
#include <unistd.h>

static long long g_cycles;
static size_t g_bytes;

// One pageable D2H after a sleep kernel; `which` selects the call site.
static int copy_after_kernel(int which) {
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, g_bytes));
  char* host = static_cast<char*>(malloc(g_bytes));
  aw::fill(host, g_bytes, unsigned(60 + which));
  AW_CHECK(cudaMemcpy(dev, host, g_bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before its DMA is done; the non-blocking stream
  // would not wait for it.
  AW_CHECK(cudaDeviceSynchronize());
  std::memset(host, 0, g_bytes);
  sleep_kernel<<<1, 1, 0, s>>>(g_cycles);
  if (which == 0) {
    AW_CHECK(cudaMemcpyAsync(host, dev, g_bytes, cudaMemcpyDeviceToHost, s));  // @FORK_CHILD_D2H
  } else if (which == 1) {
    AW_CHECK(cudaMemcpyAsync(host, dev, g_bytes, cudaMemcpyDeviceToHost, s));  // @EXEC_CHILD_D2H
  } else {
    AW_CHECK(cudaMemcpyAsync(host, dev, g_bytes, cudaMemcpyDeviceToHost, s));  // @PARENT_D2H
  }
  bool ok = aw::check(host, g_bytes, unsigned(60 + which));
  AW_CHECK(cudaStreamSynchronize(s));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  free(host);
  if (!ok) std::fprintf(stderr, "process %d (%d): wrong data\n", int(getpid()), which);
  return ok ? 0 : 1;
}

static int wait_child(pid_t pid, const char* what) {
  int status = 0;
  AW_EXPECT(waitpid(pid, &status, 0) == pid, "waitpid %s", what);
  AW_EXPECT(WIFEXITED(status), "%s child did not exit normally", what);
  return WEXITSTATUS(status);
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "exec-child") {
    g_cycles = aw::arg_num(argc, argv, 2, 40000000ll);
    g_bytes = size_t(aw::arg_num(argc, argv, 3, 4ll << 20));
    return copy_after_kernel(1);
  }
  g_cycles = aw::arg_num(argc, argv, 1, 40000000ll);
  g_bytes = size_t(aw::arg_num(argc, argv, 2, 4ll << 20));
  std::fflush(stdout);

  pid_t pid = fork();
  AW_EXPECT(pid >= 0, "fork failed");
  if (pid == 0) {
    std::fflush(stdout);
    _exit(copy_after_kernel(0));
  }
  int rc = wait_child(pid, "fork");
  AW_EXPECT(rc == 0, "fork child exited with %d", rc);
  std::printf("fork child: ok\n");
  std::fflush(stdout);

  pid = fork();
  AW_EXPECT(pid >= 0, "fork failed");
  if (pid == 0) {
    std::string c = std::to_string(g_cycles), b = std::to_string(g_bytes);
    execl("/proc/self/exe", argv[0], "exec-child", c.c_str(), b.c_str(), static_cast<char*>(nullptr));
    std::perror("execl /proc/self/exe");
    _exit(127);
  }
  rc = wait_child(pid, "exec");
  AW_EXPECT(rc == 0, "exec child exited with %d", rc);
  std::printf("exec child: ok\n");

  rc = copy_after_kernel(2);
  AW_EXPECT(rc == 0, "parent: wrong data");
  std::printf("parent: ok\n");
  return 0;
}
