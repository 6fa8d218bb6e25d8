// Wrappers of explicit graph construction: memcpy nodes added to a graph (cuGraphAddMemcpyNode, which
// the runtime's cudaGraphAddMemcpyNode / cudaGraphAddMemcpyNode1D reach) or set on an executable graph
// (cuGraphExecMemcpyNodeSetParams), each with its host memory classified, and the joins the analyzer
// needs from a graph launch to those nodes: instantiation (graph -> exec), update (exec <- graph) and
// cloning (graph -> clone, which has the original's nodes).
// One GraphOp record each (trace_format.h), always with a stack: the node's origin in the report.
// The end of a capture (stream -> graph) is written by cuStreamEndCapture's wrapper
// (driver_hooks_sync_memory.cpp) through write_end_of_capture below.
#include "call_context.h"
#include "copy_sides.h"
#include "cuda_abi.h"
#include "hook_table.h"
#include "real_functions.h"
#include "traced_call.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;

namespace {

void fill_node_copy(trace::GraphOpRecord& g, const CUDA_MEMCPY3D* p) noexcept {
  if (!p) return;
  const copy_sides::Sides s = copy_sides::sides_of(p);  // as a cuMemcpy3DAsync's
  g.src_memory = static_cast<uint8_t>(s.src);
  g.dst_memory = static_cast<uint8_t>(s.dst);
  g.direction = static_cast<uint8_t>(s.direction);
  g.bytes = s.bytes;
}

template <class C, class Call, class Fill>
CUresult traced_graph(C caller, Hook h, Call&& call, Fill&& fill) {
  return calls::traced(caller, h, hooks::row(h).record, call,
                       [&](calls::AnyRecord& rec, const hooks::HookInfo&, CUresult r) { fill(rec.GraphOp, r); });
}

inline uint64_t handle(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

}  // namespace

namespace asyncwatch::graph_hooks {

// The graph a capture produced, as a GraphOp record of its own (api cuStreamEndCapture), written from
// the end-of-capture wrapper's fill (the library's own code; the Capture record keeps its layout).
void write_end_of_capture(CUstream st, CUgraph g) noexcept {
  if (!g) return;
  calls::AnyRecord rec{};
  rec.h = trace::RecordHeader{
      static_cast<uint16_t>(trace::RecordType::GraphOp),
      static_cast<uint16_t>(trace::record_info(static_cast<uint16_t>(trace::RecordType::GraphOp)).fixed)};
  rec.head.api = rec.head.driver_fn = static_cast<uint16_t>(trace::Api::cuStreamEndCapture);
  rec.head.start_ns = rec.head.end_ns = now_ns();
  rec.GraphOp.stream = handle(st);
  rec.GraphOp.graph = handle(g);
  calls::write(rec);
}

}  // namespace asyncwatch::graph_hooks

AW_DRIVER_HOOK(cuGraphAddMemcpyNode, (node, graph, deps, ndeps, p, ctx),
               return traced_graph(aw_caller, Hook::cuGraphAddMemcpyNode, call,
                                   [&](trace::GraphOpRecord& g, CUresult r) {
                                     g.graph = handle(graph);
                                     g.node = r == CUDA_SUCCESS && node ? handle(*node) : 0;
                                     fill_node_copy(g, p);
                                   });)

AW_DRIVER_HOOK(cuGraphExecMemcpyNodeSetParams, (exec, node, p, ctx),
               return traced_graph(aw_caller, Hook::cuGraphExecMemcpyNodeSetParams, call,
                                   [&](trace::GraphOpRecord& g, CUresult) {
                                     g.exec = handle(exec);
                                     g.node = handle(node);
                                     fill_node_copy(g, p);
                                   });)

AW_DRIVER_HOOK(cuGraphInstantiateWithFlags, (exec, graph, flags),
               return traced_graph(aw_caller, Hook::cuGraphInstantiateWithFlags, call,
                                   [&](trace::GraphOpRecord& g, CUresult r) {
                                     g.graph = handle(graph);
                                     g.exec = r == CUDA_SUCCESS && exec ? handle(*exec) : 0;
                                   });)

#define DEF_INSTANTIATE_WITH_PARAMS(sym)                                                                    \
  AW_DRIVER_HOOK(sym, (exec, graph, params),                                                                \
                 return traced_graph(aw_caller, Hook::sym, call, [&](trace::GraphOpRecord& g, CUresult r) { \
                   g.graph = handle(graph);                                                                 \
                   g.exec = r == CUDA_SUCCESS && exec ? handle(*exec) : 0;                                  \
                 });)
DEF_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams)
DEF_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams_ptsz)

// A successful update makes `exec` run the nodes of `graph` (same topology, new parameters).
AW_DRIVER_HOOK(cuGraphExecUpdate_v2, (exec, graph, info),
               return traced_graph(aw_caller, Hook::cuGraphExecUpdate_v2, call, [&](trace::GraphOpRecord& g, CUresult) {
                 g.exec = handle(exec);
                 g.graph = handle(graph);
               });)

// The clone has copies of the original's nodes (new handles): the analyzer gives it the original's.
AW_DRIVER_HOOK(cuGraphClone, (clone, original),
               return traced_graph(aw_caller, Hook::cuGraphClone, call, [&](trace::GraphOpRecord& g, CUresult r) {
                 g.graph = handle(original);
                 g.clone = r == CUDA_SUCCESS && clone ? handle(*clone) : 0;
               });)
