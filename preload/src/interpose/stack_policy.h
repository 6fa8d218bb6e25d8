// Which calls get their call site (a stack) and when (docs/configuration.md, ASYNCWATCH_STACKS):
// before the call for the calls the policy gives one whatever they do, after it for those that
// earn one by blocking or by a doubtful memory side. Decided inline with the category a constant,
// so the common call (a launch that did not block, a pinned copy) takes none and makes no call.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "call_record.h"
#include "config.h"
#include "stacks/stack_capture.h"
#include "thread_state.h"

namespace asyncwatch::calls {

// Stacks taken BEFORE the call: for the calls that the policy gives a stack whatever they do, so
// that a call still in flight when the process is killed has its call site, and blocked times
// leave the capture out (start_ns is read after it).
// By category: host-function enqueues, memory management, managed-memory operations and graph
// construction (always a stack); every synchronization only under ASYNCWATCH_STACKS=all (a stack
// costs a polling loop of cudaStreamSynchronize ~2x: docs/performance.md). Copies and memsets
// decide from their sides, classified before the call (`copy_stack_before`). Launches: never
// (their per-call budget; a launch in flight keeps its caller's return address).
inline constexpr uint64_t kStackAlwaysBefore = category_bit(Category::HostFuncEnqueue) |
                                               category_bit(Category::MemoryOp) | category_bit(Category::ManagedOp) |
                                               category_bit(Category::GraphOp);
inline constexpr uint64_t kStackBeforeUnderAll = category_bit(Category::Sync);
inline __attribute__((always_inline)) bool stack_before(Category c) noexcept {
  // One bit test for the categories that never take it (a launch), whether `c` is a constant or not.
  const uint64_t bit = category_bit(c);
  if (AW_LIKELY(!(bit & (kStackAlwaysBefore | kStackBeforeUnderAll)))) return false;
  const StackPolicy p = config_fast().stacks;
  return (bit & kStackAlwaysBefore ? p != StackPolicy::None : p == StackPolicy::All) && !tl_locals.call.reentrant;
}
// A copy or memset whose sides are known before the call: a stack then when the default policy
// would give it one whatever the call's duration (a side that is not known to be pinned or device
// memory, every host-to-host copy), or under ASYNCWATCH_STACKS=all.
// A host side that may make a copy synchronous (and so become a finding): anything but pinned
// host memory, device memory or an array.
inline constexpr uint32_t kDoubtfulSides = 1u << static_cast<unsigned>(trace::MemoryKind::Pageable) |
                                           1u << static_cast<unsigned>(trace::MemoryKind::Unknown) |
                                           1u << static_cast<unsigned>(trace::MemoryKind::Managed);
inline bool doubtful_side(trace::MemoryKind m) noexcept { return (kDoubtfulSides >> static_cast<unsigned>(m)) & 1u; }
inline __attribute__((always_inline)) bool copy_stack_before(const Config& cfg, trace::Direction d,
                                                             trace::MemoryKind src, trace::MemoryKind dst,
                                                             bool memset) noexcept {
  // The pinned/device copy of the hot path is decided by one mask test.
  const uint32_t sides = (memset ? 0u : 1u << static_cast<unsigned>(src)) | 1u << static_cast<unsigned>(dst);
  const StackPolicy p = cfg.stacks;
  if (AW_LIKELY(!(sides & kDoubtfulSides) && d != trace::Direction::HtoH) && p != StackPolicy::All) return false;
  return p != StackPolicy::None && !tl_locals.call.reentrant;
}
// A synchronize (stream, event, device or context): the host waits for the GPU. Not a query, nor a
// stream's wait on an event.
inline bool is_wait_api(trace::Api a) noexcept {
  switch (a) {
    case trace::Api::cudaStreamSynchronize:
    case trace::Api::cudaEventSynchronize:
    case trace::Api::cudaDeviceSynchronize:
    case trace::Api::cuStreamSynchronize:
    case trace::Api::cuEventSynchronize:
    case trace::Api::cuCtxSynchronize: return true;
    default: return false;
  }
}
// Default policy (docs/configuration.md): copies and memsets get a stack when a side is not known
// to be pinned or device memory (pageable, unknown, managed; every host-to-host copy) or when the
// call blocked longer than the launch threshold; host-function enqueues always; launches and
// synchronizations when they blocked longer than the threshold; memory-management calls (allocations,
// frees, registrations: slow and synchronizing anyway, their call sites are what implicit-sync names),
// prefetches and attaches, and explicit graph construction (the origin of a graph's memcpy nodes) always.
inline __attribute__((always_inline)) bool wants_stack(const AnyRecord& r, Category c, uint64_t blocked_ns) noexcept {
  const Config& cfg = config_fast();
  if (AW_LIKELY(cfg.stacks == StackPolicy::Default)) {
    switch (c) {
      case Category::Copy:
      case Category::BatchCopy:
      case Category::Memset:
        if (blocked_ns >= cfg.launch_stack_threshold_ns) return true;
        if (r.Copy.direction == static_cast<uint8_t>(trace::Direction::HtoH)) return true;
        if (c == Category::Memset) return doubtful_side(static_cast<trace::MemoryKind>(r.Copy.dst_memory));
        return doubtful_side(static_cast<trace::MemoryKind>(r.Copy.src_memory)) ||
               doubtful_side(static_cast<trace::MemoryKind>(r.Copy.dst_memory));
      case Category::HostFuncEnqueue:
      case Category::MemoryOp:
      case Category::ManagedOp:
      case Category::GraphOp: return true;
      case Category::Launch:
      case Category::GraphLaunch: return blocked_ns >= cfg.launch_stack_threshold_ns;
      // A sync that waited: where it was made (a hidden sync inside a framework). A
      // synchronize made from outside the program's own code (a framework's `loss.item()`, a
      // library, ctypes) whatever it waited: a hidden sync is one by contract, and a loop's short
      // waits add up (docs/findings.md, hidden-sync). The program's own syncs (a polling loop of
      // them among them) keep the threshold.
      case Category::Sync:
        return blocked_ns >= cfg.launch_stack_threshold_ns || (is_wait_api(static_cast<trace::Api>(r.head.api)) &&
                                                               !stacks::called_from_program(tl_locals.call.caller.ra));
      default: return false;
    }
  }
  return cfg.stacks == StackPolicy::All;
}

// Stream creation, destruction and capture records never had a stack (before v2 they had no
// stack_id field); a reentrant call takes none.
inline bool takes_stacks(Category c) noexcept {
  return c != Category::StreamCreate && c != Category::StreamDestroy && c != Category::Capture &&
         AW_LIKELY(!tl_locals.call.reentrant);
}

// The call site of the thread's current call, into `h` (out of line: a stack is the rare case).
void capture_stack(trace::CallHead& h) noexcept;
// Applies the stack policy (capture the call site when wanted) to a finished record; nothing when
// its stack was taken before the call.
void apply_stack_policy(AnyRecord& r, Category c) noexcept;
// The call site of the thread's current call (the outermost wrapper's caller), captured now: its
// stack id, 0 when none could be taken.
uint32_t stack_now() noexcept;

}  // namespace asyncwatch::calls
