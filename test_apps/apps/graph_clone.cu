// Cloned graphs: a kernel -> memcpy graph whose memcpy node has a pageable destination, cloned with
// cudaGraphClone and the clone instantiated and launched; a pinned graph's clone (launches return at
// once); and an executable graph updated from the pageable clone (cudaGraphExecUpdate), whose launches
// then wait as the clone's do. Every launch whose graph holds the pageable node waits for the kernel.
//   graph_clone [launches=3] [cycles=4e6 (~2 ms)] [bytes=4096]
//
// Expected: blocking-launch cause graph-host-memcpy at @LAUNCH_CLONE (the clone's launches) and at
// @LAUNCH_UPDATED_TO_CLONE, each naming the node's origin, the cudaGraphAddMemcpyNode1D call at
// @ADD_NODE_PAGEABLE (a clone's nodes are copies of the original's). Nothing at @LAUNCH_PINNED_CLONE,
// and nothing at the clone or update calls themselves.
#include "graph_nodes.h"

using aw::launch_and_check;

namespace {
// kernel -> memcpy (device to `host`).
cudaGraph_t kernel_then_copy(char* host, char* dev, size_t bytes, int marker) {
  cudaGraph_t g;
  AW_CHECK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t kn = aw::add_sleep_kernel(g), cn;
  if (marker == 1) AW_CHECK(cudaGraphAddMemcpyNode1D(&cn, g, &kn, 1, host, dev, bytes, cudaMemcpyDeviceToHost));  // @ADD_NODE_PAGEABLE
  if (marker == 2) AW_CHECK(cudaGraphAddMemcpyNode1D(&cn, g, &kn, 1, host, dev, bytes, cudaMemcpyDeviceToHost));  // @ADD_NODE_PINNED
  return g;
}
}  // namespace

int main(int argc, char** argv) {
  aw::GraphSetup in = aw::graph_setup(argc, argv);

  // 1. The pageable graph's clone, instantiated and launched (the original is never launched).
  cudaGraph_t original = kernel_then_copy(in.pageable.data(), in.dev, in.bytes, 1);
  cudaGraph_t clone;
  AW_CHECK(cudaGraphClone(&clone, original));  // @CLONE_PAGEABLE
  cudaGraphExec_t e1;
  AW_CHECK(cudaGraphInstantiate(&e1, clone, 0));
  auto launch1 = [&] { AW_CHECK(cudaGraphLaunch(e1, in.s)); };  // @LAUNCH_CLONE
  launch_and_check(launch1, in, in.pageable.data(), 30, true, "clone of a pageable graph: launch");

  // 2. A pinned graph's clone: its launches only queue.
  cudaGraph_t pinned_graph = kernel_then_copy(in.pinned, in.dev, in.bytes, 2);
  cudaGraph_t pinned_clone;
  AW_CHECK(cudaGraphClone(&pinned_clone, pinned_graph));  // @CLONE_PINNED
  cudaGraphExec_t e2;
  AW_CHECK(cudaGraphInstantiate(&e2, pinned_clone, 0));
  auto launch2 = [&] { AW_CHECK(cudaGraphLaunch(e2, in.s)); };  // @LAUNCH_PINNED_CLONE
  launch_and_check(launch2, in, in.pinned, 40, false, "clone of a pinned graph: launch");

  // 3. The pinned executable graph updated from the pageable clone (same topology): it now copies to
  // the pageable buffer, and its launches wait.
  cudaGraphExecUpdateResultInfo info{};
  AW_CHECK(cudaGraphExecUpdate(e2, clone, &info));  // @EXEC_UPDATE
  AW_EXPECT(info.result == cudaGraphExecUpdateSuccess, "cudaGraphExecUpdate result %d", int(info.result));
  auto launch3 = [&] { AW_CHECK(cudaGraphLaunch(e2, in.s)); };  // @LAUNCH_UPDATED_TO_CLONE
  launch_and_check(launch3, in, in.pageable.data(), 50, true, "updated from the clone: launch");
  std::printf("cloned graphs: pageable clone, pinned clone, updated from the clone: ok\n");

  for (cudaGraphExec_t e : {e1, e2}) AW_CHECK(cudaGraphExecDestroy(e));
  for (cudaGraph_t g : {original, clone, pinned_graph, pinned_clone}) AW_CHECK(cudaGraphDestroy(g));
  aw::graph_teardown(in);
  return 0;
}
