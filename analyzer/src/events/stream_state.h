// What the analysis knows of one stream's work (StreamState) and of all streams' (PendingWork):
// kept by events/streams.h, read by the finding rules (findings/rules.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace asyncwatch {

// Kernels launched on a stream since it was last known idle, by kernel name id: a small
// open-addressing table, O(1) per launch without allocation (every launch adds its kernel: the JSON
// report's records per second). Bounded: beyond kMaxKinds distinct kernels the rest are only
// counted in `others`.
struct KernelTally {
  static constexpr size_t kSlots = 32;
  static constexpr size_t kMaxKinds = 16;
  struct Slot {
    uint32_t id = 0;
    uint64_t count = 0;
  };
  Slot slots[kSlots];
  uint32_t used = 0;  // bit i: slots[i] holds a kernel (each() and clear() visit only these)
  size_t kinds = 0;
  uint64_t others = 0;
  uint64_t total = 0;
  __attribute__((always_inline)) void add(uint32_t kernel_name_id, uint64_t n = 1) {
    total += n;
    size_t i = (kernel_name_id * 2654435761u) >> 27;  // 5 bits: 0..31
    for (size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
      Slot& s = slots[i];
      const bool in_use = (used >> i) & 1;
      if (in_use && s.id == kernel_name_id) {
        s.count += n;
        return;
      }
      if (!in_use) {
        if (kinds >= kMaxKinds) break;
        used |= uint32_t{1} << i;
        s.id = kernel_name_id;
        s.count = n;
        ++kinds;
        return;
      }
    }
    others += n;
  }
  // Adds another tally's kernels (its `others` stay others).
  void add_all(const KernelTally& o) {
    o.each([&](uint32_t id, uint64_t n) { add(id, n); });
    others += o.others;
    total += o.others;
  }
  void clear() {
    if (total == 0) return;
    used = 0;
    kinds = 0;
    others = 0;
    total = 0;
  }
  template <class F>
  void each(F&& f) const {  // in slot order
    for (uint32_t m = used; m; m &= m - 1) {
      const Slot& s = slots[__builtin_ctz(m)];
      f(s.id, s.count);
    }
  }
};

struct StreamState {
  bool non_blocking = false;         // created with cudaStreamNonBlocking
  uint64_t launches_since_sync = 0;  // launches enqueued since the stream was last known idle
  // Kernels launched on it since it was last known idle, and, after a cudaStreamWaitEvent on it,
  // the kernels then not known complete on other streams (the trace does not record the event's
  // stream: they are what it may have waited for).
  KernelTally since_idle;
  uint64_t event_waits = 0;  // cudaStreamWaitEvent calls on it since it was last known idle
  // Asynchronous copies enqueued on it since it was last known idle that no evidence says had
  // completed when they returned (a pinned upload still running; not a pageable one, which the
  // driver staged before returning), and their bytes.
  uint64_t copies_since_idle = 0;
  uint64_t copy_bytes_since_idle = 0;
};

// The work enqueued on all of a process's streams and not known complete (StreamTable::pending):
// what a call that waits for the device (a lazy module load) waited for.
struct PendingWork {
  KernelTally kernels;
  uint64_t copies = 0;
  uint64_t copy_bytes = 0;
  bool empty() const { return kernels.total == 0 && copies == 0; }
};

}  // namespace asyncwatch
