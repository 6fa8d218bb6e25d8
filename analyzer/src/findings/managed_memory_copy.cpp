// managed-memory-copy: an asynchronous copy with managed (cudaMallocManaged) memory on one
// side that blocked the host.
#include "report/format.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const CopyRecord& c = *e.copy;
  const auto managed = static_cast<uint8_t>(MemoryKind::Managed);
  if (c.src_memory != managed && c.dst_memory != managed) return false;
  uint64_t blocked = c.end_ns - c.start_ns;
  if (blocked < ctx.options().min_blocked_ns) return true;
  Observation o = observation_of_copy(FindingId::ManagedMemoryCopy, c);
  o.set_direction(e.copy_facts->direction);
  o.host_memory = MemoryKind::Managed;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  return fmt::format(
      FMT_COMPILE(
          "{} blocked {}: the copy involves managed memory and ran synchronously; prefetch with cudaMemPrefetchAsync, "
          "or copy between device memory and pinned host memory instead"),
      copy_call_words(f), total_time_words(f));
}

}  // namespace

// After host-to-host-async-copy, before pageable-async-copy.
const Rule managed_memory_copy =
    Rule(Trigger::Copy, detect, message).after(1).blocking().claims_copies(copy_memory(MemoryKind::Managed));

}  // namespace asyncwatch::rules
