#include "driver_state.h"

#include <cstdio>
#include <set>

#include "host_wait.h"
#include "sim_config.h"

namespace aw_sim {
namespace {
std::atomic<bool> g_initialized{false};

// The context stack: a fixed array (no allocation; worker threads never touch it).
constexpr int kMaxStack = 16;
thread_local CUcontext t_stack[kMaxStack];
thread_local int t_depth = 0;

std::mutex& events_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::set<const void*>& event_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}

SimContext* contexts() {
  static SimContext* all = [] {
    auto* c = new SimContext[kMaxDevices];  // leaked: used by detached workers at exit
    for (int i = 0; i < kMaxDevices; ++i) c[i].ordinal = i;
    return c;
  }();
  return all;
}
}  // namespace

int device_count() { return config().device_count; }

SimContext* primary_context(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count()) return nullptr;
  return &contexts()[ordinal];
}

SimContext* context_from_handle(CUcontext c) {
  for (int i = 0; i < device_count(); ++i)
    if (handle_of(&contexts()[i]) == c) return &contexts()[i];
  return nullptr;
}

void ensure_created(SimContext* c) {
  std::lock_guard<std::mutex> lock(c->create_mutex);
  if (c->active) return;
  // Creating a context is mostly time in the kernel driver (ioctls, mappings): the calling thread
  // waits. It sleeps here so that test suites full of short processes do not burn the CPU.
  sleep_until(now_ns() + config().context_init_ns);
  c->active = true;
}

void mark_destroyed(SimContext* c) {
  std::lock_guard<std::mutex> lock(c->create_mutex);
  c->active = false;
  c->peer_mask = 0;
}

bool driver_initialized() { return g_initialized.load(); }
void mark_initialized() { g_initialized = true; }

CUcontext current_context() { return t_depth ? t_stack[t_depth - 1] : nullptr; }

void set_current_context(CUcontext c) {
  if (t_depth == 0) {
    if (!c) return;
    t_depth = 1;
  }
  t_stack[t_depth - 1] = c;
  if (!c && t_depth == 1) t_depth = 0;
}

CUresult push_context(CUcontext c) {
  if (t_depth == kMaxStack) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_depth++] = c;
  return CUDA_SUCCESS;
}

CUcontext pop_context() {
  if (!t_depth) return nullptr;
  return t_stack[--t_depth];
}

CUresult check_context() {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

SimContext* current() { return context_from_handle(current_context()); }

bool peer_access_enabled(int from, int to) {
  if (from == to) return true;
  SimContext* c = primary_context(from);
  return c && (c->peer_mask.load() & (1u << to)) != 0;
}

CUresult resolve_stream(CUstream handle, DefaultStream mode, std::shared_ptr<Stream>& out) {
  CUresult r = check_context();
  if (r != CUDA_SUCCESS) return r;
  const auto raw = reinterpret_cast<uintptr_t>(handle);
  StreamTable& table = current()->streams();
  if (raw == 0) {
    out = mode == DefaultStream::PerThread ? table.per_thread() : table.legacy();
  } else if (handle == CU_STREAM_LEGACY) {
    out = table.legacy();
  } else if (handle == CU_STREAM_PER_THREAD) {
    out = table.per_thread();
  } else {
    // A memory copy may go to a stream of another device (CUDA programming guide, multi-device).
    out = find_stream(handle);
    if (!out) return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

SimEvent* create_event(unsigned flags, int device) {
  auto* e = new SimEvent();
  e->flags = flags;
  e->device = device;
  std::lock_guard<std::mutex> lock(events_mutex());
  event_handles().insert(e);
  return e;
}

void record_event(SimEvent* e, const std::shared_ptr<Stream>& s) {
  auto record = std::make_shared<EventRecord>();
  record->stream = s;
  StreamOp op;
  op.what = "event record";
  op.body = [record] {
    record->time_ns = record->stream->running_op_start_ns();  // when the stream reached it, simulated
    record->done = true;
  };
  std::lock_guard<std::mutex> lock(e->mutex);  // record order = enqueue order for this event
  record->seq = s->enqueue(std::move(op));
  e->last = record;
  e->captured_session.reset();
  e->captured_deps.clear();
}

void wait_for_event(SimEvent* e, Stream& s) {
  std::shared_ptr<EventRecord> record;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    record = e->last;
  }
  if (!record) return;
  StreamOp op;
  op.what = "wait event";
  op.deps.push_back({record->stream, record->seq});
  s.enqueue(std::move(op));
}

bool destroy_event(SimEvent* e) {
  {
    std::lock_guard<std::mutex> lock(events_mutex());
    if (!event_handles().erase(e)) return false;
  }
  delete e;  // a pending record stays alive through its shared_ptr in the stream operation
  return true;
}

bool is_event(const void* handle) {
  std::lock_guard<std::mutex> lock(events_mutex());
  return event_handles().count(handle) != 0;
}

CUresult unsupported(const char* what) {
  std::fprintf(stderr, "asyncwatch-sim: %s is not supported by the simulator\n", what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace aw_sim
