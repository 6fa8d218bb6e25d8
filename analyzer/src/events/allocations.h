// The allocations of one process that are alive, followed in time order, so that implicit-sync can
// tell churn from a pool: an allocation (or host registration) is made *again* when an earlier one
// of the same size, by the same call stack, has been freed (or unregistered) since. Ten buffers of
// one size allocated in a loop and all kept alive are a pool: nothing is made again. Bounded: beyond
// kMaxLive live allocations the rest are not followed (never counted as made again).
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

namespace asyncwatch::events {

// A call that gives memory back: a free or an unregistration (runtime or driver form).
inline bool is_release_api(trace::Api api) {
  switch (api) {
    case trace::Api::cudaFree:
    case trace::Api::cudaFreeHost:
    case trace::Api::cudaHostUnregister:
    case trace::Api::cuMemFree_v2:
    case trace::Api::cuMemFreeHost:
    case trace::Api::cuMemHostUnregister: return true;
    default: return false;
  }
}

class Allocations {
 public:
  static constexpr size_t kMaxLive = 1u << 20;

  // A memory-management call returned. True when it is an allocation made again: its stack had
  // freed an allocation of the same size since it was last made (each free counts for one).
  bool returned(const trace::MemoryOpRecord& m) {
    if (m.result != 0 || m.address == 0) return false;
    const bool release =
        is_release_api(static_cast<trace::Api>(m.api)) || is_release_api(static_cast<trace::Api>(m.driver_fn));
    if (release) {
      auto it = live_.find(m.address);
      if (it == live_.end()) return false;
      auto f = freed_.find(it->second);
      if (f != freed_.end())
        ++f->second;
      else if (freed_.size() < kMaxLive)
        freed_.emplace(it->second, 1);
      live_.erase(it);
      return false;
    }
    const std::pair<uint32_t, uint64_t> made{m.stack_id, m.bytes};
    bool again = false;
    if (m.stack_id) {
      auto f = freed_.find(made);
      if (f != freed_.end() && f->second) {
        again = true;
        if (--f->second == 0) freed_.erase(f);
      }
    }
    if (live_.size() < kMaxLive || live_.count(m.address)) live_[m.address] = made;
    return again;
  }

 private:
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> live_;  // address -> (stack id, bytes)
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> freed_;           // (stack id, bytes) -> freed, not made again
};

}  // namespace asyncwatch::events
