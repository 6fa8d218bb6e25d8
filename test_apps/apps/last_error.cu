// The runtime's pending error (cudaGetLastError) must survive asyncwatch. The CUDA runtime
// keeps one last error per host thread: every failing runtime call sets it, successful calls leave
// it as it is, cudaPeekAtLastError returns it, cudaGetLastError returns it and resets it to
// cudaSuccess. asyncwatch's wrappers sit between the program and the runtime and make driver calls
// of their own (pointer attributes, completion-evidence events, capture status); none of that may
// set, reset or replace the program's pending error.
//
// Four times: make one runtime call fail (an invalid device, an impossible allocation, an invalid
// copy direction passed to an intercepted call, an invalid launch configuration), then make
// successful intercepted calls (cudaMemcpyAsync from and to pageable and pinned memory, cudaMemsetAsync,
// a kernel launch, cudaLaunchHostFunc, cudaStreamSynchronize, cudaMemcpy, cudaDeviceSynchronize),
// then print what cudaPeekAtLastError and cudaGetLastError return. Every printed line is checked
// here too: a wrong error code exits 1, so the same output with and without asyncwatch means the
// same, correct, error state.
//   last_error [bytes=1M]
#include <cstdint>
#include <vector>

#include "aw_common.h"

namespace {

int g_step = 0;

// Prints "<step>. <what>: <error name>" and checks the code.
void expect_error(const char* what, cudaError_t got, cudaError_t want) {
  std::printf("%d. %s: %s\n", ++g_step, what, cudaGetErrorName(got));
  AW_EXPECT(got == want, "%s returned %s (%d), expected %s (%d)", what, cudaGetErrorName(got), int(got),
            cudaGetErrorName(want), int(want));
}

void host_fn(void* p) { ++*static_cast<int*>(p); }

// Successful intercepted calls; none may change the pending error.
void intercepted_calls(char* dev, char* pinned, std::vector<char>& pageable, size_t bytes, cudaStream_t s, int* ran) {
  AW_CHECK(cudaMemcpyAsync(dev, pageable.data(), bytes, cudaMemcpyHostToDevice, s));  // @PAGEABLE_H2D
  AW_CHECK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s));           // @PINNED_D2H
  AW_CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s));
  AW_CHECK(cudaMemsetAsync(dev, 0x11, bytes, s));
  sleep_kernel<<<1, 1, 0, s>>>(1000);
  AW_CHECK(cudaLaunchHostFunc(s, host_fn, ran));
  AW_CHECK(cudaMemcpyAsync(pageable.data(), dev, bytes, cudaMemcpyDeviceToHost, s));  // @PAGEABLE_D2H
  AW_CHECK(cudaStreamSynchronize(s));
  AW_CHECK(cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost));
  AW_CHECK(cudaDeviceSynchronize());
  // The data went through: the memset's bytes came back both ways.
  AW_EXPECT(pageable[0] == 0x11 && pageable[bytes - 1] == 0x11, "pageable D2H data");
  AW_EXPECT(pinned[0] == 0x11 && pinned[bytes - 1] == 0x11, "pinned D2H data");
  std::printf("   intercepted calls: ok\n");
}

// Peek twice (it must not reset), get (returns and resets), get again (cudaSuccess).
void check_pending(const char* what, cudaError_t want) {
  std::printf("   pending after the intercepted calls (%s):\n", what);
  expect_error("cudaPeekAtLastError", cudaPeekAtLastError(), want);
  expect_error("cudaPeekAtLastError again", cudaPeekAtLastError(), want);
  expect_error("cudaGetLastError", cudaGetLastError(), want);
  expect_error("cudaGetLastError after the reset", cudaGetLastError(), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = size_t(aw::arg_num(argc, argv, 1, 1ll << 20));
  AW_CHECK(cudaFree(nullptr));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  char* pinned = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  AW_CHECK(cudaMallocHost(&pinned, bytes));
  std::vector<char> pageable(bytes, 1);
  int ran = 0;
  expect_error("cudaGetLastError at the start", cudaGetLastError(), cudaSuccess);

  // 1. A runtime call outside asyncwatch's interest fails.
  expect_error("cudaSetDevice(999)", cudaSetDevice(999), cudaErrorInvalidDevice);
  intercepted_calls(dev, pinned, pageable, bytes, s, &ran);
  check_pending("cudaSetDevice(999)", cudaErrorInvalidDevice);

  // 2. An allocation that cannot succeed (1 PiB); cudaMalloc is intercepted (a memory record).
  void* huge = nullptr;
  expect_error("cudaMalloc(1 PiB)", cudaMalloc(&huge, size_t(1) << 50), cudaErrorMemoryAllocation);
  intercepted_calls(dev, pinned, pageable, bytes, s, &ran);
  check_pending("cudaMalloc(1 PiB)", cudaErrorMemoryAllocation);

  // 3. An intercepted copy itself fails: the wrapper must pass the error on and leave it pending.
  expect_error("cudaMemcpyAsync with kind 42",
               cudaMemcpyAsync(dev, pageable.data(), bytes, static_cast<cudaMemcpyKind>(42), s),  // @BAD_KIND
               cudaErrorInvalidMemcpyDirection);
  intercepted_calls(dev, pinned, pageable, bytes, s, &ran);
  check_pending("cudaMemcpyAsync with kind 42", cudaErrorInvalidMemcpyDirection);

  // 4. The classic pattern: a launch with an impossible configuration (2048 threads per block)
  //    returns nothing; the error is only pending. CUDA 13's runtime passes the launch to
  //    cuLaunchKernel and answers cudaErrorInvalidValue (seen on the H200, driver 580; not
  //    cudaErrorInvalidConfiguration), and so does the simulator.
  sleep_kernel<<<1, 2048, 0, s>>>(1000);  // @BAD_LAUNCH
  intercepted_calls(dev, pinned, pageable, bytes, s, &ran);
  check_pending("sleep_kernel<<<1, 2048>>>", cudaErrorInvalidValue);

  AW_EXPECT(ran == 4, "host function ran %d times, expected 4", ran);
  std::printf("host functions ran: %d\n", ran);
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaStreamDestroy(s));
  expect_error("cudaGetLastError at the end", cudaGetLastError(), cudaSuccess);
  return 0;
}
