// Stream capture and graph launch: copies, a memset and a sleep kernel captured into a graph are
// recorded, not run, and must not be reported as blocking (@CAPTURED_H2D, @CAPTURED_MEMSET,
// @CAPTURED_D2H, @CAPTURED_KERNEL); the graph is then launched several times (@GRAPH_LAUNCH).
// The captured copies use pinned memory (capturing a pageable copy is not portable).
//   graph_capture [cycles=1e8 (~50 ms)] [bytes=4M] [launches=3]
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 4ll << 20));
  const int launches = int(aw::arg_num(argc, argv, 3, 3));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *in = nullptr, *out = nullptr, *dev = nullptr;
  AW_CHECK(cudaMallocHost(&in, bytes));
  AW_CHECK(cudaMallocHost(&out, bytes));
  AW_CHECK(cudaMalloc(&dev, 2 * bytes));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaStreamSynchronize(s));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  AW_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  AW_CHECK(cudaMemcpyAsync(dev, in, bytes, cudaMemcpyHostToDevice, s));  // @CAPTURED_H2D
  AW_CHECK(cudaMemsetAsync(dev + bytes, 0x42, bytes, s));  // @CAPTURED_MEMSET
  sleep_kernel<<<1, 1, 0, s>>>(cycles);  // @CAPTURED_KERNEL
  AW_CHECK(cudaMemcpyAsync(out, dev, bytes, cudaMemcpyDeviceToHost, s));  // @CAPTURED_D2H
  AW_CHECK(cudaStreamEndCapture(s, &graph));
  AW_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::printf("captured: 2 copies, 1 memset, 1 kernel\n");

  for (int i = 0; i < launches; ++i) {
    aw::fill(in, bytes, unsigned(70 + i));
    std::memset(out, 0, bytes);
    long long t0 = aw::now_ns();
    AW_CHECK(cudaGraphLaunch(exec, s));  // @GRAPH_LAUNCH
    aw::timing("cudaGraphLaunch returned after", aw::now_ns() - t0);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(aw::check(out, bytes, unsigned(70 + i)), "graph launch %d: wrong data", i);
  }
  AW_CHECK(cudaMemcpy(out, dev + bytes, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; i += 4093) AW_EXPECT(out[i] == 0x42, "captured memset: byte %zu", i);
  std::printf("graph launched %d times: ok\n", launches);

  AW_CHECK(cudaGraphExecDestroy(exec));
  AW_CHECK(cudaGraphDestroy(graph));
  AW_CHECK(cudaFreeHost(in));
  AW_CHECK(cudaFreeHost(out));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
