// CUDA graphs: a DAG of nodes (kernel, memcpy, memset, host function, event record/wait, empty),
// built explicitly (cuGraphAdd*Node) or by stream capture, instantiated into an executable graph and
// launched into a stream. A launch runs the nodes one after another in a topological order on the
// launch stream, each with the host-visible behaviour of the equivalent stream operation: a memcpy
// node with pageable host memory makes cuGraphLaunch itself wait as a pageable cuMemcpy*Async would
// (measured on the H200), everything else is only queued.
#pragma once
#include <cuda.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "copy_engine.h"

namespace aw_sim {

struct SimFunction;
struct SimEvent;
struct SimGraph;

enum class NodeKind { Kernel, Memcpy, Memset, Host, EventRecord, EventWait, Empty };
CUgraphNodeType node_type(NodeKind k);

struct NodeParams {
  NodeKind kind = NodeKind::Empty;
  int device = 0;  // the context the node runs on
  // Kernel
  SimFunction* function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_mem = 0;
  uint64_t duration_ns = 0;  // decided when the node is created (kernel parameters are copied then)
  // Memcpy: what moves, and the descriptor the node was created with (cuGraphMemcpyNodeGetParams)
  CopyShape copy;
  CUDA_MEMCPY3D copy_desc{};
  // Memset
  MemsetShape memset;
  // Host function
  CUhostFn host_fn = nullptr;
  void* host_user = nullptr;
  // Event record / wait
  SimEvent* event = nullptr;
};

struct SimGraphNode {
  SimGraph* graph = nullptr;
  NodeParams params;
  std::vector<SimGraphNode*> deps;            // incoming edges
  const SimGraphNode* cloned_from = nullptr;  // cuGraphClone: the original's node (cuGraphNodeFindInClone)
};

struct SimGraph {
  mutable std::mutex mutex;  // several capturing streams may add nodes at once
  std::vector<std::unique_ptr<SimGraphNode>> nodes;
};

// An instantiated graph: the nodes' parameters in a topological order (creation order among
// independent nodes), and where each node of the source graph went.
struct SimGraphExec {
  std::mutex mutex;  // parameter updates vs launches
  std::vector<NodeParams> nodes;
  std::vector<std::vector<size_t>> deps;  // by position, for cuGraphExecUpdate's topology check
  std::map<const SimGraphNode*, size_t> position;
  std::shared_ptr<Stream> last_stream;  // launches of one executable graph are ordered
  uint64_t last_seq = 0;
};

// Handles. Nodes stay valid until their graph (or the node) is destroyed.
SimGraph* create_graph();
bool destroy_graph(SimGraph* g);
bool is_graph(const void* h);
bool is_node(const void* h);
// Adds a node depending on `deps` (all must be nodes of `g`, no duplicates).
CUresult add_node(SimGraph* g, const CUgraphNode* deps, size_t n, NodeParams p, SimGraphNode** out);
CUresult add_edges(SimGraph* g, const CUgraphNode* from, const CUgraphNode* to, size_t n);
CUresult destroy_node(SimGraphNode* node);
// cuGraphClone: a new graph with a copy of each node (same parameters, same edges).
SimGraph* clone_graph(SimGraph* g);
CUresult instantiate(SimGraph* g, SimGraphExec** out);
bool destroy_exec(SimGraphExec* e);
bool is_exec(const void* h);
// cuGraphExecUpdate: copies the node parameters of `g` into `e` if the topology is the same.
CUgraphExecUpdateResult update_exec(SimGraphExec* e, SimGraph* g, SimGraphNode** error_node);
// Enqueues (and, for pageable memcpy nodes, performs) the graph's nodes on `s`.
CUresult launch(SimGraphExec* e, Stream& s);

// ---- stream capture ----
struct CaptureSession {
  SimGraph* graph = nullptr;
  bool owns_graph = true;  // false: cuStreamBeginCaptureToGraph into the caller's graph
  unsigned long long id = 0;
  std::weak_ptr<Stream> origin;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::atomic<bool> active{true};
  std::atomic<bool> invalidated{false};
};

// If `s` takes part in a capture, adds `p` as a node after the stream's capture dependencies and
// returns true (*status: CUDA_SUCCESS, or the error of an invalidated capture); false otherwise.
bool capture_node(Stream& s, const NodeParams& p, CUresult* status);

CUresult begin_capture(Stream& s, CUstreamCaptureMode mode, SimGraph* into, const CUgraphNode* deps, size_t n);
CUresult end_capture(Stream& s, SimGraph** out);

}  // namespace aw_sim
