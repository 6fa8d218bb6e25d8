// blocking-memset: a memset that blocked the host. cudaMemset* return before completion
// except for pinned host or managed targets; the *Async forms are documented asynchronous.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool check_blocking_memset(RuleContext& ctx, const CopyRecord& c) {
  uint64_t blocked = c.end_ns - c.start_ns;
  if (blocked < ctx.options().min_blocked_ns) return false;
  auto target = static_cast<MemoryKind>(c.dst_memory);
  Observation o;
  o.id = FindingId::BlockingMemset;
  o.cause = target == MemoryKind::Managed                                          ? Cause::ManagedMemory
            : (target == MemoryKind::Pinned || target == MemoryKind::Pageable) ? Cause::PinnedHostMemory
                                                                                   : Cause::Unknown;
  fill_from_copy(o, c);
  o.host_memory = target;
  o.has_host_memory = target != MemoryKind::Unknown;
  ctx.observe(o);
  return true;
}

std::string blocking_memset_message(const Finding& f) {
  std::string blocked = format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : "");
  switch (f.cause) {
    case Cause::ManagedMemory:
      return fmt::format("{} blocked {}: a memset of managed memory is synchronous; set it on the device in a "
                         "kernel or with cudaMemsetAsync on device memory, and prefetch managed memory",
                         api_with_args(f), blocked);
    case Cause::PinnedHostMemory:
      return fmt::format("{} blocked {}: a memset of host memory is synchronous; use memset on the host, or set "
                         "device memory with cudaMemsetAsync",
                         api_with_args(f), blocked);
    default:
      return fmt::format("{} blocked {}: the trace does not show why (the target is {} memory); check what runs on "
                         "its stream before it",
                         api_with_args(f), blocked,
                         f.has_host_memory ? memory_kind_name(f.host_memory) : "unknown");
  }
}

}  // namespace asyncwatch::rules
