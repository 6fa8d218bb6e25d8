// State shared by the driver entry points: initialization, the one context, handle decoding,
// events, and capture-aware submission of work to a stream.
#pragma once
#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "stream_engine.h"

namespace aw_sim {

// Which stream handle 0 means: the legacy stream, or (through a _ptsz/_ptds entry point) the
// calling thread's per-thread default stream.
enum class DefaultStream { Legacy, PerThread };

// The simulated device's single context (the primary context; cuCtxCreate hands out the same one).
struct SimContext {
  std::atomic<int> retain_count{0};
};
SimContext* primary_context();

bool driver_initialized();
void mark_initialized();
CUcontext current_context();
void set_current_context(CUcontext c);

// CUDA_SUCCESS if cuInit ran and the thread has a current context; the error otherwise.
CUresult check_context();

// Decodes 0, CU_STREAM_LEGACY (0x1), CU_STREAM_PER_THREAD (0x2) and created streams.
CUresult resolve_stream(CUstream handle, DefaultStream mode, std::shared_ptr<Stream>& out);

// Capture-aware submission. While `s` is capturing, `op` is recorded into the graph
// (*captured = true) and nothing runs; otherwise it is enqueued and its sequence number returned.
uint64_t submit(Stream& s, StreamOp op, bool* captured = nullptr);

// ---- events ----
struct EventRecord {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> time_ns{0};
};
struct SimEvent {
  unsigned flags = 0;
  std::mutex mutex;
  std::shared_ptr<EventRecord> last;  // null: never recorded
};
SimEvent* create_event(unsigned flags);
bool destroy_event(SimEvent* e);
bool is_event(const void* handle);

// Prints "asyncwatch-sim: <name> is not supported by the simulator" and returns NOT_SUPPORTED.
CUresult unsupported(const char* what);

}  // namespace aw_sim
