#include "driver_state.h"

#include <cstdio>
#include <set>

#include "host_wait.h"
#include "sim_config.h"

namespace aw_sim {
namespace {
std::atomic<bool> g_initialized{false};
thread_local CUcontext t_current = nullptr;

std::mutex& events_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::set<const void*>& event_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}
}  // namespace

SimContext* primary_context() {
  static SimContext* ctx = new SimContext();
  return ctx;
}

bool driver_initialized() { return g_initialized.load(); }
void mark_initialized() { g_initialized = true; }
CUcontext current_context() { return t_current; }
void set_current_context(CUcontext c) { t_current = c; }

CUresult check_context() {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

CUresult resolve_stream(CUstream handle, DefaultStream mode, std::shared_ptr<Stream>& out) {
  CUresult r = check_context();
  if (r != CUDA_SUCCESS) return r;
  const auto raw = reinterpret_cast<uintptr_t>(handle);
  if (raw == 0) {
    out = mode == DefaultStream::PerThread ? stream_table().per_thread() : stream_table().legacy();
  } else if (handle == CU_STREAM_LEGACY) {
    out = stream_table().legacy();
  } else if (handle == CU_STREAM_PER_THREAD) {
    out = stream_table().per_thread();
  } else {
    out = stream_table().find(handle);
    if (!out) return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

uint64_t submit(Stream& s, StreamOp op, bool* captured) {
  if (auto graph = s.capture()) {
    op.deps.clear();
    graph->record(std::move(op));
    if (captured) *captured = true;
    return 0;
  }
  if (captured) *captured = false;
  return s.enqueue(std::move(op));
}

SimEvent* create_event(unsigned flags) {
  auto* e = new SimEvent();
  e->flags = flags;
  std::lock_guard<std::mutex> lock(events_mutex());
  event_handles().insert(e);
  return e;
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
