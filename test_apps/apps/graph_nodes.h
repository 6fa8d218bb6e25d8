// What the explicitly built graph programs (graph_explicit_nodes.cu, graph_clone.cu) share: their
// set-up (graph_setup), the sleep kernel as a graph's root node, and the launch loop that checks the
// graph's copy. The launches themselves stay in each program (`launch`), on the lines its
// expectations name.
#pragma once

#include <vector>

#include "aw_common.h"

namespace aw {

inline long long g_graph_cycles;  // the sleep kernel's argument in every graph
inline void* g_graph_args[] = {&g_graph_cycles};

// Adds the sleep kernel to `g` as a root node; returns the node.
inline cudaGraphNode_t add_sleep_kernel(cudaGraph_t g) {
  cudaKernelNodeParams k{};
  k.func = reinterpret_cast<void*>(&sleep_kernel);
  k.gridDim = dim3(1);
  k.blockDim = dim3(1);
  k.kernelParams = g_graph_args;
  cudaGraphNode_t node;
  AW_CHECK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &k));
  return node;
}

// What both programs set up from `[launches=3] [cycles=4e6] [bytes=4096]`: a non-blocking stream,
// device, pinned and pageable buffers of `bytes`, and a warmed-up kernel; graph_teardown frees them.
struct GraphSetup {
  int launches = 0;
  size_t bytes = 0;
  cudaStream_t s = nullptr;
  char* dev = nullptr;
  char* pinned = nullptr;
  std::vector<char> pageable;
};

inline GraphSetup graph_setup(int argc, char** argv) {
  GraphSetup g;
  g.launches = int(arg_num(argc, argv, 1, 3));
  g_graph_cycles = arg_num(argc, argv, 2, 4000000);
  g.bytes = size_t(arg_num(argc, argv, 3, 4096));
  AW_CHECK(cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking));
  AW_CHECK(cudaMalloc(&g.dev, g.bytes));
  AW_CHECK(cudaMallocHost(&g.pinned, g.bytes));
  g.pageable.resize(g.bytes);
  sleep_kernel<<<1, 1, 0, g.s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(g.s));
  return g;
}

inline void graph_teardown(GraphSetup& g) {
  AW_CHECK(cudaFreeHost(g.pinned));
  AW_CHECK(cudaFree(g.dev));
  AW_CHECK(cudaStreamDestroy(g.s));
}

// Calls `launch` (a launch of a kernel -> memcpy(device to `host`) graph on `in.s`) `in.launches`
// times; before each, the device buffer gets a new value, and after each the host buffer must hold it
// (checked at return when `pageable`: the launch waited for the copy).
template <class Launch>
void launch_and_check(Launch&& launch, const GraphSetup& in, char* host, unsigned seed, bool pageable,
                      const char* what) {
  cudaStream_t s = in.s;
  char* dev = in.dev;
  const size_t bytes = in.bytes;
  for (int i = 0; i < in.launches; ++i) {
    AW_CHECK(cudaMemsetAsync(dev, int(seed + i), bytes, s));
    std::memset(host, 0, bytes);
    long long t0 = now_ns();
    launch();
    timing(what, now_ns() - t0);
    if (pageable) AW_EXPECT(host[bytes - 1] == char(seed + i), "%s %d: data not there on return", what, i);
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(host[0] == char(seed + i) && host[bytes - 1] == char(seed + i), "%s %d: wrong data", what, i);
  }
}

}  // namespace aw
