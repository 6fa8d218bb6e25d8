// Streams, events, host callbacks, stream capture and graphs.
#include <algorithm>
#include <atomic>
#include <vector>

#include "driver_state.h"
#include "graph.h"
#include "exports.h"
#include "host_wait.h"
#include "mem_pool.h"
#include "sim_config.h"

using namespace aw_sim;

namespace {

CUresult stream_create(CUstream* out, unsigned flags, int priority) {
  if (CUresult r = check_context()) return r;
  if (!out || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUstream>(current()->streams().create(flags, priority).get());
  return CUDA_SUCCESS;
}

CUresult stream_synchronize(CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (s->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  s->host_synchronize();
  trim_pools_after_synchronize();
  return CUDA_SUCCESS;
}

CUresult stream_query(CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (s->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return s->idle() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_flags(CUstream h, DefaultStream mode, unsigned* flags) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags();
  return CUDA_SUCCESS;
}

CUresult stream_priority(CUstream h, DefaultStream mode, int* priority) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  *priority = s->priority();
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent e, CUstream h, DefaultStream mode, unsigned flags) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<SimEvent*>(e);
  // cudaEventRecord fails if the event and the stream belong to different devices.
  if (ev->device != s->device()) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture()) {
    CUresult status = CUDA_SUCCESS;
    if (flags & CU_EVENT_RECORD_EXTERNAL) {
      NodeParams p;
      p.kind = NodeKind::EventRecord;
      p.device = s->device();
      p.event = ev;
      if (capture_node(*s, p, &status)) return status;
    } else {
      // A record inside a capture creates no node: the event stands for the stream's capture position
      // (a later cuStreamWaitEvent on it forks or joins the capture).
      const bool captured =
          s->with_capture([&](std::shared_ptr<CaptureSession>& session, std::vector<SimGraphNode*>& deps) {
            if (!session) return false;
            std::lock_guard<std::mutex> lock(ev->mutex);
            ev->captured_session = session;
            ev->captured_deps = deps;
            return true;
          });
      if (captured) return CUDA_SUCCESS;
    }
  }
  record_event(ev, s);
  return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<SimEvent*>(e);
  std::shared_ptr<CaptureSession> event_session;
  std::vector<SimGraphNode*> event_deps;
  {
    std::lock_guard<std::mutex> lock(ev->mutex);
    if (ev->captured_session && ev->captured_session->active) {
      event_session = ev->captured_session;
      event_deps = ev->captured_deps;
    }
  }
  if (event_session) {
    // Fork (a stream outside the capture joins it) or join (merge the event's position into ours).
    CUresult status = CUDA_SUCCESS;
    s->with_capture([&](std::shared_ptr<CaptureSession>& session, std::vector<SimGraphNode*>& deps) {
      if (!session) {
        session = event_session;
        deps = event_deps;
      } else if (session != event_session) {
        status = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
      } else {
        for (SimGraphNode* d : event_deps)
          if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
      }
      return 0;
    });
    return status;
  }
  if (s->capture()) {
    // An event recorded outside the capture. Without CU_EVENT_WAIT_EXTERNAL the H200 answers
    // CUDA_ERROR_STREAM_CAPTURE_ISOLATION and invalidates the capture (its cuStreamEndCapture:
    // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); with the flag it is an event wait node.
    if (!(flags & CU_EVENT_WAIT_EXTERNAL)) {
      s->with_capture([](std::shared_ptr<CaptureSession>& session, std::vector<SimGraphNode*>&) {
        if (session) session->invalidated = true;
        return 0;
      });
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    NodeParams p;
    p.kind = NodeKind::EventWait;
    p.device = s->device();
    p.event = ev;
    CUresult status = CUDA_SUCCESS;
    if (capture_node(*s, p, &status)) return status;
  }
  wait_for_event(ev, *s);
  return CUDA_SUCCESS;
}

CUresult add_callback(CUstream h, CUstreamCallback cb, void* user, unsigned flags, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!cb || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // as on a real GPU
  // The callback gets the handle the program passed (0 stays 0).
  StreamOp op;
  op.what = "stream callback";
  op.body = [cb, h, user] { cb(h, CUDA_SUCCESS, user); };
  op.start_delay_ns = config().host_fn_latency_ns;
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

CUresult launch_host_func(CUstream h, CUhostFn fn, void* user, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) {
    NodeParams p;
    p.kind = NodeKind::Host;
    p.device = s->device();
    p.host_fn = fn;
    p.host_user = user;
    CUresult status = CUDA_SUCCESS;
    if (capture_node(*s, p, &status)) return status;
  }
  StreamOp op;
  op.what = "host function";
  op.body = [fn, user] { fn(user); };
  op.start_delay_ns = config().host_fn_latency_ns;
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

CUresult begin_capture_on(CUstream h, CUstreamCaptureMode mode, DefaultStream dmode, CUgraph into,
                          const CUgraphNode* deps, size_t n) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, dmode, s)) return r;
  if (into && !is_graph(into)) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(*s, mode, reinterpret_cast<SimGraph*>(into), deps, n);
}

CUresult end_capture_on(CUstream h, CUgraph* graph, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  SimGraph* g = nullptr;
  CUresult r = end_capture(*s, &g);
  *graph = reinterpret_cast<CUgraph>(g);
  return r;
}

CUresult is_capturing(CUstream h, CUstreamCaptureStatus* status, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  auto session = s->capture();
  *status = !session               ? CU_STREAM_CAPTURE_STATUS_NONE
            : session->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

// The dependency array cuStreamGetCaptureInfo hands out stays valid until this thread's next call.
thread_local std::vector<CUgraphNode> t_capture_deps;

CUresult capture_info(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<CaptureSession> session;
  s->with_capture([&](std::shared_ptr<CaptureSession>& current, std::vector<SimGraphNode*>& d) {
    session = current;
    t_capture_deps.clear();
    if (current)
      for (SimGraphNode* n : d) t_capture_deps.push_back(reinterpret_cast<CUgraphNode>(n));
    return 0;
  });
  *status = !session               ? CU_STREAM_CAPTURE_STATUS_NONE
            : session->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = session ? session->id : 0;
  if (graph) *graph = session ? reinterpret_cast<CUgraph>(session->graph) : nullptr;
  if (deps) *deps = session && !t_capture_deps.empty() ? t_capture_deps.data() : nullptr;
  if (edges) *edges = nullptr;  // all edges are default edges
  if (num_deps) *num_deps = session ? t_capture_deps.size() : 0;
  return CUDA_SUCCESS;
}

CUresult update_capture_dependencies(CUstream h, CUgraphNode* deps, size_t n, unsigned flags, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if ((n && !deps) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES) return CUDA_ERROR_INVALID_VALUE;
  CUresult status = CUDA_SUCCESS;
  s->with_capture([&](std::shared_ptr<CaptureSession>& session, std::vector<SimGraphNode*>& d) {
    if (!session) {
      status = CUDA_ERROR_ILLEGAL_STATE;
      return 0;
    }
    std::vector<SimGraphNode*> next = flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? std::vector<SimGraphNode*>{} : d;
    for (size_t i = 0; i < n; ++i) {
      auto* node = reinterpret_cast<SimGraphNode*>(deps[i]);
      if (!is_node(node) || node->graph != session->graph) {
        status = CUDA_ERROR_INVALID_VALUE;
        return 0;
      }
      if (std::find(next.begin(), next.end(), node) == next.end()) next.push_back(node);
    }
    d = next;
    return 0;
  });
  return status;
}

CUresult graph_launch(CUgraphExec exec, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_exec(exec)) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return unsupported("cuGraphLaunch into a capturing stream (child graph)");
  return launch(reinterpret_cast<SimGraphExec*>(exec), *s);
}

CUresult graph_upload(CUgraphExec exec, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_exec(exec)) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return unsupported("cuGraphUpload into a capturing stream");
  // Uploading is stream-ordered work that costs the host nothing here.
  StreamOp op;
  op.what = "graph upload";
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

}  // namespace

// ---- streams ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int flags) { return stream_create(s, flags, 0); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
  return stream_create(s, flags, priority);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s) {
  if (CUresult r = check_context()) return r;
  auto stream = find_stream(s);
  return stream && stream->table().destroy(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
  return stream_synchronize(s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) {
  return stream_synchronize(s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s) { return stream_query(s, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) { return stream_query(s, DefaultStream::PerThread); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream s, unsigned int* f) {
  return stream_flags(s, DefaultStream::Legacy, f);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream s, unsigned int* f) {
  return stream_flags(s, DefaultStream::PerThread, f);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream s, int* p) {
  return stream_priority(s, DefaultStream::Legacy, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream s, int* p) {
  return stream_priority(s, DefaultStream::PerThread, p);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetDevice(CUstream h, CUdevice* dev) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, DefaultStream::Legacy, s)) return r;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  *dev = s->device();
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream h, CUdevice* dev) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, DefaultStream::PerThread, s)) return r;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  *dev = s->device();
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  return stream_wait_event(s, e, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags) {
  return stream_wait_event(s, e, flags, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback cb, void* user, unsigned int flags) {
  return add_callback(s, cb, user, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void* user,
                                                           unsigned int flags) {
  return add_callback(s, cb, user, flags, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void* user) {
  return launch_host_func(s, fn, user, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user) {
  return launch_host_func(s, fn, user, DefaultStream::PerThread);
}

// ---- events ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int flags) {
  if (CUresult r = check_context()) return r;
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = reinterpret_cast<CUevent>(create_event(flags, current()->ordinal));
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent e) {
  if (CUresult r = check_context()) return r;
  return destroy_event(reinterpret_cast<SimEvent*>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
  return event_record(e, s, DefaultStream::Legacy, 0);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) {
  return event_record(e, s, DefaultStream::PerThread, 0);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags) {
  return event_record(e, s, DefaultStream::Legacy, flags);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags) {
  return event_record(e, s, DefaultStream::PerThread, flags);
}
// Polled in tight loops (cudaEventQuery): no allocation, two uncontended locks.
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventQuery(CUevent e) {
  if (CUresult r = check_context()) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<SimEvent*>(e);
  std::lock_guard<std::mutex> lock(ev->mutex);
  return !ev->last || ev->last->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  if (CUresult r = check_context()) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  auto* ev = reinterpret_cast<SimEvent*>(e);
  std::shared_ptr<EventRecord> record;
  {
    std::lock_guard<std::mutex> lock(ev->mutex);
    record = ev->last;
  }
  if (record) spin_until([&] { return record->done.load(); });
  trim_pools_after_synchronize();
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  if (CUresult r = check_context()) return r;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!is_event(start) || !is_event(end)) return CUDA_ERROR_INVALID_HANDLE;
  auto* a = reinterpret_cast<SimEvent*>(start);
  auto* b = reinterpret_cast<SimEvent*>(end);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<EventRecord> ra, rb;
  {
    std::lock_guard<std::mutex> la(a->mutex);
    ra = a->last;
  }
  {
    std::lock_guard<std::mutex> lb(b->mutex);
    rb = b->last;
  }
  if (!ra || !rb) return CUDA_ERROR_INVALID_HANDLE;
  if (!ra->done || !rb->done) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>((static_cast<double>(rb->time_ns) - static_cast<double>(ra->time_ns)) / 1e6);
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

// ---- capture ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture_on(s, mode, DefaultStream::Legacy, nullptr, nullptr, 0);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture_on(s, mode, DefaultStream::PerThread, nullptr, nullptr, 0);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                              const CUgraphEdgeData* edges, size_t n,
                                                              CUstreamCaptureMode mode) {
  if (edges) return unsupported("cuStreamBeginCaptureToGraph with edge data");
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture_on(s, mode, DefaultStream::Legacy, g, deps, n);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                                   const CUgraphEdgeData* edges, size_t n,
                                                                   CUstreamCaptureMode mode) {
  if (edges) return unsupported("cuStreamBeginCaptureToGraph with edge data");
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture_on(s, mode, DefaultStream::PerThread, g, deps, n);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph* g) {
  return end_capture_on(s, g, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) {
  return end_capture_on(s, g, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  return is_capturing(s, st, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* st) {
  return is_capturing(s, st, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id,
                                                            CUgraph* g, const CUgraphNode** deps,
                                                            const CUgraphEdgeData** edges, size_t* n) {
  return capture_info(s, st, id, g, deps, edges, n, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id,
                                                                 CUgraph* g, const CUgraphNode** deps,
                                                                 const CUgraphEdgeData** edges, size_t* n) {
  return capture_info(s, st, id, g, deps, edges, n, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode* deps,
                                                                       const CUgraphEdgeData* edges, size_t n,
                                                                       unsigned int flags) {
  if (edges) return unsupported("cuStreamUpdateCaptureDependencies with edge data");
  return update_capture_dependencies(s, deps, n, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream s, CUgraphNode* deps,
                                                                            const CUgraphEdgeData* edges, size_t n,
                                                                            unsigned int flags) {
  if (edges) return unsupported("cuStreamUpdateCaptureDependencies with edge data");
  return update_capture_dependencies(s, deps, n, flags, DefaultStream::PerThread);
}

// ---- graph launch (the node API is in api_graph.cpp) ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream s) {
  return graph_launch(exec, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
  return graph_launch(exec, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec exec, CUstream s) {
  return graph_upload(exec, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec exec, CUstream s) {
  return graph_upload(exec, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode* deps, size_t n,
                                                                    unsigned int flags) {
  return update_capture_dependencies(s, deps, n, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode* deps, size_t n,
                                                                         unsigned int flags) {
  return update_capture_dependencies(s, deps, n, flags, DefaultStream::PerThread);
}
