// Graphs built explicitly: kernel -> memcpy graphs built with the node API, where
// the memcpy node's host memory is pageable (cudaGraphAddMemcpyNode1D, cudaGraphAddMemcpyNode with
// cudaMemcpy3DParms), or pinned and then swapped for a pageable buffer in the executable graph
// (cudaGraphExecMemcpyNodeSetParams1D), then restored by cudaGraphExecUpdate. Every launch whose graph
// holds a pageable node waits for the graph's kernel (~2 ms); the pinned ones return at once.
//   graph_explicit_nodes [launches=3] [cycles=4e6 (~2 ms)] [bytes=4096]
//
// Today: the node calls are not intercepted; blocking-launch (cudaGraphLaunch, cause unknown) at
// @LAUNCH_1D_PAGEABLE, @LAUNCH_3D_PAGEABLE and @LAUNCH_SET_PAGEABLE; nothing at @LAUNCH_PINNED or
// @LAUNCH_UPDATED.
// Expected: those three findings name the pageable memcpy node (DtoH, pageable)
// and its origin: the cudaGraphAddMemcpyNode1D call at @ADD_NODE_1D_PAGEABLE, the cudaGraphAddMemcpyNode
// call at @ADD_NODE_3D_PAGEABLE, the cudaGraphExecMemcpyNodeSetParams1D call at @SET_PARAMS_PAGEABLE;
// kernel names sleep_kernel. Nothing at @LAUNCH_PINNED, @LAUNCH_UPDATED (after cudaGraphExecUpdate at
// @EXEC_UPDATE restored the pinned node) or at the node calls themselves.
#include "graph_nodes.h"

using aw::add_sleep_kernel;
using aw::launch_and_check;

int main(int argc, char** argv) {
  aw::GraphSetup in = aw::graph_setup(argc, argv);

  // 1. cudaGraphAddMemcpyNode1D with a pageable destination.
  cudaGraph_t g1;
  AW_CHECK(cudaGraphCreate(&g1, 0));
  cudaGraphNode_t k1 = add_sleep_kernel(g1), c1;
  AW_CHECK(cudaGraphAddMemcpyNode1D(&c1, g1, &k1, 1, in.pageable.data(), in.dev, in.bytes, cudaMemcpyDeviceToHost));  // @ADD_NODE_1D_PAGEABLE
  cudaGraphExec_t e1;
  AW_CHECK(cudaGraphInstantiate(&e1, g1, 0));
  auto launch1 = [&] { AW_CHECK(cudaGraphLaunch(e1, in.s)); };  // @LAUNCH_1D_PAGEABLE
  launch_and_check(launch1, in, in.pageable.data(), 30, true, "1D pageable node: launch");

  // 2. cudaGraphAddMemcpyNode (cudaMemcpy3DParms) with a pageable destination.
  cudaGraph_t g2;
  AW_CHECK(cudaGraphCreate(&g2, 0));
  cudaGraphNode_t k2 = add_sleep_kernel(g2), c2;
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(in.dev, in.bytes, in.bytes, 1);
  p.dstPtr = make_cudaPitchedPtr(in.pageable.data(), in.bytes, in.bytes, 1);
  p.extent = make_cudaExtent(in.bytes, 1, 1);
  p.kind = cudaMemcpyDeviceToHost;
  AW_CHECK(cudaGraphAddMemcpyNode(&c2, g2, &k2, 1, &p));  // @ADD_NODE_3D_PAGEABLE
  cudaGraphExec_t e2;
  AW_CHECK(cudaGraphInstantiate(&e2, g2, 0));
  auto launch2 = [&] { AW_CHECK(cudaGraphLaunch(e2, in.s)); };  // @LAUNCH_3D_PAGEABLE
  launch_and_check(launch2, in, in.pageable.data(), 40, true, "3D pageable node: launch");

  // 3. A pinned node, swapped for a pageable buffer in the executable graph, then restored.
  cudaGraph_t g3;
  AW_CHECK(cudaGraphCreate(&g3, 0));
  cudaGraphNode_t k3 = add_sleep_kernel(g3), c3;
  AW_CHECK(cudaGraphAddMemcpyNode1D(&c3, g3, &k3, 1, in.pinned, in.dev, in.bytes, cudaMemcpyDeviceToHost));  // @ADD_NODE_1D_PINNED
  cudaGraphExec_t e3;
  AW_CHECK(cudaGraphInstantiate(&e3, g3, 0));
  auto launch3 = [&] { AW_CHECK(cudaGraphLaunch(e3, in.s)); };  // @LAUNCH_PINNED
  launch_and_check(launch3, in, in.pinned, 50, false, "pinned node: launch");
  AW_CHECK(cudaGraphExecMemcpyNodeSetParams1D(e3, c3, in.pageable.data(), in.dev, in.bytes, cudaMemcpyDeviceToHost));  // @SET_PARAMS_PAGEABLE
  auto launch4 = [&] { AW_CHECK(cudaGraphLaunch(e3, in.s)); };  // @LAUNCH_SET_PAGEABLE
  launch_and_check(launch4, in, in.pageable.data(), 60, true, "node set to pageable: launch");
  cudaGraphExecUpdateResultInfo info{};
  AW_CHECK(cudaGraphExecUpdate(e3, g3, &info));  // @EXEC_UPDATE
  AW_EXPECT(info.result == cudaGraphExecUpdateSuccess, "cudaGraphExecUpdate result %d", int(info.result));
  auto launch5 = [&] { AW_CHECK(cudaGraphLaunch(e3, in.s)); };  // @LAUNCH_UPDATED
  launch_and_check(launch5, in, in.pinned, 70, false, "updated (pinned) node: launch");
  std::printf("explicit graphs: 1D pageable, 3D pageable, pinned, set to pageable, updated: ok\n");

  for (cudaGraphExec_t e : {e1, e2, e3}) AW_CHECK(cudaGraphExecDestroy(e));
  for (cudaGraph_t g : {g1, g2, g3}) AW_CHECK(cudaGraphDestroy(g));
  aw::graph_teardown(in);
  return 0;
}
