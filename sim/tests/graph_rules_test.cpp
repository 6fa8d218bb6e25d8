// CUDA graphs on the simulator: the nodes of captured and explicitly built graphs, the launch rule
// measured on the H200 (a memcpy node with pageable host memory makes cudaGraphLaunch wait for the
// graph's earlier work; pinned and device nodes stay queued), parameter updates, cross-stream
// capture. Waits are ratios of a 0.2 s simulated kernel; "returned at once" holds the stream instead of
// timing the call, so both hold on slow, loaded machines.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim_test_support.h"

using namespace aw_sim_test;

namespace {

void stub_dummy() {}
const void* dummy_kernel() {
  static const void* k = register_kernel(reinterpret_cast<const void*>(&stub_dummy), "_Z5dummyx");
  return k;
}

constexpr double kKernel = 0.2;
// "Returned at once" is checked with returns_while_stream_held (no time bound: a pinned graph launch
// was seen to take 18 ms, and a process to stall for 0.46 s, on the loaded 2-core machine).

void CUDART_CB count_call(void* p) { ++*static_cast<int*>(p); }

class Graphs : public ::testing::Test {
 protected:
  cudaStream_t s = nullptr;
  char* dev = nullptr;
  char* pinned = nullptr;
  static constexpr size_t n = 4096;
  void SetUp() override {
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), n), cudaSuccess);
    ASSERT_EQ(cudaMemset(dev, 7, n), cudaSuccess);
    ASSERT_EQ(launch_sleep(dummy_kernel(), 0.001, s), cudaSuccess);  // lazy loading outside the measurements
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void TearDown() override {
    cudaFreeHost(pinned);
    cudaFree(dev);
    cudaStreamDestroy(s);
  }
  // A kernel node of kKernel seconds added to `g` as a root, into `*kernel`.
  void add_kernel_root(cudaGraph_t g, cudaGraphNode_t* kernel) {
    long long cycles = cycles_for(kKernel);
    void* args[] = {&cycles};
    cudaKernelNodeParams k{};
    k.func = const_cast<void*>(dummy_kernel());
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    k.kernelParams = args;
    ASSERT_EQ(cudaGraphAddKernelNode(kernel, g, nullptr, 0, &k), cudaSuccess);
    cycles = 0;  // parameters were copied when the node was added
  }
  // A graph of a kernel of kKernel seconds followed by an 8-byte device-to-host copy into `dst`
  // (the case measured on the H200), captured from `s`.
  cudaGraphExec_t captured_kernel_then_d2h(void* dst) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    EXPECT_EQ(launch_sleep(dummy_kernel(), kKernel, s), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(dst, dev, 8, cudaMemcpyDeviceToHost, s), cudaSuccess);
    EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);  // the executable graph keeps what it needs
    return e;
  }
};

}  // namespace

TEST_F(Graphs, CapturedPageableNodeMakesTheLaunchWaitPinnedDoesNot) {
  char pageable[8] = {};
  cudaGraphExec_t with_pageable = captured_kernel_then_d2h(pageable);
  cudaGraphExec_t with_pinned = captured_kernel_then_d2h(pinned);
  // Capture recorded nodes: a kernel node and a memcpy node.
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaGraphLaunch(with_pinned, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pinned[0], 7);
  double pageable_launch = time_call([&] { ASSERT_EQ(cudaGraphLaunch(with_pageable, s), cudaSuccess); });
  EXPECT_GE(pageable_launch, 0.9 * kKernel);
  EXPECT_EQ(pageable[7], 7);  // the copy completed before the launch returned
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaGraphExecDestroy(with_pageable);
  cudaGraphExecDestroy(with_pinned);
}

TEST_F(Graphs, CaptureRecordsRealNodes) {
  cudaGraph_t g = nullptr;
  int calls = 0;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(launch_sleep(dummy_kernel(), 0.001, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 3, n, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2DAsync(pinned, 64, dev, 64, 16, 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, count_call, &calls), cudaSuccess);
  cudaStreamCaptureStatus status;
  unsigned long long id = 0;
  cudaGraph_t building = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t ndeps = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s, &status, &id, &building, &deps, nullptr, &ndeps), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  EXPECT_NE(id, 0u);
  EXPECT_NE(building, nullptr);
  ASSERT_EQ(ndeps, 1u);  // the host node, last on the stream
  cudaGraphNodeType last_type;
  ASSERT_EQ(cudaGraphNodeGetType(deps[0], &last_type), cudaSuccess);
  EXPECT_EQ(last_type, cudaGraphNodeTypeHost);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  EXPECT_EQ(g, building);
  EXPECT_EQ(calls, 0);  // nothing ran
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
  ASSERT_EQ(count, 5u);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(g, nodes.data(), &count), cudaSuccess);
  std::vector<cudaGraphNodeType> types;
  for (auto node : nodes) {
    cudaGraphNodeType t;
    ASSERT_EQ(cudaGraphNodeGetType(node, &t), cudaSuccess);
    types.push_back(t);
  }
  EXPECT_EQ(types,
            (std::vector<cudaGraphNodeType>{cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemset, cudaGraphNodeTypeMemcpy,
                                            cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeHost}));
  size_t roots = 0;
  ASSERT_EQ(cudaGraphGetRootNodes(g, nullptr, &roots), cudaSuccess);
  EXPECT_EQ(roots, 1u);  // a chain: one stream
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(pinned[n - 1], 3);  // the memset ran before the copy
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
}

TEST_F(Graphs, ExplicitPageableMemcpyNodesBlockTheLaunch) {
  std::vector<char> pageable(n, 0);
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t kernel, copy3d, copy1d;
  ASSERT_NO_FATAL_FAILURE(add_kernel_root(g, &kernel));
  // cudaGraphAddMemcpyNode with a pageable destination (cudaMemcpy3DParms), after the kernel.
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(dev, n, n, 1);
  p.dstPtr = make_cudaPitchedPtr(pageable.data(), n, n, 1);
  p.extent = make_cudaExtent(n, 1, 1);
  p.kind = cudaMemcpyDeviceToHost;
  ASSERT_EQ(cudaGraphAddMemcpyNode(&copy3d, g, &kernel, 1, &p), cudaSuccess);
  // cudaGraphAddMemcpyNode1D into pinned memory, also after the kernel (a fork).
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy1d, g, &kernel, 1, pinned, dev, n, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }), 0.9 * kKernel);
  EXPECT_EQ(pageable[n - 1], 7);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pinned[n - 1], 7);
  cudaGraphNode_t nodes[3];
  size_t count = 3;
  ASSERT_EQ(cudaGraphGetNodes(g, nodes, &count), cudaSuccess);
  EXPECT_EQ(nodes[1], copy3d);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
}

// cudaGraphClone copies every node and edge: the clone's launch waits for its pageable memcpy node
// as the original's would; cudaGraphNodeFindInClone maps an original node to its copy; the clone
// is a graph of its own (destroying the original leaves it whole).
TEST_F(Graphs, CloneHasTheOriginalsNodesAndEdges) {
  std::vector<char> pageable(n, 0);
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  long long cycles = cycles_for(kKernel);
  void* args[] = {&cycles};
  cudaKernelNodeParams k{};
  k.func = const_cast<void*>(dummy_kernel());
  k.gridDim = dim3(1);
  k.blockDim = dim3(1);
  k.kernelParams = args;
  cudaGraphNode_t kernel, copy;
  ASSERT_EQ(cudaGraphAddKernelNode(&kernel, g, nullptr, 0, &k), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy, g, &kernel, 1, pageable.data(), dev, n, cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaGraph_t clone;
  ASSERT_EQ(cudaGraphClone(&clone, g), cudaSuccess);
  EXPECT_NE(clone, g);
  cudaGraphNode_t copy_in_clone = nullptr, kernel_in_clone = nullptr;
  ASSERT_EQ(cudaGraphNodeFindInClone(&copy_in_clone, copy, clone), cudaSuccess);
  ASSERT_EQ(cudaGraphNodeFindInClone(&kernel_in_clone, kernel, clone), cudaSuccess);
  EXPECT_NE(copy_in_clone, copy);
  cudaGraphNode_t roots[2];
  size_t count = 2;
  ASSERT_EQ(cudaGraphGetRootNodes(clone, roots, &count), cudaSuccess);
  ASSERT_EQ(count, 1u);  // the copy still depends on the kernel
  EXPECT_EQ(roots[0], kernel_in_clone);
  cudaGraphNode_t none;
  EXPECT_EQ(cudaGraphNodeFindInClone(&none, copy, g), cudaErrorInvalidValue);  // g is not a clone of g
  ASSERT_EQ(cudaGraphDestroy(g), cudaSuccess);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, clone, 0), cudaSuccess);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }), 0.9 * kKernel);
  EXPECT_EQ(pageable[n - 1], 7);
  cudaGraph_t bad = nullptr;
  EXPECT_EQ(cudaGraphClone(&bad, g), cudaErrorInvalidValue);  // destroyed
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(clone);
}

TEST_F(Graphs, ExecMemcpyNodeSetParamsSwapsInAPageableBuffer) {
  std::vector<char> pageable(n, 0);
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t kernel, copy;
  ASSERT_NO_FATAL_FAILURE(add_kernel_root(g, &kernel));
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy, g, &kernel, 1, pinned, dev, n, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // The executable graph's node now copies into pageable memory: the launch waits for the kernel.
  ASSERT_EQ(cudaGraphExecMemcpyNodeSetParams1D(e, copy, pageable.data(), dev, n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }), 0.9 * kKernel);
  EXPECT_EQ(pageable[0], 7);
  // Multidimensional operands and a device side moved to other memory are refused (cuda.h).
  EXPECT_EQ(cudaGraphExecMemcpyNodeSetParams1D(e, copy, pageable.data(), pinned, n, cudaMemcpyHostToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  // cudaGraphExecUpdate from the (unchanged, pinned) graph puts the pinned node back.
  cudaGraphExecUpdateResultInfo info{};
  ASSERT_EQ(cudaGraphExecUpdate(e, g, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // A graph of another shape cannot update it.
  cudaGraph_t other;
  cudaGraphNode_t lone;
  ASSERT_EQ(cudaGraphCreate(&other, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphAddEmptyNode(&lone, other, nullptr, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphExecUpdate(e, other, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  (void)cudaGetLastError();
  cudaGraphDestroy(other);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
}

TEST_F(Graphs, ForkJoinCaptureAcrossStreams) {
  cudaStream_t side;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t fork, join;
  ASSERT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  char pageable[8] = {};
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 5, n, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(side, fork, 0), cudaSuccess);  // side joins the capture
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(side, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, side), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pageable, dev, 8, cudaMemcpyDeviceToHost, side), cudaSuccess);
  cudaGraph_t g = nullptr;
  // Ending before the side branch is joined back fails.
  {
    cudaStream_t s2;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    cudaEvent_t e2;
    ASSERT_EQ(cudaEventCreate(&e2), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e2, s2), cudaSuccess);
    cudaStream_t s3;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(s3, e2, 0), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(dev, 1, 16, s3), cudaSuccess);
    cudaGraph_t bad = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(s2, &bad), cudaErrorStreamCaptureUnjoined);
    EXPECT_EQ(bad, nullptr);
    ASSERT_EQ(cudaStreamIsCapturing(s3, &st), cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusNone);
    (void)cudaGetLastError();
    cudaEventDestroy(e2);
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s3);
  }
  ASSERT_EQ(cudaEventRecord(join, side), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s, join, 0), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(side, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusNone);  // the side stream left the capture
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 3u);  // memset, kernel, memcpy: event records and waits inside a capture add no node
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess); }), 0.9 * kKernel);
  EXPECT_EQ(pageable[0], 5);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(side);
}

// A wait on an event recorded outside the capture: what the H200 answered (sim/probe).
TEST_F(Graphs, CapturedWaitOnAnOutsideEventNeedsTheExternalFlag) {
  cudaEvent_t outside;
  ASSERT_EQ(cudaEventCreate(&outside), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(outside, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStream_t s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  // Flags 0: cudaErrorStreamCaptureIsolation, and the capture is invalidated.
  ASSERT_EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s2, outside, 0), cudaErrorStreamCaptureIsolation);
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  // cudaEventWaitExternal: an event wait node.
  ASSERT_EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s2, outside, cudaEventWaitExternal), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s2, &g), cudaSuccess);
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 1u);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s2);
  cudaEventDestroy(outside);
}

TEST_F(Graphs, EventAndHostNodesAndUpload) {
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaEvent_t ev;
  ASSERT_EQ(cudaEventCreate(&ev), cudaSuccess);
  int calls = 0;
  cudaHostNodeParams h{count_call, &calls};
  cudaGraphNode_t host, record, empty;
  ASSERT_EQ(cudaGraphAddHostNode(&host, g, nullptr, 0, &h), cudaSuccess);
  ASSERT_EQ(cudaGraphAddEmptyNode(&empty, g, nullptr, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphAddEventRecordNode(&record, g, nullptr, 0, ev), cudaSuccess);
  ASSERT_EQ(cudaGraphAddDependencies(g, &host, &record, nullptr, 1), cudaSuccess);
  ASSERT_EQ(cudaGraphAddDependencies(g, &empty, &record, nullptr, 1), cudaSuccess);
  EXPECT_EQ(cudaGraphAddDependencies(g, &empty, &record, nullptr, 1), cudaErrorInvalidValue);  // duplicate edge
  (void)cudaGetLastError();
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiateWithFlags(&e, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphUpload(e, s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(ev), cudaSuccess);
  EXPECT_EQ(calls, 1);  // the host node ran before the event record node
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
  cudaEventDestroy(ev);
}
