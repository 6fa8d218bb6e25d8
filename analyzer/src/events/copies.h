// What the analysis derives from a copy record (Copy, Memset, BatchCopy): its direction, host side
// and class, computed once per event (CopyFacts, events/event.h) and read by the stream table and
// the rules from there.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>

namespace asyncwatch {

// A copy's direction (derived from the memory kinds when the record says Unknown).
inline trace::Direction copy_direction(const trace::CopyRecord& c) {
  auto d = static_cast<trace::Direction>(c.direction);
  if (d != trace::Direction::Unknown) return d;
  // The format's one definition (trace_format.h), except that a managed side leaves the direction
  // unknown here: such copies are the managed-memory-copy rule's, which reads the kinds itself.
  auto src = static_cast<trace::MemoryKind>(c.src_memory), dst = static_cast<trace::MemoryKind>(c.dst_memory);
  if (src == trace::MemoryKind::Managed || dst == trace::MemoryKind::Managed) return trace::Direction::Unknown;
  return trace::infer_direction(src, dst);
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

inline CopyFacts copy_facts(const trace::CopyRecord& c) {
  CopyFacts f;
  f.direction = copy_direction(c);
  const auto src = static_cast<trace::MemoryKind>(c.src_memory), dst = static_cast<trace::MemoryKind>(c.dst_memory);
  f.host = trace::host_side(f.direction, src, dst);
  // Kinds beyond the format's (an unchecked batch record) have no bit: no rule claims them.
  const auto bit = [](uint8_t k) { return k < trace::kMemoryKindCount ? 1u << k : 0u; };
  f.copy_class = bit(c.src_memory) | bit(c.dst_memory) | (f.direction == trace::Direction::HtoH ? kCopyHostToHost : 0u);
  return f;
}

}  // namespace asyncwatch
