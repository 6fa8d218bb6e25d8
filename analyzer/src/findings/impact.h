// What fixing a finding would save end to end (docs/findings.md, "Impact"): for each flagged call,
// the host time the fix removes from its thread's path, less what the thread would still wait for
// at its next synchronizing call (the same stream work, the fixed call's own cost). Computed from
// the trace's own timeline while the analysis streams the records: each thread's flagged calls are
// kept until the call that settles their gain (the thread's next wait on their stream, or the end
// of the trace); a synchronization's gain is settled by the thread's next call that gives the GPU
// work. Pure arithmetic and bounded per-thread lists: nothing here reads a trace.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch::impact {

// What a finding's figures rest on: one bit per basis, as its calls may use several
// (basis_text says them).
enum Basis : uint16_t {
  kMeasuredRate = 1u << 0,       // the pinned transfer rate of this trace's own pinned copies (GPU times)
  kDeviceFigure = 1u << 1,       // the device's measured figure (docs/findings.md)
  kAssumedRate = 1u << 2,        // no figure for this device: an assumed PCIe rate
  kSimulated = 1u << 3,          // the simulator's model figures
  kBounded = 1u << 4,            // no GPU times: how much of the wait was the transfer is estimated
  kStreamWorkStays = 1u << 5,    // the fix makes the call asynchronous; the stream work it waited for stays
  kMoved = 1u << 6,              // the fix moves the time (module loading, context creation), not removes it
  kGpuBound = 1u << 7,           // the launch queue was full: the GPU, not the host, set the pace
  kSameWork = 1u << 8,           // the fix changes the API, not what runs
  kNotModelled = 1u << 9,        // no model for this finding's fix
  kQueueStall = 1u << 10,        // a synchronization: the time the emptied GPU queue stood idle after it
  kMeasuredCopy = 1u << 11,      // the pageable transfer's own time measured (GPU times)
  kMeasuredPageable = 1u << 12,  // the pageable device-to-host rate of this trace's copies on an idle stream
};
std::string basis_text(uint16_t basis);

// The transfer figures of one process: the pinned rate of a fixed copy by direction (0 host to
// device, 1 device to host), the host cost of a pinned asynchronous copy, the rate of a pageable
// device-to-host copy once its stream reached it.
struct Figures {
  double pinned_bytes_per_ns[2] = {0, 0};
  uint16_t pinned_basis[2] = {0, 0};
  uint64_t pinned_call_ns[2] = {0, 0};
  uint16_t call_basis[2] = {0, 0};
  double pageable_d2h_bytes_per_ns = 0;
  uint16_t pageable_basis = 0;
};
// The figures of the device the trace names (the H100's or H200's measured ones, the simulator's
// model, else assumed rates for a PCIe 4.0 x16 link, said so).
Figures device_figures(const std::string& device_name, bool simulated);
uint64_t transfer_ns(uint64_t bytes, double bytes_per_ns);
// A rate measured in the trace: bytes over the time they took.
struct Rate {
  uint64_t bytes = 0, ns = 0;
  double rate() const { return ns ? static_cast<double>(bytes) / static_cast<double>(ns) : 0; }
};

// One blocking call as traced, and as the fix would make it.
struct BlockingCall {
  uint64_t start = 0, end = 0;  // the call
  uint64_t fixed_cost = 0;      // what the fixed call costs the host
  uint64_t fixed_done = 0;      // from `start`: when the stream would have done the call's work in the fixed program
  // The part of fixed_done after the earlier stream work the call waited for was done (its own
  // transfer, fixed); the rest, fixed_done - fixed_work, is that wait as traced.
  uint64_t fixed_work = 0;
};
// The thread's next call that waits for that stream (a synchronize, a waiting copy), or the end of
// the trace (start == end == its end).
struct NextWait {
  uint64_t start = 0, end = 0;  // end > start: it waited
  uint64_t last_enqueue = 0;    // when the thread last put work on the stream after the call (0: never)
};
// How much earlier the thread would have got past `next` with the call fixed: at most the call's
// blocked time, at least 0. `fixed_wait`: how long `next` would have waited in the fixed program.
uint64_t blocking_call_gain(const BlockingCall& call, const NextWait& next, uint64_t* fixed_wait = nullptr);
// The same for several calls of the thread settled by one wait, in call order, `fixed` saying
// which of them the fix changes (one finding's calls; the others stay as traced): the fixed calls
// return early, and each stream then does their work and the work between them back to back, so
// a chain of fixed calls on one stream gains at most what the stream's work leaves.
// `last_enqueue`: per call, the thread's last enqueue on the call's stream before the wait.
struct ChainCall {
  BlockingCall call;
  uint64_t stream = 0;
  uint64_t last_enqueue = 0;
  bool fixed = false;
};
uint64_t chain_gain(const ChainCall* calls, size_t n, const NextWait& next, uint64_t* fixed_wait = nullptr);
// A synchronization that waited `waited` and after which the thread gave the GPU nothing for
// `gap`: the time the GPU queue stood empty that work queued ahead would have covered.
uint64_t sync_gain(uint64_t waited, uint64_t gap);

// Where one group's gains accumulate.
struct Sink {
  uint64_t impact_ns = 0;
  uint16_t basis = 0;
  // A synchronization: the group of the flagged call it waited for, whose fix shortens its wait
  // (the first seen), else null.
  const Sink* cause = nullptr;
  uint32_t owner = 0;  // the caller's name for the group (the analysis: its serial)
};

// Follows each thread's flagged calls to the calls that settle their gain. Bounded: a thread keeps
// at most kMaxPending calls and synchronizations (an older one is settled early, as at a wait
// that did not wait).
class Tracker {
 public:
  static constexpr uint64_t kAllStreams = UINT64_MAX;
  static constexpr uint64_t kNoStream = UINT64_MAX - 1;  // a wait that settles no call
  static constexpr size_t kMaxPending = 64;
  bool empty() const { return pending_ == 0; }
  // A flagged blocking call of `tid` on `stream`. `moved`: a pageable copy that waited for its
  // stream, the pinned transfer's time (gpu_span can then measure the part of the wait that was
  // the stream's earlier work); 0 for the others.
  void blocking(uint32_t tid, uint64_t stream, const BlockingCall& call, Sink* sink, uint16_t basis,
                uint64_t moved = 0);
  // A GPU span of `tid`'s (GPU times): when the operation of the call made between host_before and
  // host_after ran on the device. A waiting pageable copy's span says when its transfer began.
  void gpu_span(uint32_t tid, uint64_t host_before, uint64_t host_after, uint64_t device_start);
  // A call of `tid` that waited for `stream` (kAllStreams: every stream) from start to end;
  // `sync_sink`: its group when a synchronization rule flagged it.
  void wait(uint32_t tid, uint64_t stream, uint64_t start, uint64_t end, Sink* sync_sink = nullptr);
  // `tid` put work on `stream` at `start` (a launch, copy, memset, host function).
  __attribute__((always_inline)) void enqueue(uint32_t tid, uint64_t stream, uint64_t start) {
    if (__builtin_expect(pending_by_slot_[tid % kSlots] != 0, 0)) enqueue_slow(tid, stream, start);
  }
  // Settles everything left as of the end of the trace.
  void finish(uint64_t trace_end);

 private:
  struct Call {
    BlockingCall call;
    uint64_t stream;
    uint64_t last_enqueue;
    Sink* sink;
    uint64_t moved;
    uint16_t basis;
  };
  struct Sync {
    uint64_t end;
    uint64_t waited;
    Sink* sink;
  };
  struct Thread {
    std::vector<Call> calls;
    std::vector<Sync> syncs;
  };
  void enqueue_slow(uint32_t tid, uint64_t stream, uint64_t start);
  Thread* find(uint32_t tid);
  Thread& at(uint32_t tid);  // created when new
  // Adds each group's gain for `n` calls settled by `next`: the calls of one group fixed together,
  // the others as traced (chain_gain). Returns the part of their blocked time the fixes do not remove.
  uint64_t settle(const Call* calls, size_t n, const NextWait& next, Sink* waiter);
  // Pending calls and synchronizations are counted in all and per slot of tids (tid % kSlots): a
  // launch or copy of a thread whose slot has none returns at once (enqueue), and a direct-mapped
  // cache by slot finds the thread (the map is node-based: the pointers stay valid).
  static constexpr size_t kSlots = 64;
  void count(uint32_t tid, int64_t n) {
    pending_ = static_cast<size_t>(static_cast<int64_t>(pending_) + n);
    pending_by_slot_[tid % kSlots] = static_cast<uint32_t>(static_cast<int64_t>(pending_by_slot_[tid % kSlots]) + n);
  }
  std::unordered_map<uint32_t, Thread> threads_;
  // settle's and wait's working lists, kept between calls: as arrays of kMaxPending on the stack
  // each call zeroed them whole (BlockingCall's initializers): about 2 instructions a record of
  // the benchmark's trace (callgrind, Tracker::wait with what it calls: 6.2 -> 4.2 M of 1 M records).
  std::vector<ChainCall> chain_scratch_;
  std::vector<Call> settled_scratch_;
  struct CacheEntry {
    uint32_t tid = 0;
    Thread* thread = nullptr;
  };
  CacheEntry cache_[kSlots];
  uint32_t pending_by_slot_[kSlots] = {};
  size_t pending_ = 0;
};

}  // namespace asyncwatch::impact
