// A call in flight when the process dies: a long sleep kernel, then a large pageable
// device-to-host copy behind it (or, with `sync`, a cudaStreamSynchronize of its stream), which blocks
// the main thread; another thread kills the process with SIGKILL (no handler, no exit path runs) while
// the call is still waiting.
//   killed_in_flight [kill_after_ms=1000] [cycles=1e10 (~5 s)] [bytes=2G] [copy|sync]
//   @INFLIGHT_COPY  the pageable cudaMemcpyAsync in flight at the kill
//   @INFLIGHT_SYNC  the cudaStreamSynchronize in flight at the kill (`sync`)
//
// Expected: an in-flight-call finding ("in flight when the process ended") for the call, at its line:
// the copy's stack is taken before the call (a pageable side: the policy gives it one whatever it
// does); the synchronization's site is its caller's return address, stored in the record before the
// call (with the static runtime that caller is inside cudart: no line of this file).
#include "aw_common.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

int main(int argc, char** argv) {
  const long long kill_after_ms = aw::arg_num(argc, argv, 1, 1000);
  const long long cycles = aw::arg_num(argc, argv, 2, 10000000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 3, 2ll << 30));
  const bool sync = argc > 4 && std::string(argv[4]) == "sync";
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  char* pageable = static_cast<char*>(malloc(bytes));
  AW_EXPECT(pageable != nullptr, "malloc of %zu bytes", bytes);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  std::printf("%s %zu bytes behind a %.0f ms kernel; SIGKILL in %lld ms\n", sync ? "synchronizing, then copying" : "copying",
              bytes, aw::cycles_to_ms(cycles), kill_after_ms);
  std::fflush(stdout);
  std::thread([kill_after_ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
    kill(getpid(), SIGKILL);
  }).detach();
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  if (sync) AW_CHECK(cudaStreamSynchronize(s));  // @INFLIGHT_SYNC
  AW_CHECK(cudaMemcpyAsync(pageable, dev, bytes, cudaMemcpyDeviceToHost, s));  // @INFLIGHT_COPY
  std::printf("the copy returned before the kill: the kernel was shorter than kill_after_ms\n");
  return 3;
}
