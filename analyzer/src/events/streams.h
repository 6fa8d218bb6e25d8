// The streams of one process, as both the rules and the timeline see them: which stream a call
// is on (one definition of the stream key), and what is known about each stream while the
// records are followed in time order (created non-blocking, launches since it was last known
// idle and which kernels, forgotten when destroyed so that a reused handle starts afresh).
#pragma once

#include "events/copies.h"
#include "events/stream_state.h"

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <string>
#include <unordered_map>

namespace asyncwatch::events {

// The stream a call is on. The record's stream kind decides; for records without one
// (StreamKind::Unknown) the handle does: 0 and 1 (cudaStreamLegacy) are the legacy default
// stream, 2 (cudaStreamPerThread) the calling thread's per-thread default stream.
struct StreamRef {
  enum class Which : uint8_t { LegacyDefault, PerThreadDefault, Explicit };
  Which which = Which::LegacyDefault;
  uint64_t handle = 0;
  uint32_t tid = 0;  // PerThreadDefault: whose
  uint64_t key = 0;  // one per stream of the process: 0 legacy, 1<<63|tid per-thread, else the handle
};
// Which stream a record's kind and handle name; inline: the analysis resolves the stream of every
// copy and launch.
inline StreamRef::Which stream_which(uint8_t stream_kind, uint64_t handle) {
  auto k = static_cast<trace::StreamKind>(stream_kind);
  if (k == trace::StreamKind::LegacyDefault || (k == trace::StreamKind::Unknown && handle <= 1))
    return StreamRef::Which::LegacyDefault;
  if (k == trace::StreamKind::PerThreadDefault || (k == trace::StreamKind::Unknown && handle == 2))
    return StreamRef::Which::PerThreadDefault;
  return StreamRef::Which::Explicit;
}
__attribute__((always_inline)) inline uint64_t stream_key(uint8_t stream_kind, uint64_t handle, uint32_t tid) {
  // An explicit stream, the common case, first: stream_which's answer for that kind.
  if (__builtin_expect(stream_kind == static_cast<uint8_t>(trace::StreamKind::Explicit), 1)) return handle;
  switch (stream_which(stream_kind, handle)) {
    case StreamRef::Which::LegacyDefault: return 0;
    case StreamRef::Which::PerThreadDefault: return (uint64_t{1} << 63) | tid;
    case StreamRef::Which::Explicit: break;
  }
  return handle;
}
inline StreamRef resolve_stream(uint8_t stream_kind, uint64_t handle, uint32_t tid) {
  return StreamRef{stream_which(stream_kind, handle), handle, tid, stream_key(stream_kind, handle, tid)};
}
// "stream: legacy default", "stream: per-thread default of tid 7", "stream 0x5000"
std::string stream_name(const StreamRef& s);

// What is known about each stream (bounded by Limits::streams: more streams in use at once is a
// TraceError naming `trace` and the limit).
class StreamTable {
 public:
  StreamTable(std::string trace, uint64_t limit) : trace_(std::move(trace)), limit_(limit) {}
  StreamTable(const StreamTable&) = delete;
  StreamTable& operator=(const StreamTable&) = delete;

  // The state of stream `key` (created when first seen). Inline: a small direct-mapped cache
  // answers all but the first look-up of each stream (threads interleave, each on its stream).
  __attribute__((always_inline)) StreamState& at(uint64_t key) {
    CacheEntry& e = cache_[(key * 0x9e3779b97f4a7c15ull) >> 58];  // the top 6 bits: kCache entries
    if (__builtin_expect(e.state != nullptr && e.key == key, 1)) return *e.state;
    return at_slow(e, key);
  }
  void created(const trace::StreamCreateRecord& s);  // StreamCreate
  void destroyed(uint64_t handle);                   // StreamDestroy
  void launched(uint64_t key, uint32_t kernel);      // a launch enqueued on it (kernel id, or kGraphKernel)
  // Known idle: everything enqueued on it has run. The legacy default stream waits for every
  // blocking stream, so it being idle idles them too.
  void idle(uint64_t key) { idle(key, at(key)); }
  void idle(uint64_t key, StreamState& st);  // `st` is at(key)
  void idle_all();                           // device or context synchronize, or a call that synchronizes the device
  // cudaStreamWaitEvent on `key`: its later work waits for an event recorded on some stream (the
  // trace has no cudaEventRecord: which is unknown), so it takes over, as what it may wait for, the
  // kernels then not known complete on every other stream.
  void waited_on_event(uint64_t key);

  // What a returned call says about its stream (after the rules saw the state before it):
  // a copy that the evidence says completed, or a device-to-host copy that waits (synchronous
  // API, or into pageable memory), leaves its stream idle; a launch is enqueued (and with
  // CUDA_LAUNCH_BLOCKING=1 waited for); a successful stream synchronize or query idles that
  // stream, a device or context synchronize every stream, a stream wait event is waited_on_event;
  // a successful free of device or
  // pinned memory synchronizes the device.
  void copy_returned(uint64_t key, const trace::CopyRecord& c) { copy_returned(key, at(key), c, copy_facts(c)); }
  void launch_returned(uint64_t key, const trace::LaunchRecord& l, bool launch_blocking) {
    launch_returned(key, at(key), l, launch_blocking);
  }
  // The same with `st` = at(key) already looked up (the analysis' hot path).
  // `facts`: c's (copies.h).
  __attribute__((always_inline)) void copy_returned(uint64_t key, StreamState& st, const trace::CopyRecord& c,
                                                    const CopyFacts& facts) {
    const bool sync_api = (c.flags & trace::kFlagSynchronousApi) != 0;
    const bool completed = (c.flags & trace::kFlagEvidenceChecked) && (c.flags & trace::kFlagCompletedAtReturn);
    const bool waits = facts.direction == trace::Direction::DtoH &&
                       (sync_api || c.dst_memory == static_cast<uint8_t>(trace::MemoryKind::Pageable));
    const auto pageable = static_cast<uint8_t>(trace::MemoryKind::Pageable);
    if (completed || waits) {
      idle(key, st);
    } else if (c.src_memory != pageable && c.dst_memory != pageable) {  // a staged copy is mostly done at return
      ++st.copies_since_idle;
      st.copy_bytes_since_idle += c.bytes;
    }
  }
  __attribute__((always_inline)) void launch_returned(uint64_t key, StreamState& st, const trace::LaunchRecord& l,
                                                      bool launch_blocking) {
    auto api = static_cast<trace::Api>(l.api);
    const bool graph = api == trace::Api::cudaGraphLaunch || api == trace::Api::cuGraphLaunch;
    ++st.launches_since_sync;  // enqueued on it
    st.since_idle.add(graph ? kGraphKernel : l.kernel_name_id);
    if (launch_blocking) idle(key, st);
  }
  void sync_returned(const trace::SyncRecord& s, uint32_t tid);
  // The work enqueued on every stream and not known complete, into `out` (cleared first).
  void pending(PendingWork& out) const;
  void memory_op_returned(const trace::MemoryOpRecord& m);

  static constexpr uint32_t kGraphKernel = UINT32_MAX;  // tally id for a graph launch

 private:
  struct CacheEntry;
  StreamState& at_slow(CacheEntry& e, uint64_t key);
  void clear_cache();

  std::string trace_;
  uint64_t limit_;
  std::unordered_map<uint64_t, StreamState> streams_;
  // A small direct-mapped cache in front of the map: threads interleave, each on its stream.
  static constexpr size_t kCache = 64;  // (at()'s index: 6 bits)
  struct CacheEntry {
    uint64_t key = 0;
    StreamState* state = nullptr;
  };
  CacheEntry cache_[kCache];
};

}  // namespace asyncwatch::events
