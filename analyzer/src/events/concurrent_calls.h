// What other threads were doing while a call blocked: each thread's latest CUDA call (and each
// host function's run on the driver's thread), kept as the walk visits them in time order, so that
// a launch that blocked for no reason of its own can be laid beside the call of another thread that
// ran through its wait (a driver lock held by that call, docs/findings.md "blocking-launch"). Only
// calls that began before the blocked call are known when it is visited: the one that held a lock
// when it began is among them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

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
  // Threads followed: the first of the trace (TraceFile::threads()); a process with more is rare,
  // and its launches lose only this explanation.
  static constexpr size_t kMaxThreads = 256;

  // The trace's threads (TraceFile::threads(): index -> tid), before the first call: each slot's
  // tid is set once, not per call (the JSON report's records per second: docs/performance.md).
  void follow(size_t threads, const uint32_t* tids) {
    used_ = threads < kMaxThreads ? threads : kMaxThreads;
    for (size_t i = 0; i < used_; ++i) calls_[i].tid = tids[i];
  }
  // `thread`: the record's RecordView::thread (its slot here: no look-up by tid), one of follow()'s.
  // Inline: once per call record (a call, as GCC left it, cost the JSON report's records per second).
  __attribute__((always_inline)) void call(uint32_t thread, uint16_t api, uint32_t stack_id, uint64_t start,
                                           uint64_t end) {
    if (thread < used_) set(calls_[thread], api, false, stack_id, start, end);
  }
  void host_function_run(uint32_t thread, uint64_t start, uint64_t end) {
    if (thread < used_) set(calls_[thread], 0, true, 0, start, end);
  }

  // The call of another thread than `tid`, begun before `start`, that overlapped [start, end] the
  // longest, if it covered at least `min_share` of it (0..1); *overlap_ns its overlap. (Calls begun
  // at the same instant are not taken for each other's cause: four threads blocked together.)
  const ThreadCall* covering(uint32_t tid, uint64_t start, uint64_t end, double min_share, uint64_t* overlap_ns) const {
    const ThreadCall* best = nullptr;
    uint64_t most = 0;
    for (size_t i = 0; i < used_; ++i) {
      const ThreadCall& t = calls_[i];
      if (t.tid == tid || t.end_ns <= start || t.start_ns >= start) continue;  // (a slot never set: end_ns 0)
      const uint64_t o = (t.end_ns < end ? t.end_ns : end) - (t.start_ns > start ? t.start_ns : start);
      if (o > most) most = o, best = &t;
    }
    if (!best || end <= start || static_cast<double>(most) < min_share * static_cast<double>(end - start))
      return nullptr;
    *overlap_ns = most;
    return best;
  }

 private:
  __attribute__((always_inline)) static void set(ThreadCall& c, uint16_t api, bool host_function, uint32_t stack_id,
                                                 uint64_t start, uint64_t end) {
    c.api = api;
    c.host_function = host_function;
    c.stack_id = stack_id;
    c.start_ns = start;
    c.end_ns = end;
  }
  std::array<ThreadCall, kMaxThreads> calls_{};  // by thread (end_ns 0: no call yet)
  size_t used_ = 0;                              // the threads followed: slots [0, used_)
};

}  // namespace asyncwatch::events
