// What the analysis derives from a copy record (Copy, Memset, BatchCopy): its direction, host side
// and class, computed once per event (CopyFacts, events/event.h) and read by the stream table and
// the rules from there.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>

namespace asyncwatch {

// A copy's direction (derived from the memory kinds when the record says Unknown).
constexpr trace::Direction copy_direction(uint8_t direction, uint8_t src_memory, uint8_t dst_memory) {
  auto d = static_cast<trace::Direction>(direction);
  if (d != trace::Direction::Unknown) return d;
  // The format's one definition (trace_format.h), except that a managed side leaves the direction
  // unknown here: such copies are the managed-memory-copy rule's, which reads the kinds itself.
  auto src = static_cast<trace::MemoryKind>(src_memory), dst = static_cast<trace::MemoryKind>(dst_memory);
  if (src == trace::MemoryKind::Managed || dst == trace::MemoryKind::Managed) return trace::Direction::Unknown;
  return trace::infer_direction(src, dst);
}
inline trace::Direction copy_direction(const trace::CopyRecord& c) {
  return copy_direction(c.direction, c.src_memory, c.dst_memory);
}

// Which copies a Copy (or Memset) rule can claim, as a mask of copy classes (Rule::copies): a
// copy's class has the bit of each memory kind on either side (copy_memory), and kCopyHostToHost
// when its direction is HtoH. The analysis calls a rule only for copies whose class meets its mask
// (most copies, between pinned and device memory, meet none).
constexpr uint32_t copy_memory(trace::MemoryKind k) { return 1u << static_cast<uint8_t>(k); }
inline constexpr uint32_t kCopyHostToHost = 1u << trace::kMemoryKindCount;
inline constexpr uint32_t kAnyCopy = UINT32_MAX;

// What the analysis takes from a copy record.
struct CopyFacts {
  trace::Direction direction = trace::Direction::Unknown;  // copy_direction
  trace::MemoryKind host = trace::MemoryKind::Unknown;     // its host side (trace::host_side)
  uint32_t copy_class = 0;                                 // copy_memory bits of both sides, kCopyHostToHost
};

namespace detail {
constexpr CopyFacts compute_copy_facts(uint8_t direction, uint8_t src_memory, uint8_t dst_memory) {
  CopyFacts f;
  f.direction = copy_direction(direction, src_memory, dst_memory);
  const auto src = static_cast<trace::MemoryKind>(src_memory), dst = static_cast<trace::MemoryKind>(dst_memory);
  f.host = trace::host_side(f.direction, src, dst);
  // Kinds beyond the format's (an unchecked batch record) have no bit: no rule claims them.
  const auto bit = [](uint8_t k) { return k < trace::kMemoryKindCount ? 1u << k : 0u; };
  f.copy_class = bit(src_memory) | bit(dst_memory) | (f.direction == trace::Direction::HtoH ? kCopyHostToHost : 0u);
  return f;
}
// The facts of every copy whose direction and kinds are the format's, by (direction, source,
// destination): one look-up per copy event instead of ~30 instructions of derivation (the JSON
// report's records per second, docs/performance.md).
inline constexpr size_t kKinds = trace::kMemoryKindCount;
struct CopyFactsTable {
  CopyFacts at[trace::kDirectionCount * kKinds * kKinds];
};
inline constexpr CopyFactsTable kCopyFacts = [] {
  CopyFactsTable t{};
  for (uint8_t d = 0; d < trace::kDirectionCount; ++d)
    for (uint8_t s = 0; s < kKinds; ++s)
      for (uint8_t k = 0; k < kKinds; ++k) t.at[(d * kKinds + s) * kKinds + k] = compute_copy_facts(d, s, k);
  return t;
}();
}  // namespace detail

// Inline: once per copy event of every walk (a call, as GCC left it, cost the JSON report's records
// per second; inlined, a walk that reads no fact, the HTML picture's, drops it: docs/performance.md).
__attribute__((always_inline)) inline CopyFacts copy_facts(const trace::CopyRecord& c) {
  if (__builtin_expect(
          c.direction < trace::kDirectionCount && c.src_memory < detail::kKinds && c.dst_memory < detail::kKinds, 1))
    return detail::kCopyFacts.at[(c.direction * detail::kKinds + c.src_memory) * detail::kKinds + c.dst_memory];
  return detail::compute_copy_facts(c.direction, c.src_memory, c.dst_memory);
}

}  // namespace asyncwatch
