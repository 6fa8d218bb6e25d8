// State shared by the driver entry points: initialization, the devices and their primary contexts,
// the calling thread's context stack, handle decoding and events.
#pragma once
#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "stream_engine.h"

namespace aw_sim {

// Which stream handle 0 means: the legacy stream, or (through a _ptsz/_ptds entry point) the
// calling thread's per-thread default stream.
enum class DefaultStream { Legacy, PerThread };

// A device's primary context. cuCtxCreate hands out the same one (the simulator has no other
// contexts); its streams live in stream_table(ordinal).
struct SimContext {
  int ordinal = 0;
  std::atomic<int> retain_count{0};
  // Created (its creation cost paid) and not reset since; guarded by create_mutex.
  bool active = false;
  std::mutex create_mutex;
  // Devices whose memory this context may access directly (cuCtxEnablePeerAccess).
  std::atomic<unsigned> peer_mask{0};
  StreamTable& streams() const { return stream_table(ordinal); }
};

int device_count();
// Device `ordinal`'s primary context; nullptr when there is no such device.
SimContext* primary_context(int ordinal);
// The context behind a handle; nullptr if it is not one.
SimContext* context_from_handle(CUcontext c);
inline CUcontext handle_of(SimContext* c) { return reinterpret_cast<CUcontext>(c); }

// Creates the context if it is not active: the calling thread pays ASYNCWATCH_SIM_CONTEXT_INIT_US
// (what creating a context costs a real driver). Every later call returns at once.
void ensure_created(SimContext* c);
// cuDevicePrimaryCtxReset: the next retain creates the context again.
void mark_destroyed(SimContext* c);

bool driver_initialized();
void mark_initialized();

// The calling thread's context stack (cuCtxPushCurrent/PopCurrent; cuCtxSetCurrent replaces the top).
CUcontext current_context();
void set_current_context(CUcontext c);
CUresult push_context(CUcontext c);
CUcontext pop_context();

// CUDA_SUCCESS if cuInit ran and the thread has a current context; the error otherwise.
CUresult check_context();
// The current context (after check_context() succeeded).
SimContext* current();

// Whether `from`'s context has peer access to device `to`'s memory (always true for to == from).
bool peer_access_enabled(int from, int to);

// Decodes 0, CU_STREAM_LEGACY (0x1), CU_STREAM_PER_THREAD (0x2) (the current context's) and
// created streams (of any context).
CUresult resolve_stream(CUstream handle, DefaultStream mode, std::shared_ptr<Stream>& out);

// ---- events ----
struct EventRecord {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> time_ns{0};
};
struct SimEvent {
  unsigned flags = 0;
  int device = 0;
  std::mutex mutex;
  std::shared_ptr<EventRecord> last;  // null: never recorded
  // Recorded into a capturing stream: the capture session and the nodes a wait on it depends on.
  std::shared_ptr<CaptureSession> captured_session;
  std::vector<SimGraphNode*> captured_deps;
};
SimEvent* create_event(unsigned flags, int device);
// Enqueues a record of `e` on `s`: the event completes, with the simulated time at which `s` reached
// it, when `s` gets there.
void record_event(SimEvent* e, const std::shared_ptr<Stream>& s);
// Makes the next operation of `s` wait for `e`'s last record (never recorded: nothing to wait for).
void wait_for_event(SimEvent* e, Stream& s);
bool destroy_event(SimEvent* e);
bool is_event(const void* handle);

// Prints "asyncwatch-sim: <name> is not supported by the simulator" and returns NOT_SUPPORTED.
CUresult unsupported(const char* what);

}  // namespace aw_sim
