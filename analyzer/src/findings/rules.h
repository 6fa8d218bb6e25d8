// What a rule sees while the analyzer streams a process's records in time order, and the
// detection entry points of the rule modules.
#pragma once

#include "finding.h"

#include <asyncwatch/trace_format.h>

#include <cstdint>

namespace asyncwatch {

// Kernels launched on a stream since it was last known idle, by kernel name id: a small
// open-addressing table (O(1) per launch). Bounded: beyond kMaxKinds distinct kernels the
// rest are only counted in `others`.
struct KernelTally {
  static constexpr size_t kSlots = 32;
  static constexpr size_t kMaxKinds = 16;
  struct Slot {
    uint32_t id = 0;
    bool used = false;
    uint64_t count = 0;
  };
  Slot slots[kSlots];
  size_t kinds = 0;
  uint64_t others = 0;
  uint64_t total = 0;
  void add(uint32_t kernel_name_id) {
    ++total;
    size_t i = (kernel_name_id * 2654435761u) >> 27;  // 5 bits: 0..31
    for (size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
      Slot& s = slots[i];
      if (s.used && s.id == kernel_name_id) {
        ++s.count;
        return;
      }
      if (!s.used) {
        if (kinds >= kMaxKinds) break;
        s.used = true;
        s.id = kernel_name_id;
        s.count = 1;
        ++kinds;
        return;
      }
    }
    ++others;
  }
  void clear() {
    if (total == 0) return;
    for (auto& s : slots) s = Slot{};
    kinds = 0;
    others = 0;
    total = 0;
  }
  template <class F>
  void each(F&& f) const {
    for (const auto& s : slots)
      if (s.used) f(s.id, s.count);
  }
};

struct StreamState {
  bool non_blocking = false;          // created with cudaStreamNonBlocking
  uint64_t launches_since_sync = 0;   // launches enqueued since the stream was last known idle
  KernelTally since_idle;
};

// One flagged call.
struct Observation {
  FindingId id = FindingId::Count;
  Cause cause = Cause::None;
  uint16_t api = 0;
  uint16_t driver_fn = 0;
  trace::Direction direction = trace::Direction::Unknown;
  bool has_direction = false;
  trace::MemoryKind host_memory = trace::MemoryKind::Unknown;
  bool has_host_memory = false;
  uint32_t kernel_name_id = 0;
  uint32_t stack_id = 0;
  uint64_t blocked_ns = 0;
  uint64_t bytes = 0;
  bool evidence_checked = false;
  bool completed_at_return = false;
  bool drained_before_return = false;
  const KernelTally* waited_for = nullptr;
  uint64_t outstanding_launches = 0;
};

class RuleContext {
 public:
  virtual ~RuleContext() = default;
  virtual const Options& options() const = 0;
  virtual bool launch_blocking_env() const = 0;  // CUDA_LAUNCH_BLOCKING=1 in the process
  virtual void observe(const Observation& o) = 0;
};

// The host side of a copy, and its direction (derived from the memory kinds when the
// record says Unknown).
trace::Direction copy_direction(const trace::CopyRecord& c);

// The fields every copy or memset observation takes from its record: APIs, call site, blocked
// time, bytes and the completion evidence.
void fill_from_copy(Observation& o, const trace::CopyRecord& c);
trace::MemoryKind host_side(const trace::CopyRecord& c, trace::Direction d);

namespace rules {
// Copies (called for calls of asynchronous copy APIs that were not captured); the first
// rule that flags the call wins, in this order.
bool check_host_to_host_async_copy(RuleContext& ctx, const trace::CopyRecord& c);
bool check_managed_memory_copy(RuleContext& ctx, const trace::CopyRecord& c);
bool check_pageable_async_copy(RuleContext& ctx, const trace::CopyRecord& c, const StreamState& stream);
// Memsets that were not captured.
bool check_blocking_memset(RuleContext& ctx, const trace::CopyRecord& c);
// Launches that were not captured; `stream` is its state before this launch.
bool check_blocking_launch(RuleContext& ctx, const trace::LaunchRecord& l, const StreamState& stream);
// Enqueue of a host function / callback.
bool check_deprecated_stream_callback(RuleContext& ctx, const trace::HostFuncEnqueueRecord& e);
// A host function ran: joined with its enqueue by callback_id.
bool check_long_host_callback(RuleContext& ctx, const trace::HostFuncEnqueueRecord& e,
                              const trace::HostFuncRunRecord& run);
// Every explicit wait (stream/event/device synchronize); the group is reported when its
// total reaches min_blocked.
bool check_explicit_sync(RuleContext& ctx, const trace::SyncRecord& s);
// Every implicitly synchronizing memory call; reported when one call site repeats.
bool check_implicit_sync(RuleContext& ctx, const trace::MemoryOpRecord& m);
bool is_implicit_sync_api(trace::Api api);
bool is_explicit_sync_api(trace::Api api);
}  // namespace rules

}  // namespace asyncwatch
