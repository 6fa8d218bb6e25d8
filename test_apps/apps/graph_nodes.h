// What the explicitly built graph programs (graph_explicit_nodes.cu, graph_clone.cu) share: the
// sleep kernel as a graph's root node, and the launch loop that checks the graph's copy. The
// launches themselves stay in each program (`launch`), on the lines its expectations name.
#pragma once

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

// Calls `launch` (a launch of a kernel -> memcpy(device to `host`) graph on `s`) `launches` times;
// before each, the device buffer gets a new value, and after each the host buffer must hold it
// (checked at return when `pageable`: the launch waited for the copy).
template <class Launch>
void launch_and_check(Launch&& launch, cudaStream_t s, char* dev, char* host, size_t bytes, int launches,
                      unsigned seed, bool pageable, const char* what) {
  for (int i = 0; i < launches; ++i) {
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
