// What the analysis derives from a copy record: the rules and the stream table ask it here.
#pragma once

#include <asyncwatch/trace_format.h>

namespace asyncwatch {

// A copy's direction (derived from the memory kinds when the record says Unknown). Inline: the
// analysis asks it of every copy.
inline trace::Direction copy_direction(const trace::CopyRecord& c) {
  auto d = static_cast<trace::Direction>(c.direction);
  if (d != trace::Direction::Unknown) return d;
  // The format's one definition (trace_format.h), except that a managed side leaves the direction
  // unknown here: such copies are the managed-memory-copy rule's, which reads the kinds itself.
  auto src = static_cast<trace::MemoryKind>(c.src_memory), dst = static_cast<trace::MemoryKind>(c.dst_memory);
  if (src == trace::MemoryKind::Managed || dst == trace::MemoryKind::Managed) return trace::Direction::Unknown;
  return trace::infer_direction(src, dst);
}

}  // namespace asyncwatch
