// Issue 14 item 8 (a call in flight when the process dies): a long sleep kernel, then a large pageable
// device-to-host copy behind it, which blocks the main thread; another thread kills the process with
// SIGKILL (no handler, no exit path runs) while the copy is still waiting.
//   killed_in_flight [kill_after_ms=1000] [cycles=1e10 (~5 s)] [bytes=2G]
//   @INFLIGHT_COPY  the pageable cudaMemcpyAsync in flight at the kill
//
// Today: the trace is not closed cleanly and holds no record of the copy: the report shows the
// process as killed, 0 asynchronous calls in flight, no finding at @INFLIGHT_COPY.
// Expected once issue 14 is done: a finding "in flight when the process ended" for the cudaMemcpyAsync
// at @INFLIGHT_COPY (DtoH, pageable, `bytes`), blocked at least kill_after_ms.
#include "aw_common.h"

#include <signal.h>
#include <unistd.h>

#include <thread>

int main(int argc, char** argv) {
  const long long kill_after_ms = aw::arg_num(argc, argv, 1, 1000);
  const long long cycles = aw::arg_num(argc, argv, 2, 10000000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 3, 2ll << 30));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  char* pageable = static_cast<char*>(malloc(bytes));
  AW_EXPECT(pageable != nullptr, "malloc of %zu bytes", bytes);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  std::printf("copying %zu bytes behind a %.0f ms kernel; SIGKILL in %lld ms\n", bytes, aw::cycles_to_ms(cycles),
              kill_after_ms);
  std::fflush(stdout);
  std::thread([kill_after_ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
    kill(getpid(), SIGKILL);
  }).detach();
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  AW_CHECK(cudaMemcpyAsync(pageable, dev, bytes, cudaMemcpyDeviceToHost, s));  // @INFLIGHT_COPY
  std::printf("the copy returned before the kill: the kernel was shorter than kill_after_ms\n");
  return 3;
}
