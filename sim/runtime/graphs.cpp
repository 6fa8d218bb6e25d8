// Graphs: building (cudaGraphAdd*Node), instantiation, update, upload and launch, and the capture
// queries. Each maps onto the driver's node API with the same parameters, as the real runtime does.
#include <cstring>

#include "copy_params.h"
#include "driver_table.h"
#include "fatbin_registry.h"
#include "runtime_errors.h"
#include "stream_api_macro.h"

using namespace aw_rt;

namespace {
CUstream cu(cudaStream_t s) { return reinterpret_cast<CUstream>(s); }
CUgraph cu(cudaGraph_t g) { return reinterpret_cast<CUgraph>(g); }
CUgraphExec cu(cudaGraphExec_t e) { return reinterpret_cast<CUgraphExec>(e); }
CUgraphNode cu(cudaGraphNode_t n) { return reinterpret_cast<CUgraphNode>(n); }
CUgraphNode* cu(cudaGraphNode_t* n) { return reinterpret_cast<CUgraphNode*>(n); }
const CUgraphNode* cu(const cudaGraphNode_t* n) { return reinterpret_cast<const CUgraphNode*>(n); }
CUevent cu(cudaEvent_t e) { return reinterpret_cast<CUevent>(e); }

cudaError_t kernel_node_params(const cudaKernelNodeParams* p, CUDA_KERNEL_NODE_PARAMS* out) {
  if (!p) return cudaErrorInvalidValue;
  CUkernel kernel = nullptr;
  if (cudaError_t e = kernel_for_host_function(p->func, &kernel)) return e;
  std::memset(out, 0, sizeof *out);
  // The H200's runtime asks cuKernelGetFunction for the node's CUfunction (measured on an H200 with sim/probe).
  if (CUresult r = drv().kernel_get_function(&out->func, kernel)) return to_runtime_error(r);
  out->gridDimX = p->gridDim.x, out->gridDimY = p->gridDim.y, out->gridDimZ = p->gridDim.z;
  out->blockDimX = p->blockDim.x, out->blockDimY = p->blockDim.y, out->blockDimZ = p->blockDim.z;
  out->sharedMemBytes = p->sharedMemBytes;
  out->kernelParams = p->kernelParams;
  out->extra = p->extra;
  return cudaSuccess;
}

CUDA_MEMSET_NODE_PARAMS memset_node_params(const cudaMemsetParams& p) {
  CUDA_MEMSET_NODE_PARAMS m;
  std::memset(&m, 0, sizeof m);
  m.dst = reinterpret_cast<CUdeviceptr>(p.dst);
  m.pitch = p.pitch;
  m.value = p.value;
  m.elementSize = p.elementSize;
  m.width = p.width;
  m.height = p.height;
  return m;
}

CUcontext current_ctx() {
  CUcontext ctx = nullptr;
  primary_context_of(current_device(), &ctx);
  return ctx;
}
}  // namespace

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* g, unsigned int flags) {
  AW_RT_INIT();
  return record(drv().graph_create(reinterpret_cast<CUgraph*>(g), flags));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  AW_RT_INIT();
  return record(drv().graph_clone(reinterpret_cast<CUgraph*>(clone), cu(original)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphNodeFindInClone(cudaGraphNode_t* found, cudaGraphNode_t original,
                                                                 cudaGraph_t clone) {
  AW_RT_INIT();
  return record(drv().graph_node_find_in_clone(reinterpret_cast<CUgraphNode*>(found), cu(original), cu(clone)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  AW_RT_INIT();
  return record(drv().graph_destroy(cu(graph)));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                               const cudaGraphNode_t* deps, size_t n,
                                                               const cudaKernelNodeParams* p) {
  AW_RT_INIT();
  CUDA_KERNEL_NODE_PARAMS k;
  if (cudaError_t e = kernel_node_params(p, &k)) return record(e);
  return record(drv().graph_add_kernel_node(cu(node), cu(g), cu(deps), n, &k));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                               const cudaGraphNode_t* deps, size_t n,
                                                               const cudaMemcpy3DParms* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  if (cudaError_t e = to_driver(*p, &c)) return record(e);
  return record(drv().graph_add_memcpy_node(cu(node), cu(g), cu(deps), n, &c, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node, cudaGraph_t g,
                                                                 const cudaGraphNode_t* deps, size_t n, void* dst,
                                                                 const void* src, size_t count, cudaMemcpyKind kind) {
  AW_RT_INIT();
  if (!valid_kind(kind)) return record(cudaErrorInvalidMemcpyDirection);
  CUDA_MEMCPY3D c = linear_3d(dst, src, count, kind);
  return record(drv().graph_add_memcpy_node(cu(node), cu(g), cu(deps), n, &c, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  if (cudaError_t e = to_driver(*p, &c)) return record(e);
  return record(drv().graph_memcpy_node_set_params(cu(node), &c));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                                                       size_t count, cudaMemcpyKind kind) {
  AW_RT_INIT();
  if (!valid_kind(kind)) return record(cudaErrorInvalidMemcpyDirection);
  CUDA_MEMCPY3D c = linear_3d(dst, src, count, kind);
  return record(drv().graph_memcpy_node_set_params(cu(node), &c));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                               const cudaGraphNode_t* deps, size_t n,
                                                               const cudaMemsetParams* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMSET_NODE_PARAMS m = memset_node_params(*p);
  return record(drv().graph_add_memset_node(cu(node), cu(g), cu(deps), n, &m, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                             const cudaGraphNode_t* deps, size_t n,
                                                             const cudaHostNodeParams* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_HOST_NODE_PARAMS h{p->fn, p->userData};
  return record(drv().graph_add_host_node(cu(node), cu(g), cu(deps), n, &h));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                              const cudaGraphNode_t* deps, size_t n) {
  AW_RT_INIT();
  return record(drv().graph_add_empty_node(cu(node), cu(g), cu(deps), n));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddEventRecordNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                                    const cudaGraphNode_t* deps, size_t n,
                                                                    cudaEvent_t e) {
  AW_RT_INIT();
  return record(drv().graph_add_event_record_node(cu(node), cu(g), cu(deps), n, cu(e)));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddEventWaitNode(cudaGraphNode_t* node, cudaGraph_t g,
                                                                  const cudaGraphNode_t* deps, size_t n,
                                                                  cudaEvent_t e) {
  AW_RT_INIT();
  return record(drv().graph_add_event_wait_node(cu(node), cu(g), cu(deps), n, cu(e)));
}

// CUDA 13 signature (edge data; null means default edges).
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t* from,
                                                                 const cudaGraphNode_t* to,
                                                                 const cudaGraphEdgeData* edges, size_t n) {
  AW_RT_INIT();
  return record(
      drv().graph_add_dependencies(cu(g), cu(from), cu(to), reinterpret_cast<const CUgraphEdgeData*>(edges), n));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  AW_RT_INIT();
  return record(drv().graph_get_nodes(cu(g), cu(nodes), n));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphGetRootNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  AW_RT_INIT();
  return record(drv().graph_get_root_nodes(cu(g), cu(nodes), n));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  AW_RT_INIT();
  return record(drv().graph_node_get_type(cu(node), reinterpret_cast<CUgraphNodeType*>(type)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphDestroyNode(cudaGraphNode_t node) {
  AW_RT_INIT();
  return record(drv().graph_destroy_node(cu(node)));
}

// ---- instantiation, update, launch ----
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                             unsigned long long flags) {
  AW_RT_INIT();
  return record(drv().graph_instantiate(reinterpret_cast<CUgraphExec*>(exec), cu(graph), flags));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                                      unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}
AW_STREAM_API(cudaGraphInstantiateWithParams,
              (cudaGraphExec_t * exec, cudaGraph_t graph, cudaGraphInstantiateParams* p),
              d.graph_instantiate_with_params(reinterpret_cast<CUgraphExec*>(exec), cu(graph),
                                              reinterpret_cast<CUDA_GRAPH_INSTANTIATE_PARAMS*>(p)))

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                                            cudaGraphExecUpdateResultInfo* info) {
  AW_RT_INIT();
  return record(drv().graph_exec_update(cu(exec), cu(graph), reinterpret_cast<CUgraphExecUpdateResultInfo*>(info)));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                         const cudaMemcpy3DParms* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  if (cudaError_t e = to_driver(*p, &c)) return record(e);
  return record(drv().graph_exec_memcpy_node_set_params(cu(exec), cu(node), &c, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                           void* dst, const void* src, size_t count,
                                                                           cudaMemcpyKind kind) {
  AW_RT_INIT();
  if (!valid_kind(kind)) return record(cudaErrorInvalidMemcpyDirection);
  CUDA_MEMCPY3D c = linear_3d(dst, src, count, kind);
  return record(drv().graph_exec_memcpy_node_set_params(cu(exec), cu(node), &c, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                         const cudaKernelNodeParams* p) {
  AW_RT_INIT();
  CUDA_KERNEL_NODE_PARAMS k;
  if (cudaError_t e = kernel_node_params(p, &k)) return record(e);
  return record(drv().graph_exec_kernel_node_set_params(cu(exec), cu(node), &k));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                         const cudaMemsetParams* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_MEMSET_NODE_PARAMS m = memset_node_params(*p);
  return record(drv().graph_exec_memset_node_set_params(cu(exec), cu(node), &m, current_ctx()));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                       const cudaHostNodeParams* p) {
  AW_RT_INIT();
  if (!p) return record(cudaErrorInvalidValue);
  CUDA_HOST_NODE_PARAMS h{p->fn, p->userData};
  return record(drv().graph_exec_host_node_set_params(cu(exec), cu(node), &h));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t exec) {
  AW_RT_INIT();
  return record(drv().graph_exec_destroy(cu(exec)));
}

AW_STREAM_API(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t s), d.graph_launch(cu(exec), cu(s)))
AW_STREAM_API(cudaGraphUpload, (cudaGraphExec_t exec, cudaStream_t s), d.graph_upload(cu(exec), cu(s)))

// ---- capture queries (begin/end/is-capturing: streams.cpp) ----
AW_STREAM_API(cudaStreamBeginCaptureToGraph,
              (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges, size_t n,
               cudaStreamCaptureMode mode),
              d.stream_begin_capture_to_graph(cu(s), cu(g), cu(deps), reinterpret_cast<const CUgraphEdgeData*>(edges),
                                              n, static_cast<CUstreamCaptureMode>(mode)))
AW_STREAM_API(cudaStreamGetCaptureInfo,
              (cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
               const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, size_t* n),
              d.stream_get_capture_info(cu(s), reinterpret_cast<CUstreamCaptureStatus*>(status),
                                        reinterpret_cast<cuuint64_t*>(id), reinterpret_cast<CUgraph*>(graph),
                                        reinterpret_cast<const CUgraphNode**>(deps),
                                        reinterpret_cast<const CUgraphEdgeData**>(edges), n))
AW_STREAM_API(cudaStreamUpdateCaptureDependencies,
              (cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData* edges, size_t n, unsigned int flags),
              d.stream_update_capture_dependencies(cu(s), cu(deps), reinterpret_cast<const CUgraphEdgeData*>(edges), n,
                                                   flags))
