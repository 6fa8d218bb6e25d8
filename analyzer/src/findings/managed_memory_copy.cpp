// managed-memory-copy: an asynchronous copy with managed (cudaMallocManaged) memory on one
// side that blocked the host.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool check_managed_memory_copy(RuleContext& ctx, const CopyRecord& c) {
  const auto managed = static_cast<uint8_t>(MemoryKind::Managed);
  if (c.src_memory != managed && c.dst_memory != managed) return false;
  uint64_t blocked = c.end_ns - c.start_ns;
  if (blocked < ctx.options().min_blocked_ns) return true;
  Direction d = copy_direction(c);
  Observation o;
  o.id = FindingId::ManagedMemoryCopy;
  fill_from_copy(o, c);
  o.direction = d;
  o.has_direction = d != Direction::Unknown;
  o.host_memory = MemoryKind::Managed;
  o.has_host_memory = true;
  ctx.observe(o);
  return true;
}

std::string managed_memory_copy_message(const Finding& f) {
  return fmt::format(
      "{} blocked {}: the copy involves managed memory and ran synchronously; prefetch with cudaMemPrefetchAsync, "
      "or copy between device memory and pinned host memory instead",
      api_with_args(f), format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : ""));
}

}  // namespace asyncwatch::rules
