// Host functions (cudaLaunchHostFunc, stream callbacks) joined: the HostFuncEnqueue record of the
// calling thread and the HostFuncRun record of the driver's thread share a callback_id, and in
// time order either may come first. Whichever comes first waits here for the other (bounded by
// Limits::pending_callbacks). `Enqueue` is what the consumer keeps of the enqueue.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <unordered_map>

namespace asyncwatch::events {

template <class Enqueue>
class HostFunctionJoin {
 public:
  enum class Outcome { Joined, Waiting, OverLimit };

  explicit HostFunctionJoin(uint64_t limit) : limit_(limit) {}

  // The enqueue of `callback_id`: Joined (`*run` is its run, which came first), Waiting (kept
  // until its run comes) or OverLimit (too many waiting: not kept).
  Outcome enqueue(uint64_t callback_id, const Enqueue& e, trace::HostFuncRunRecord* run) {
    auto it = runs_.find(callback_id);
    if (it != runs_.end()) {
      *run = it->second;
      runs_.erase(it);
      return Outcome::Joined;
    }
    return keep(enqueues_, callback_id, e);
  }
  // A run: Joined (`*e` is its enqueue), Waiting or OverLimit, as above.
  Outcome run(const trace::HostFuncRunRecord& r, Enqueue* e) {
    auto it = enqueues_.find(r.callback_id);
    if (it != enqueues_.end()) {
      *e = it->second;
      enqueues_.erase(it);
      return Outcome::Joined;
    }
    return keep(runs_, r.callback_id, r);
  }

 private:
  template <class Map, class V>
  Outcome keep(Map& m, uint64_t id, const V& v) {
    if (m.size() >= limit_ && !m.count(id)) return Outcome::OverLimit;
    m[id] = v;
    return Outcome::Waiting;
  }

  uint64_t limit_;
  std::unordered_map<uint64_t, Enqueue> enqueues_;
  std::unordered_map<uint64_t, trace::HostFuncRunRecord> runs_;
};

}  // namespace asyncwatch::events
