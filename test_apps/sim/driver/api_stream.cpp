// Streams, events, host callbacks, stream capture and graphs.
#include <atomic>

#include "driver_state.h"
#include "exports.h"
#include "host_wait.h"
#include "sim_config.h"

using namespace aw_sim;

namespace {

std::atomic<unsigned long long> g_next_capture_id{1};

CUresult stream_create(CUstream* out, unsigned flags, int priority) {
  if (CUresult r = check_context()) return r;
  if (!out || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUstream>(stream_table().create(flags, priority).get());
  return CUDA_SUCCESS;
}

CUresult stream_synchronize(CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (s->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  s->host_synchronize();
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

CUresult event_record(CUevent e, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture()) return unsupported("cuEventRecord into a capturing stream");
  auto* ev = reinterpret_cast<SimEvent*>(e);
  auto record = std::make_shared<EventRecord>();
  record->stream = s;
  StreamOp op;
  op.what = "event record";
  op.body = [record] {
    record->time_ns = record->stream->running_op_start_ns();  // when the stream reached it, simulated
    record->done = true;
  };
  std::lock_guard<std::mutex> lock(ev->mutex);  // record order = enqueue order for this event
  record->seq = s->enqueue(std::move(op));
  ev->last = record;
  return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream h, CUevent e, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture()) return unsupported("cuStreamWaitEvent on a capturing stream (cross-stream capture)");
  auto* ev = reinterpret_cast<SimEvent*>(e);
  std::shared_ptr<EventRecord> record;
  {
    std::lock_guard<std::mutex> lock(ev->mutex);
    record = ev->last;
  }
  if (!record) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  StreamOp op;
  op.what = "wait event";
  op.deps.push_back({record->stream, record->seq});
  s->enqueue(std::move(op));
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
  StreamOp op;
  op.what = "host function";
  op.body = [fn, user] { fn(user); };
  op.start_delay_ns = config().host_fn_latency_ns;
  submit(*s, std::move(op));
  return CUDA_SUCCESS;
}

CUresult begin_capture(CUstream h, CUstreamCaptureMode, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (s->kind() == Stream::Kind::Legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture()) return CUDA_ERROR_ILLEGAL_STATE;
  auto g = std::make_shared<CaptureGraph>();
  g->origin = s;
  g->id = g_next_capture_id++;
  s->set_capture(g);
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream h, CUgraph* graph, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  auto g = s->capture();
  if (!g) return CUDA_ERROR_ILLEGAL_STATE;
  s->set_capture(nullptr);
  *graph = reinterpret_cast<CUgraph>(new CaptureGraph(*g));
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream h, CUstreamCaptureStatus* status, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  *status = s->capture() ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  auto g = s->capture();
  *status = g ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id) *id = g ? g->id : 0;
  // The simulator's graphs are node lists without node handles: report no dependencies.
  if (graph) *graph = nullptr;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (num_deps) *num_deps = 0;
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec exec, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  for (const StreamOp& op : reinterpret_cast<CaptureGraph*>(exec)->snapshot()) submit(*s, op);
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
  return stream_table().destroy(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) { return stream_synchronize(s, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) { return stream_synchronize(s, DefaultStream::PerThread); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s) { return stream_query(s, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) { return stream_query(s, DefaultStream::PerThread); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream s, unsigned int* f) { return stream_flags(s, DefaultStream::Legacy, f); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream s, unsigned int* f) { return stream_flags(s, DefaultStream::PerThread, f); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream s, int* p) { return stream_priority(s, DefaultStream::Legacy, p); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream s, int* p) { return stream_priority(s, DefaultStream::PerThread, p); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int) {
  return stream_wait_event(s, e, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int) {
  return stream_wait_event(s, e, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback cb, void* user, unsigned int flags) {
  return add_callback(s, cb, user, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void* user, unsigned int flags) {
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
  *e = reinterpret_cast<CUevent>(create_event(flags));
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent e) {
  if (CUresult r = check_context()) return r;
  return destroy_event(reinterpret_cast<SimEvent*>(e)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return event_record(e, s, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) { return event_record(e, s, DefaultStream::PerThread); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int) {
  return event_record(e, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int) {
  return event_record(e, s, DefaultStream::PerThread);
}
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

// ---- capture and graphs ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture(s, mode, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture(s, mode, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph* g) { return end_capture(s, g, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) { return end_capture(s, g, DefaultStream::PerThread); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  return is_capturing(s, st, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* st) {
  return is_capturing(s, st, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g,
                                                            const CUgraphNode** deps, const CUgraphEdgeData** edges,
                                                            size_t* n) {
  return capture_info(s, st, id, g, deps, edges, n, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id,
                                                                 CUgraph* g, const CUgraphNode** deps,
                                                                 const CUgraphEdgeData** edges, size_t* n) {
  return capture_info(s, st, id, g, deps, edges, n, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  if (CUresult r = check_context()) return r;
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  *exec = reinterpret_cast<CUgraphExec>(new CaptureGraph(*reinterpret_cast<CaptureGraph*>(graph)));
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream s) { return graph_launch(exec, s, DefaultStream::Legacy); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
  return graph_launch(exec, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<CaptureGraph*>(exec);
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  delete reinterpret_cast<CaptureGraph*>(graph);
  return CUDA_SUCCESS;
}
