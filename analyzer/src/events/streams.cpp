#include "events/streams.h"

#include "read/trace_reader.h"  // TraceError, limit_message

#include <fmt/format.h>

namespace asyncwatch::events {

using namespace trace;

std::string stream_name(const StreamRef& s) {
  switch (s.which) {
    case StreamRef::Which::LegacyDefault: return "stream: legacy default";
    case StreamRef::Which::PerThreadDefault: return fmt::format("stream: per-thread default of tid {}", s.tid);
    case StreamRef::Which::Explicit: break;
  }
  return fmt::format("stream 0x{:x}", s.handle);
}

StreamState& StreamTable::at_slow(CacheEntry& e, uint64_t key) {
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    if (streams_.size() >= limit_)
      throw TraceError(fmt::format("{}: {}", trace_, limit_message("streams in use at once", limit_, nullptr)));
    it = streams_.emplace(key, StreamState{}).first;
  }
  e.key = key;
  e.state = &it->second;  // node-based: the pointer stays valid until erase
  return *e.state;
}

void StreamTable::created(const StreamCreateRecord& s) {
  if (s.result != 0 || s.stream <= 2) return;
  StreamState& st = at(s.stream);
  st = StreamState{};
  st.non_blocking = (s.stream_flags & 1u) != 0;  // cudaStreamNonBlocking
}

void StreamTable::destroyed(uint64_t handle) {
  if (handle <= 2) return;
  streams_.erase(handle);
  clear_cache();
}

void StreamTable::launched(uint64_t key, uint32_t kernel) {
  StreamState& st = at(key);
  ++st.launches_since_sync;
  st.since_idle.add(kernel);
}

namespace {
void forget_work(StreamState& st) {
  st.launches_since_sync = 0;
  st.since_idle.clear();
  st.event_waits = 0;
  st.copies_since_idle = 0;
  st.copy_bytes_since_idle = 0;
}
}  // namespace

void StreamTable::pending(PendingWork& out) const {
  out.kernels.clear();
  out.copies = out.copy_bytes = 0;
  for (const auto& [k, st] : streams_) {
    out.kernels.add_all(st.since_idle);
    out.copies += st.copies_since_idle;
    out.copy_bytes += st.copy_bytes_since_idle;
  }
}

void StreamTable::idle(uint64_t key, StreamState& state) {
  forget_work(state);
  if (key == 0)  // the legacy stream waits for all blocking streams
    for (auto& [k, st] : streams_)
      if (!st.non_blocking) forget_work(st);
}

void StreamTable::idle_all() {
  for (auto& [k, st] : streams_) forget_work(st);
}

void StreamTable::waited_on_event(uint64_t key) {
  StreamState& waiter = at(key);
  ++waiter.event_waits;
  for (auto& [k, st] : streams_)
    if (k != key && st.since_idle.total) waiter.since_idle.add_all(st.since_idle);
}

void StreamTable::sync_returned(const SyncRecord& s, uint32_t tid) {
  auto is = [&](Api a, Api b) {
    return static_cast<Api>(s.api) == a || static_cast<Api>(s.api) == b || static_cast<Api>(s.driver_fn) == b;
  };
  if (s.result != 0) return;
  if (is(Api::cudaStreamSynchronize, Api::cuStreamSynchronize) || is(Api::cudaStreamQuery, Api::cuStreamQuery))
    idle(resolve_stream(s.stream_kind, s.handle, tid).key);
  else if (is(Api::cudaStreamWaitEvent, Api::cuStreamWaitEvent))
    waited_on_event(resolve_stream(s.stream_kind, s.handle, tid).key);
  else if (is(Api::cudaDeviceSynchronize, Api::cuCtxSynchronize))
    idle_all();
}

void StreamTable::memory_op_returned(const MemoryOpRecord& m) {
  auto api = static_cast<Api>(m.api);
  if (m.result == 0 &&
      (api == Api::cudaFree || api == Api::cuMemFree_v2 || api == Api::cudaFreeHost || api == Api::cuMemFreeHost))
    idle_all();
}

void StreamTable::clear_cache() {
  for (auto& e : cache_) e = {};
}

}  // namespace asyncwatch::events
