// Host functions (cudaLaunchHostFunc, stream callbacks) joined: the HostFuncEnqueue record of the
// calling thread and the HostFuncRun record of the driver's thread share a callback_id, and in
// time order either may come first. Whichever comes first waits here for the other (bounded by
// Limits::pending_callbacks). `Enqueue` is what the consumer keeps of the enqueue.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <vector>

namespace asyncwatch::events {

// callback_id -> V, for the few entries waiting at once: open addressing (linear probing, erased
// by backward shift) over 16-byte slots that index a pool of values, so that an insert and its
// erase a few records later allocate nothing (a node-based map's malloc and free were most of a
// host function's cost in the analysis).
template <class V>
class PendingById {
 public:
  size_t size() const { return size_; }
  V* find(uint64_t id) {
    if (!size_) return nullptr;
    for (size_t i = home(id);; i = (i + 1) & mask_) {
      if (!slots_[i].used) return nullptr;
      if (slots_[i].id == id) return &values_[slots_[i].value];
    }
  }
  // Inserts or replaces the value of `id`.
  void put(uint64_t id, const V& v) {
    if (V* old = find(id)) {
      *old = v;
      return;
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    uint32_t at;
    if (!free_.empty()) {
      at = free_.back();
      free_.pop_back();
      values_[at] = v;
    } else {
      at = static_cast<uint32_t>(values_.size());
      values_.push_back(v);
    }
    size_t i = home(id);
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = Slot{id, at, true};
    ++size_;
  }
  // Moves the value of `id` to `*out` and erases it; false when absent.
  bool take(uint64_t id, V* out) {
    if (!size_) return false;
    size_t i = home(id);
    for (;; i = (i + 1) & mask_) {
      if (!slots_[i].used) return false;
      if (slots_[i].id == id) break;
    }
    *out = values_[slots_[i].value];
    free_.push_back(slots_[i].value);
    --size_;
    // Backward shift: the entries after it that probed past slot i move back into the gap.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (!slots_[j].used) break;
      const size_t h = home(slots_[j].id);
      // j's entry may fill the gap at i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].used = false;
    return true;
  }

 private:
  struct Slot {
    uint64_t id = 0;
    uint32_t value = 0;  // index in values_
    bool used = false;
  };
  size_t home(uint64_t id) const { return static_cast<size_t>((id * 0x9e3779b97f4a7c15ull) >> shift_); }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? 16 : old.size() * 2;
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t i = home(s.id);
      while (slots_[i].used) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;  // a power of two, at most 3/4 used
  std::vector<V> values_;
  std::vector<uint32_t> free_;  // indices of values_ not in use
  size_t size_ = 0;
  size_t mask_ = 0;
  unsigned shift_ = 64;
};

template <class Enqueue>
class HostFunctionJoin {
 public:
  enum class Outcome { Joined, Waiting, OverLimit };

  explicit HostFunctionJoin(uint64_t limit) : limit_(limit) {}

  // The enqueue of `callback_id`: Joined (`*run` is its run, which came first), Waiting (kept
  // until its run comes) or OverLimit (too many waiting: not kept).
  Outcome enqueue(uint64_t callback_id, const Enqueue& e, trace::HostFuncRunRecord* run) {
    if (runs_.take(callback_id, run)) return Outcome::Joined;
    return keep(enqueues_, callback_id, e);
  }
  // A run: Joined (`*e` is its enqueue), Waiting or OverLimit, as above.
  Outcome run(const trace::HostFuncRunRecord& r, Enqueue* e) {
    if (enqueues_.take(r.callback_id, e)) return Outcome::Joined;
    return keep(runs_, r.callback_id, r);
  }

 private:
  template <class Map, class V>
  Outcome keep(Map& m, uint64_t id, const V& v) {
    if (m.size() >= limit_ && !m.find(id)) return Outcome::OverLimit;
    m.put(id, v);
    return Outcome::Waiting;
  }

  uint64_t limit_;
  PendingById<Enqueue> enqueues_;
  PendingById<trace::HostFuncRunRecord> runs_;
};

}  // namespace asyncwatch::events
