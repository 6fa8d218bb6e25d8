#include "graph.h"

#include <algorithm>
#include <set>

#include "host_wait.h"
#include "kernel_model.h"
#include "sim_config.h"

namespace aw_sim {
namespace {

std::mutex& handles_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::set<const void*>& graph_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}
std::set<const void*>& node_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}
std::set<const void*>& exec_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}

std::atomic<unsigned long long> g_next_capture_id{1};

SimGraphNode* add_node_locked(SimGraph* g, const std::vector<SimGraphNode*>& deps, const NodeParams& p) {
  auto node = std::make_unique<SimGraphNode>();
  node->graph = g;
  node->params = p;
  node->deps = deps;
  SimGraphNode* raw = node.get();
  g->nodes.push_back(std::move(node));
  std::lock_guard<std::mutex> lock(handles_mutex());
  node_handles().insert(raw);
  return raw;
}

// Kahn's algorithm, taking ready nodes in creation order: positions[i] is node i's place in `order`.
// False if the graph has a cycle.
bool topological_order(const SimGraph& g, std::vector<const SimGraphNode*>& order) {
  std::map<const SimGraphNode*, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].get()] = i;
  std::vector<size_t> missing(g.nodes.size());
  std::vector<std::vector<size_t>> dependents(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    missing[i] = g.nodes[i]->deps.size();
    for (const SimGraphNode* d : g.nodes[i]->deps) dependents[index.at(d)].push_back(i);
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!missing[i]) ready.insert(i);
  order.clear();
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(g.nodes[i].get());
    for (size_t d : dependents[i])
      if (--missing[d] == 0) ready.insert(d);
  }
  return order.size() == g.nodes.size();
}

// Positions of each node's dependencies, in `order`'s numbering (the topology cuGraphExecUpdate compares).
std::vector<std::vector<size_t>> dependency_positions(const std::vector<const SimGraphNode*>& order) {
  std::map<const SimGraphNode*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::vector<std::vector<size_t>> deps(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    for (const SimGraphNode* d : order[i]->deps) deps[i].push_back(position.at(d));
    std::sort(deps[i].begin(), deps[i].end());
  }
  return deps;
}

void run_node(Stream& s, const NodeParams& p) {
  switch (p.kind) {
    case NodeKind::Kernel: {
      StreamOp op;
      op.what = "graph kernel";
      op.duration_ns = p.duration_ns;
      s.enqueue(std::move(op));
      break;
    }
    case NodeKind::Memcpy:
      // The same rules as a cuMemcpy*Async of these operands: a pageable side makes the launch wait.
      copy_on_stream(s, p.copy, CopyCall::Async);
      break;
    case NodeKind::Memset: memset_on_stream(s, p.memset); break;
    case NodeKind::Host: {
      StreamOp op;
      op.what = "graph host node";
      op.body = [fn = p.host_fn, user = p.host_user] { fn(user); };
      op.start_delay_ns = config().host_fn_latency_ns;
      s.enqueue(std::move(op));
      break;
    }
    case NodeKind::EventRecord:
      if (is_event(p.event)) record_event(static_cast<SimEvent*>(p.event), s.shared_from_this());
      break;
    case NodeKind::EventWait:
      if (is_event(p.event)) wait_for_event(static_cast<SimEvent*>(p.event), s);
      break;
    case NodeKind::Empty: break;
  }
}

}  // namespace

CUgraphNodeType node_type(NodeKind k) {
  switch (k) {
    case NodeKind::Kernel: return CU_GRAPH_NODE_TYPE_KERNEL;
    case NodeKind::Memcpy: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case NodeKind::Memset: return CU_GRAPH_NODE_TYPE_MEMSET;
    case NodeKind::Host: return CU_GRAPH_NODE_TYPE_HOST;
    case NodeKind::EventRecord: return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    case NodeKind::EventWait: return CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    case NodeKind::Empty: return CU_GRAPH_NODE_TYPE_EMPTY;
  }
  return CU_GRAPH_NODE_TYPE_EMPTY;
}

SimGraph* create_graph() {
  auto* g = new SimGraph();
  std::lock_guard<std::mutex> lock(handles_mutex());
  graph_handles().insert(g);
  return g;
}

SimGraph* clone_graph(SimGraph* g) {
  SimGraph* out = create_graph();
  std::lock_guard<std::mutex> lock(g->mutex);
  std::map<const SimGraphNode*, SimGraphNode*> copy_of;
  for (const auto& n : g->nodes) {
    SimGraphNode* c = add_node_locked(out, {}, n->params);
    c->cloned_from = n.get();
    copy_of[n.get()] = c;
  }
  // Edges once every node has its copy (cuGraphAddDependencies may point a node at a later one).
  for (const auto& n : g->nodes)
    for (const SimGraphNode* d : n->deps) copy_of.at(n.get())->deps.push_back(copy_of.at(d));
  return out;
}

bool destroy_graph(SimGraph* g) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex());
    if (!graph_handles().erase(g)) return false;
    for (const auto& n : g->nodes) node_handles().erase(n.get());
  }
  delete g;
  return true;
}

bool is_graph(const void* h) {
  std::lock_guard<std::mutex> lock(handles_mutex());
  return graph_handles().count(h) != 0;
}

bool is_node(const void* h) {
  std::lock_guard<std::mutex> lock(handles_mutex());
  return node_handles().count(h) != 0;
}

CUresult add_node(SimGraph* g, const CUgraphNode* deps, size_t n, NodeParams p, SimGraphNode** out) {
  if (!out || (n && !deps)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<SimGraphNode*> d;
  for (size_t i = 0; i < n; ++i) {
    auto* dep = reinterpret_cast<SimGraphNode*>(deps[i]);
    if (!is_node(dep) || dep->graph != g || std::find(d.begin(), d.end(), dep) != d.end())
      return CUDA_ERROR_INVALID_VALUE;
    d.push_back(dep);
  }
  std::lock_guard<std::mutex> lock(g->mutex);
  *out = add_node_locked(g, d, p);
  return CUDA_SUCCESS;
}

CUresult add_edges(SimGraph* g, const CUgraphNode* from, const CUgraphNode* to, size_t n) {
  if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    auto* a = reinterpret_cast<SimGraphNode*>(from[i]);
    auto* b = reinterpret_cast<SimGraphNode*>(to[i]);
    if (!is_node(a) || !is_node(b) || a->graph != g || b->graph != g || a == b) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g->mutex);
    if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end()) return CUDA_ERROR_INVALID_VALUE;
    b->deps.push_back(a);
  }
  return CUDA_SUCCESS;
}

CUresult destroy_node(SimGraphNode* node) {
  if (!is_node(node)) return CUDA_ERROR_INVALID_VALUE;
  SimGraph* g = node->graph;
  std::lock_guard<std::mutex> lock(g->mutex);
  for (auto& n : g->nodes) n->deps.erase(std::remove(n->deps.begin(), n->deps.end(), node), n->deps.end());
  {
    std::lock_guard<std::mutex> hl(handles_mutex());
    node_handles().erase(node);
  }
  g->nodes.erase(std::remove_if(g->nodes.begin(), g->nodes.end(),
                                [&](const std::unique_ptr<SimGraphNode>& n) { return n.get() == node; }),
                 g->nodes.end());
  return CUDA_SUCCESS;
}

CUresult instantiate(SimGraph* g, SimGraphExec** out) {
  auto exec = std::make_unique<SimGraphExec>();
  {
    std::lock_guard<std::mutex> lock(g->mutex);
    std::vector<const SimGraphNode*> order;
    if (!topological_order(*g, order)) return CUDA_ERROR_INVALID_VALUE;
    exec->deps = dependency_positions(order);
    for (size_t i = 0; i < order.size(); ++i) {
      exec->nodes.push_back(order[i]->params);
      exec->position[order[i]] = i;
    }
  }
  // Lazy loading: instantiation loads the kernels the graph launches (CUDA_MODULE_LOADING=LAZY).
  for (const NodeParams& p : exec->nodes)
    if (p.kind == NodeKind::Kernel && p.function) ensure_loaded(*p.function);
  *out = exec.get();
  std::lock_guard<std::mutex> lock(handles_mutex());
  exec_handles().insert(exec.get());
  exec.release();
  return CUDA_SUCCESS;
}

bool destroy_exec(SimGraphExec* e) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex());
    if (!exec_handles().erase(e)) return false;
  }
  delete e;  // queued operations copied what they need
  return true;
}

bool is_exec(const void* h) {
  std::lock_guard<std::mutex> lock(handles_mutex());
  return exec_handles().count(h) != 0;
}

CUgraphExecUpdateResult update_exec(SimGraphExec* e, SimGraph* g, SimGraphNode** error_node) {
  std::lock_guard<std::mutex> graph_lock(g->mutex);
  std::lock_guard<std::mutex> exec_lock(e->mutex);
  *error_node = nullptr;
  std::vector<const SimGraphNode*> order;
  if (!topological_order(*g, order) || order.size() != e->nodes.size() || dependency_positions(order) != e->deps)
    return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->params.kind != e->nodes[i].kind) {
      *error_node = const_cast<SimGraphNode*>(order[i]);
      return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    e->nodes[i] = order[i]->params;
    e->position[order[i]] = i;  // the update graph's nodes now name these positions too
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

CUresult launch(SimGraphExec* e, Stream& s) {
  std::lock_guard<std::mutex> lock(e->mutex);
  // Launches of one executable graph do not overlap: a launch into another stream waits for the last.
  if (e->last_stream && e->last_stream.get() != &s && e->last_stream->completed() < e->last_seq) {
    StreamOp wait;
    wait.what = "previous launch of the graph";
    wait.deps.push_back({e->last_stream, e->last_seq});
    s.enqueue(std::move(wait));
  }
  for (const NodeParams& p : e->nodes) run_node(s, p);
  e->last_stream = s.shared_from_this();
  e->last_seq = s.enqueued();
  return CUDA_SUCCESS;
}

bool capture_node(Stream& s, const NodeParams& p, CUresult* status) {
  return s.with_capture([&](std::shared_ptr<CaptureSession>& session, std::vector<SimGraphNode*>& deps) {
    if (!session) return false;
    if (session->invalidated) {
      *status = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      return true;
    }
    std::lock_guard<std::mutex> lock(session->graph->mutex);
    deps.assign(1, add_node_locked(session->graph, deps, p));
    *status = CUDA_SUCCESS;
    return true;
  });
}

CUresult begin_capture(Stream& s, CUstreamCaptureMode mode, SimGraph* into, const CUgraphNode* deps, size_t n) {
  if (s.kind() == Stream::Kind::Legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  std::vector<SimGraphNode*> start;
  for (size_t i = 0; i < n; ++i) {
    auto* d = reinterpret_cast<SimGraphNode*>(deps[i]);
    if (!is_node(d) || d->graph != into) return CUDA_ERROR_INVALID_VALUE;
    start.push_back(d);
  }
  auto session = std::make_shared<CaptureSession>();
  session->graph = into ? into : create_graph();
  session->owns_graph = into == nullptr;
  session->id = g_next_capture_id++;
  session->origin = s.shared_from_this();
  session->mode = mode;
  const bool started = s.with_capture([&](std::shared_ptr<CaptureSession>& current, std::vector<SimGraphNode*>& d) {
    if (current) return false;
    current = session;
    d = start;
    return true;
  });
  if (!started) {
    if (session->owns_graph) destroy_graph(session->graph);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  return CUDA_SUCCESS;
}

CUresult end_capture(Stream& s, SimGraph** out) {
  std::shared_ptr<CaptureSession> session = s.capture();
  if (!session) return CUDA_ERROR_ILLEGAL_STATE;
  if (session->origin.lock().get() != &s) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  std::vector<SimGraphNode*> final_deps;
  s.with_capture([&](std::shared_ptr<CaptureSession>& current, std::vector<SimGraphNode*>& deps) {
    final_deps = deps;
    current.reset();
    deps.clear();
    return 0;
  });
  // Every other stream that joined the capture leaves it; its last nodes must have been joined back
  // into the origin stream (be among the origin's final nodes or their ancestors).
  std::set<const SimGraphNode*> joined;
  {
    std::lock_guard<std::mutex> lock(session->graph->mutex);
    std::vector<const SimGraphNode*> todo(final_deps.begin(), final_deps.end());
    while (!todo.empty()) {
      const SimGraphNode* n = todo.back();
      todo.pop_back();
      if (!joined.insert(n).second) continue;
      for (const SimGraphNode* d : n->deps) todo.push_back(d);
    }
  }
  bool unjoined = false;
  for (int dev = 0; dev < device_count(); ++dev) {
    for (const auto& other : stream_table(dev).all()) {
      other->with_capture([&](std::shared_ptr<CaptureSession>& current, std::vector<SimGraphNode*>& deps) {
        if (current != session) return 0;
        for (const SimGraphNode* d : deps)
          if (!joined.count(d)) unjoined = true;
        current.reset();
        deps.clear();
        return 0;
      });
    }
  }
  session->active = false;
  if (unjoined || session->invalidated) {
    if (session->owns_graph) destroy_graph(session->graph);
    *out = nullptr;
    return unjoined ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *out = session->graph;
  return CUDA_SUCCESS;
}

}  // namespace aw_sim
