// Stream capture, graphs and batch copies: what the trace shows of the graph a launch runs.
#include "findings/process_analyzer.h"

namespace asyncwatch::analysis {

void ProcessAnalyzer::on_batch(const RecordView& r, const BatchCopyRecord& b) {
  CopyRecord c = b;
  if (b.stream_order_pageable_sources) {
    c.bytes = b.stream_order_pageable_bytes;
  } else if (b.pageable_elements && b.src_memory == static_cast<uint8_t>(MemoryKind::Pageable)) {
    c.bytes = b.pageable_bytes;
  } else {
    c.direction = static_cast<uint8_t>(Direction::Unknown);
    c.src_memory = c.dst_memory = static_cast<uint8_t>(MemoryKind::Unknown);
  }
  on_copy(r, c, copy_facts(c), stream_key(c.stream_kind, c.stream, r.tid));
}

void ProcessAnalyzer::add_node(GraphNodes& g, const GraphMemcpyNode& n) {
  for (auto& o : g.nodes)
    if (n.node && o.node == n.node) {
      o = n;  // new parameters of the same node
      return;
    }
  if (g.nodes.size() < kMaxGraphNodes)
    g.nodes.push_back(n);
  else
    ++g.more;
}

void ProcessAnalyzer::drop_node(GraphNodes& g, uint64_t node) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (node && g.nodes[i].node == node) {
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

template <class Map>
ProcessAnalyzer::GraphNodes* ProcessAnalyzer::slot(Map& m, uint64_t handle) {
  if (!handle) return nullptr;
  auto it = m.find(handle);
  if (it != m.end()) return &it->second;
  if (m.size() >= kMaxGraphs) return nullptr;
  return &m[handle];
}

void ProcessAnalyzer::captured_copy(const CopyRecord& c, const CopyFacts& facts) {
  if (facts.host != MemoryKind::Pageable) return;
  if (GraphNodes* g = slot(capturing_, c.stream))
    add_node(*g, GraphMemcpyNode{0, c.api, facts.direction, facts.host, c.bytes, c.stack_id, true});
}

void ProcessAnalyzer::on_capture(const CaptureRecord& c) {
  if (c.api == static_cast<uint16_t>(Api::cuStreamBeginCapture_v2) ||
      c.api == static_cast<uint16_t>(Api::cudaStreamBeginCapture)) {
    capturing_.erase(c.stream);
    capture_kernel_.erase(c.stream);
    if (c.result == 0) capture_of_thread_[current_tid_] = c.stream;
  }
}

void ProcessAnalyzer::captured_memory_op(const MemoryOpRecord& m) {
  const auto api = static_cast<Api>(m.api), driver = static_cast<Api>(m.driver_fn);
  const bool alloc = api == Api::cudaMallocAsync || api == Api::cuMemAllocAsync || driver == Api::cuMemAllocAsync;
  if (!alloc) return;
  auto t = capture_of_thread_.find(current_tid_);
  if (t == capture_of_thread_.end()) return;
  if (GraphNodes* g = slot(capturing_, t->second)) ++g->memory_nodes;
}

void ProcessAnalyzer::on_graph_op(const GraphOpRecord& g) {
  if (g.result != 0) return;
  switch (static_cast<Api>(g.driver_fn)) {
    case Api::cuStreamEndCapture: {
      GraphNodes captured;
      if (auto it = capturing_.find(g.stream); it != capturing_.end())
        captured = std::move(it->second), capturing_.erase(it);
      if (auto it = capture_kernel_.find(g.stream); it != capture_kernel_.end())
        captured.kernel = it->second, capture_kernel_.erase(it);
      if (GraphNodes* s = slot(graphs_, g.graph)) *s = std::move(captured);
      break;
    }
    case Api::cuGraphAddMemcpyNode:
    case Api::cuGraphExecMemcpyNodeSetParams: {
      bool exec = static_cast<Api>(g.driver_fn) == Api::cuGraphExecMemcpyNodeSetParams;
      GraphNodes* s = exec ? slot(execs_, g.exec) : slot(graphs_, g.graph);
      if (!s) break;
      Direction d = static_cast<Direction>(g.direction);
      MemoryKind host =
          trace::host_side(d, static_cast<MemoryKind>(g.src_memory), static_cast<MemoryKind>(g.dst_memory));
      if (host == MemoryKind::Pageable)
        add_node(*s, GraphMemcpyNode{g.node, g.api, d, host, g.bytes, g.stack_id, false});
      else
        drop_node(*s, g.node);  // set to pinned or device memory: no longer a pageable node
      break;
    }
    case Api::cuGraphClone:  // the clone has the original's nodes (copies, under new node handles)
      if (graphs_.count(g.graph))
        if (GraphNodes* s = slot(graphs_, g.clone)) *s = GraphNodes(graphs_.at(g.graph));
      break;
    case Api::cuGraphInstantiateWithFlags:
    case Api::cuGraphInstantiateWithParams:
    case Api::cuGraphExecUpdate_v2:
      if (GraphNodes* s = slot(execs_, g.exec)) {
        auto it = graphs_.find(g.graph);
        // An update gives the executable graph new parameters; it was uploaded before (launches kept).
        const uint64_t launches = static_cast<Api>(g.driver_fn) == Api::cuGraphExecUpdate_v2 ? s->launches : 0;
        *s = it != graphs_.end() ? it->second : GraphNodes{};
        s->launches = launches;
      }
      break;
    default: break;
  }
}

GraphLaunchInfo ProcessAnalyzer::graph_launch_info(uint64_t exec) {
  GraphLaunchInfo info;
  auto it = execs_.find(exec);
  if (it == execs_.end()) return info;
  info.known = true;
  info.first_launch = it->second.launches++ == 0;
  info.memory_nodes = it->second.memory_nodes;
  info.kernel_name_id = it->second.kernel;
  info.pageable_nodes = it->second.nodes.size() + it->second.more;
  if (!it->second.nodes.empty()) info.first_pageable = it->second.nodes.front();
  return info;
}

}  // namespace asyncwatch::analysis
