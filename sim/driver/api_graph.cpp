// The graph node API: building graphs explicitly, instantiating, updating and destroying them
// (graph.h has the model; launch and capture entry points are in api_stream.cpp).
#include <cstring>

#include "driver_state.h"
#include "exports.h"
#include "graph.h"
#include "kernel_model.h"
#include "memory_registry.h"

using namespace aw_sim;

namespace {

SimGraph* graph_of(CUgraph g) { return is_graph(g) ? reinterpret_cast<SimGraph*>(g) : nullptr; }
SimGraphNode* node_of(CUgraphNode n) { return is_node(n) ? reinterpret_cast<SimGraphNode*>(n) : nullptr; }
SimGraphExec* exec_of(CUgraphExec e) { return is_exec(e) ? reinterpret_cast<SimGraphExec*>(e) : nullptr; }

// The device a node runs on: its `ctx` argument, or the current context.
CUresult node_device(CUcontext ctx, int* device) {
  if (CUresult r = check_context()) return r;
  SimContext* c = ctx ? context_from_handle(ctx) : current();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->ordinal;
  return CUDA_SUCCESS;
}

CUresult add(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, const NodeParams& p) {
  SimGraph* graph = graph_of(g);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  SimGraphNode* node = nullptr;
  CUresult r = add_node(graph, deps, n, p, &node);
  if (r == CUDA_SUCCESS) *out = reinterpret_cast<CUgraphNode>(node);
  return r;
}

CUresult kernel_params(CUfunction func, CUkernel kern, CUcontext ctx, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shmem, void** params, void** extra,
                       NodeParams* out) {
  if (CUresult r = check_context()) return r;
  void* f = func ? static_cast<void*>(func) : static_cast<void*>(kern);
  if (!is_function(f)) return CUDA_ERROR_INVALID_VALUE;
  if (extra && extra[0] != CU_LAUNCH_PARAM_END) return unsupported("kernel nodes with 'extra' parameters");
  if (!gx || !gy || !gz || !bx || !by || !bz || static_cast<uint64_t>(bx) * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  p.kind = NodeKind::Kernel;
  if (CUresult r = node_device(func ? nullptr : ctx, &p.device)) return r;
  p.function = static_cast<SimFunction*>(f);
  p.grid[0] = gx, p.grid[1] = gy, p.grid[2] = gz;
  p.block[0] = bx, p.block[1] = by, p.block[2] = bz;
  p.shared_mem = shmem;
  // Kernel parameters are copied when the node is created: the duration is decided now.
  p.duration_ns = kernel_duration_ns(*p.function, params);
  *out = p;
  return CUDA_SUCCESS;
}

CUresult kernel_params_v2(const CUDA_KERNEL_NODE_PARAMS* k, NodeParams* out) {
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  return kernel_params(k->func, k->kern, k->ctx, k->gridDimX, k->gridDimY, k->gridDimZ, k->blockDimX, k->blockDimY,
                       k->blockDimZ, k->sharedMemBytes, k->kernelParams, k->extra, out);
}

CUresult kernel_params_v1(const CUDA_KERNEL_NODE_PARAMS_v1* k, NodeParams* out) {
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  return kernel_params(k->func, nullptr, nullptr, k->gridDimX, k->gridDimY, k->gridDimZ, k->blockDimX, k->blockDimY,
                       k->blockDimZ, k->sharedMemBytes, k->kernelParams, k->extra, out);
}

CUresult memcpy_params(const CUDA_MEMCPY3D* c, CUcontext ctx, NodeParams* out) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  p.kind = NodeKind::Memcpy;
  if (CUresult r = node_device(ctx, &p.device)) return r;
  if (CUresult r = shape_from_memcpy3d(*c, &p.copy)) return r;
  if (p.copy.bytes() == 0) return CUDA_ERROR_INVALID_VALUE;
  p.copy_desc = *c;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult memset_params(const CUDA_MEMSET_NODE_PARAMS* m, CUcontext ctx, NodeParams* out) {
  if (!m || !m->dst || !m->width || !m->height) return CUDA_ERROR_INVALID_VALUE;
  if (m->elementSize != 1 && m->elementSize != 2 && m->elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
  if (m->height > 1 && m->pitch < m->width * m->elementSize) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  p.kind = NodeKind::Memset;
  if (CUresult r = node_device(ctx, &p.device)) return r;
  p.memset.dst = m->dst;
  p.memset.pitch = m->height > 1 ? m->pitch : m->width * m->elementSize;
  p.memset.value = m->value;
  p.memset.elem_size = m->elementSize;
  p.memset.width = m->width;
  p.memset.height = m->height;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult host_params(const CUDA_HOST_NODE_PARAMS* h, NodeParams* out) {
  if (!h || !h->fn) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  p.kind = NodeKind::Host;
  if (CUresult r = node_device(nullptr, &p.device)) return r;
  p.host_fn = h->fn;
  p.host_user = h->userData;
  *out = p;
  return CUDA_SUCCESS;
}

// Replaces the parameters of `node`'s instance in `exec` (node kinds must match).
CUresult exec_set(CUgraphExec e, CUgraphNode n, const NodeParams& p) {
  SimGraphExec* exec = exec_of(e);
  SimGraphNode* node = node_of(n);
  if (!exec || !node) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(exec->mutex);
  auto it = exec->position.find(node);
  if (it == exec->position.end() || exec->nodes[it->second].kind != p.kind) return CUDA_ERROR_INVALID_VALUE;
  exec->nodes[it->second] = p;
  return CUDA_SUCCESS;
}

}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph* g, unsigned int flags) {
  if (CUresult r = check_context()) return r;
  if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
  *g = reinterpret_cast<CUgraph>(create_graph());
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph* clone, CUgraph original) {
  if (CUresult r = check_context()) return r;
  SimGraph* graph = graph_of(original);
  if (!clone || !graph) return CUDA_ERROR_INVALID_VALUE;
  *clone = reinterpret_cast<CUgraph>(clone_graph(graph));
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* found, CUgraphNode original, CUgraph clone) {
  SimGraph* graph = graph_of(clone);
  if (!found || !graph || !is_node(original)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(graph->mutex);
  for (const auto& n : graph->nodes)
    if (n->cloned_from == reinterpret_cast<const SimGraphNode*>(original)) {
      *found = reinterpret_cast<CUgraphNode>(n.get());
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  return destroy_graph(reinterpret_cast<SimGraph*>(g)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                                          size_t n, const CUDA_KERNEL_NODE_PARAMS* k) {
  NodeParams p;
  if (CUresult r = kernel_params_v2(k, &p)) return r;
  return add(node, g, deps, n, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                                       const CUDA_KERNEL_NODE_PARAMS_v1* k) {
  NodeParams p;
  if (CUresult r = kernel_params_v1(k, &p)) return r;
  return add(node, g, deps, n, p);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                                       const CUDA_MEMCPY3D* c, CUcontext ctx) {
  NodeParams p;
  if (CUresult r = memcpy_params(c, ctx, &p)) return r;
  return add(node, g, deps, n, p);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode n, CUDA_MEMCPY3D* out) {
  SimGraphNode* node = node_of(n);
  if (!node || !out || node->params.kind != NodeKind::Memcpy) return CUDA_ERROR_INVALID_VALUE;
  *out = node->params.copy_desc;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode n, const CUDA_MEMCPY3D* c) {
  SimGraphNode* node = node_of(n);
  if (!node || node->params.kind != NodeKind::Memcpy) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  if (CUresult r = memcpy_params(c, nullptr, &p)) return r;
  std::lock_guard<std::mutex> lock(node->graph->mutex);
  node->params = p;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                                       const CUDA_MEMSET_NODE_PARAMS* m, CUcontext ctx) {
  NodeParams p;
  if (CUresult r = memset_params(m, ctx, &p)) return r;
  return add(node, g, deps, n, p);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n,
                                                     const CUDA_HOST_NODE_PARAMS* h) {
  NodeParams p;
  if (CUresult r = host_params(h, &p)) return r;
  return add(node, g, deps, n, p);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n) {
  if (CUresult r = check_context()) return r;
  NodeParams p;
  p.kind = NodeKind::Empty;
  p.device = current()->ordinal;
  return add(node, g, deps, n, p);
}

static CUresult add_event_node(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n, CUevent e,
                               NodeKind kind) {
  if (CUresult r = check_context()) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  p.kind = kind;
  p.device = current()->ordinal;
  p.event = reinterpret_cast<SimEvent*>(e);
  return add(node, g, deps, n, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                                            size_t n, CUevent e) {
  return add_event_node(node, g, deps, n, e, NodeKind::EventRecord);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                                          size_t n, CUevent e) {
  return add_event_node(node, g, deps, n, e, NodeKind::EventWait);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                                         size_t n) {
  SimGraph* graph = graph_of(g);
  return graph ? add_edges(graph, from, to, n) : CUDA_ERROR_INVALID_VALUE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                                            const CUgraphEdgeData* edges, size_t n) {
  if (edges) {
    for (size_t i = 0; i < n; ++i)
      if (edges[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT || edges[i].from_port || edges[i].to_port)
        return unsupported("graph edges other than default edges");
  }
  return cuGraphAddDependencies(g, from, to, n);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph g, CUgraphNode* nodes, size_t* count) {
  SimGraph* graph = graph_of(g);
  if (!graph || !count) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(graph->mutex);
  if (nodes)
    for (size_t i = 0; i < *count && i < graph->nodes.size(); ++i)
      nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i].get());
  *count = graph->nodes.size();
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphGetRootNodes(CUgraph g, CUgraphNode* nodes, size_t* count) {
  SimGraph* graph = graph_of(g);
  if (!graph || !count) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(graph->mutex);
  size_t found = 0;
  for (const auto& n : graph->nodes) {
    if (!n->deps.empty()) continue;
    if (nodes && found < *count) nodes[found] = reinterpret_cast<CUgraphNode>(n.get());
    ++found;
  }
  *count = found;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType* type) {
  SimGraphNode* node = node_of(n);
  if (!node || !type) return CUDA_ERROR_INVALID_VALUE;
  *type = node_type(node->params.kind);
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode n) {
  return destroy_node(reinterpret_cast<SimGraphNode*>(n));
}

// ---- instantiation and update ----
static CUresult instantiate_graph(CUgraphExec* exec, CUgraph g) {
  if (CUresult r = check_context()) return r;
  SimGraph* graph = graph_of(g);
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  SimGraphExec* e = nullptr;
  CUresult r = instantiate(graph, &e);
  if (r == CUDA_SUCCESS) *exec = reinterpret_cast<CUgraphExec>(e);
  return r;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph g, unsigned long long flags) {
  if (flags & ~static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                               CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                               CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
    return unsupported("cuGraphInstantiate flags other than AUTO_FREE_ON_LAUNCH, UPLOAD, USE_NODE_PRIORITY");
  return instantiate_graph(exec, g);
}

// CUDA 10/11 form (cudaTypedefs.h PFN_cuGraphInstantiate_v10000 / _v11000).
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node, char* log,
                                                     size_t log_size) {
  if (error_node) *error_node = nullptr;
  if (log && log_size) log[0] = '\0';
  return instantiate_graph(exec, g);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph g, CUgraphNode* error_node,
                                                        char* log, size_t log_size) {
  return cuGraphInstantiate(exec, g, error_node, log, log_size);
}

static CUresult instantiate_with_params(CUgraphExec* exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p,
                                        bool per_thread) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  p->hErrNode_out = nullptr;
  CUresult r = cuGraphInstantiateWithFlags(exec, g, p->flags);
  p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
    r = per_thread ? cuGraphUpload_ptsz(*exec, p->hUploadStream) : cuGraphUpload(*exec, p->hUploadStream);
  return r;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph g,
                                                               CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  return instantiate_with_params(exec, g, p, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph g,
                                                                    CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  return instantiate_with_params(exec, g, p, true);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  SimGraphExec* exec = exec_of(e);
  SimGraph* graph = graph_of(g);
  if (!exec || !graph || !info) return CUDA_ERROR_INVALID_VALUE;
  SimGraphNode* error_node = nullptr;
  info->result = update_exec(exec, graph, &error_node);
  info->errorNode = reinterpret_cast<CUgraphNode>(error_node);
  info->errorFromNode = nullptr;
  return info->result == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}
// CUDA 10.2 form (PFN_cuGraphExecUpdate_v10020).
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode* error_node,
                                                    CUgraphExecUpdateResult* result) {
  CUgraphExecUpdateResultInfo info{};
  CUresult r = cuGraphExecUpdate_v2(e, g, &info);
  if (error_node) *error_node = info.errorNode;
  if (result) *result = info.result;
  return r;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_MEMCPY3D* c,
                                                                 CUcontext ctx) {
  SimGraphExec* exec = exec_of(e);
  SimGraphNode* node = node_of(n);
  if (!exec || !node) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p;
  if (CUresult r = memcpy_params(c, ctx, &p)) return r;
  // "Returns CUDA_ERROR_INVALID_VALUE if the memory operands' mappings changed or either the original
  // or new memory operands are multidimensional" (cuda.h): 1D only, and each side stays on its device
  // (host memory may change kind: a pinned buffer may be swapped for a pageable one).
  std::lock_guard<std::mutex> lock(exec->mutex);
  auto it = exec->position.find(node);
  if (it == exec->position.end() || exec->nodes[it->second].kind != NodeKind::Memcpy) return CUDA_ERROR_INVALID_VALUE;
  const CopyShape& old = exec->nodes[it->second].copy;
  if (!old.one_dimensional() || !p.copy.one_dimensional()) return CUDA_ERROR_INVALID_VALUE;
  auto side = [](const void* q) {
    const MemorySide m = classify(q);
    return m == MemorySide::Pageable || m == MemorySide::Pinned ? -1 : owner_device(q);
  };
  if (side(old.src) != side(p.copy.src) || side(old.dst) != side(p.copy.dst)) return CUDA_ERROR_INVALID_VALUE;
  exec->nodes[it->second] = p;
  return CUDA_SUCCESS;
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                                    const CUDA_KERNEL_NODE_PARAMS* k) {
  NodeParams p;
  if (CUresult r = kernel_params_v2(k, &p)) return r;
  return exec_set(e, n, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                                 const CUDA_KERNEL_NODE_PARAMS_v1* k) {
  NodeParams p;
  if (CUresult r = kernel_params_v1(k, &p)) return r;
  return exec_set(e, n, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                                 const CUDA_MEMSET_NODE_PARAMS* m, CUcontext ctx) {
  NodeParams p;
  if (CUresult r = memset_params(m, ctx, &p)) return r;
  return exec_set(e, n, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                               const CUDA_HOST_NODE_PARAMS* h) {
  NodeParams p;
  if (CUresult r = host_params(h, &p)) return r;
  return exec_set(e, n, p);
}

AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
  return destroy_exec(reinterpret_cast<SimGraphExec*>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
