// Captured graphs: a graph captured from a 2 ms kernel and an 8-byte device-to-host
// copy, once into pageable memory and once into pinned memory (the case measured on the H200:
// cudaGraphLaunch returned after 2.03-2.05 ms with the pageable node, 4-20 us with the pinned one,
// measured on the H200). A memcpy node with pageable host memory makes the launch itself wait for the graph's
// earlier work, like a pageable cudaMemcpyAsync.
//   graph_pageable_capture [launches=5] [cycles=4e6 (~2 ms)]
//
// Today: blocking-launch (cudaGraphLaunch) cause unknown at @LAUNCH_PAGEABLE, kernel "(unnamed
// kernel)"; nothing at @LAUNCH_PINNED or at the captured calls.
// Expected: the finding at @LAUNCH_PAGEABLE names the graph's pageable memcpy
// node (DtoH, pageable, 8 bytes) with its origin, the captured call at @CAPTURED_D2H_PAGEABLE, and the
// graph's kernel (sleep_kernel); nothing at @LAUNCH_PINNED, @CAPTURED_D2H_PINNED, @CAPTURED_KERNEL.
#include "aw_common.h"

static cudaGraphExec_t capture(cudaStream_t s, long long cycles, void* dst, const void* dev, bool pageable) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  AW_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  sleep_kernel<<<1, 1, 0, s>>>(cycles);  // @CAPTURED_KERNEL
  if (pageable)
    AW_CHECK(cudaMemcpyAsync(dst, dev, 8, cudaMemcpyDeviceToHost, s));  // @CAPTURED_D2H_PAGEABLE
  else
    AW_CHECK(cudaMemcpyAsync(dst, dev, 8, cudaMemcpyDeviceToHost, s));  // @CAPTURED_D2H_PINNED
  AW_CHECK(cudaStreamEndCapture(s, &g));
  AW_CHECK(cudaGraphInstantiate(&exec, g, 0));
  AW_CHECK(cudaGraphDestroy(g));
  return exec;
}

int main(int argc, char** argv) {
  const int launches = int(aw::arg_num(argc, argv, 1, 5));
  const long long cycles = aw::arg_num(argc, argv, 2, 4000000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  char* pinned = nullptr;
  char pageable[8];
  AW_CHECK(cudaMalloc(&dev, 8));
  AW_CHECK(cudaMallocHost(&pinned, 8));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  cudaGraphExec_t with_pageable = capture(s, cycles, pageable, dev, true);
  cudaGraphExec_t with_pinned = capture(s, cycles, pinned, dev, false);
  std::printf("captured: kernel + 8-byte D2H, pageable and pinned\n");
  for (int i = 0; i < launches; ++i) {
    AW_CHECK(cudaMemsetAsync(dev, 10 + i, 8, s));
    std::memset(pageable, 0, sizeof pageable);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaGraphLaunch(with_pageable, s));  // @LAUNCH_PAGEABLE
    aw::timing("cudaGraphLaunch (pageable node) returned after", aw::now_ns() - t0);
    // The launch waited for the copy: the bytes are there before any synchronization.
    AW_EXPECT(pageable[7] == char(10 + i), "launch %d: pageable node's data not there on return", i);
    AW_CHECK(cudaMemsetAsync(dev, 20 + i, 8, s));
    std::memset(pinned, 0, 8);
    t0 = aw::now_ns();
    AW_CHECK(cudaGraphLaunch(with_pinned, s));  // @LAUNCH_PINNED
    aw::timing("cudaGraphLaunch (pinned node) returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(pinned[7] == char(20 + i), "launch %d: pinned node's data wrong", i);
  }
  std::printf("graphs launched %d times each: ok\n", launches);
  AW_CHECK(cudaGraphExecDestroy(with_pageable));
  AW_CHECK(cudaGraphExecDestroy(with_pinned));
  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
