// What other threads were doing while a call blocked: each thread's latest CUDA call (and each
// host function's run on the driver's thread), kept as the walk visits them in time order, so that
// a launch that blocked for no reason of its own can be laid beside the call of another thread that
// ran through its wait (a driver lock held by that call, docs/findings.md "blocking-launch"). Only
// calls that began before the blocked call are known when it is visited: the one that held a lock
// when it began is among them.
#pragma once

#include <cstdint>
#include <vector>

namespace asyncwatch::events {

struct ThreadCall {
  uint32_t tid = 0;
  uint16_t api = 0;  // trace::Api; host function runs: 0
  bool host_function = false;
  uint32_t stack_id = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

class ConcurrentCalls {
 public:
  // Threads followed (the first seen); a process with more is rare, and its launches lose only this
  // explanation.
  static constexpr size_t kMaxThreads = 256;

  void call(uint32_t tid, uint16_t api, uint32_t stack_id, uint64_t start, uint64_t end) {
    if (ThreadCall* t = slot(tid)) *t = ThreadCall{tid, api, false, stack_id, start, end};
  }
  void host_function_run(uint32_t tid, uint64_t start, uint64_t end) {
    if (ThreadCall* t = slot(tid)) *t = ThreadCall{tid, 0, true, 0, start, end};
  }

  // The call of another thread than `tid`, begun before `start`, that overlapped [start, end] the
  // longest, if it covered at least `min_share` of it (0..1); *overlap_ns its overlap. (Calls begun
  // at the same instant are not taken for each other's cause: four threads blocked together.)
  const ThreadCall* covering(uint32_t tid, uint64_t start, uint64_t end, double min_share, uint64_t* overlap_ns) const {
    const ThreadCall* best = nullptr;
    uint64_t most = 0;
    for (const ThreadCall& t : calls_) {
      if (t.tid == tid || t.end_ns <= start || t.start_ns >= start) continue;
      const uint64_t o = (t.end_ns < end ? t.end_ns : end) - (t.start_ns > start ? t.start_ns : start);
      if (o > most) most = o, best = &t;
    }
    if (!best || end <= start || static_cast<double>(most) < min_share * static_cast<double>(end - start))
      return nullptr;
    *overlap_ns = most;
    return best;
  }

 private:
  // Every call record passes here: the thread of the last one first (a thread's calls come in runs).
  ThreadCall* slot(uint32_t tid) {
    if (last_ < calls_.size() && calls_[last_].tid == tid) return &calls_[last_];
    for (size_t i = 0; i < calls_.size(); ++i)
      if (calls_[i].tid == tid) return &calls_[last_ = i];
    if (calls_.size() >= kMaxThreads) return nullptr;
    calls_.push_back(ThreadCall{tid});
    last_ = calls_.size() - 1;
    return &calls_.back();
  }
  std::vector<ThreadCall> calls_;
  size_t last_ = 0;
};

}  // namespace asyncwatch::events
