// blocking-memset: a memset that blocked the host. cudaMemset* return before completion
// except for pinned host or managed targets; the *Async forms are documented asynchronous.
// A synchronous-API memset (cudaMemset, cuMemsetD8, ...) of device or unknown memory that blocked
// is not reported: the rules allow it to return early but do not promise it, the caller chose a
// synchronous API, and nothing in the trace explains the wait (docs/findings.md).
#include "report/format.h"
#include "symbols/names.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const CopyRecord& c = *e.copy;
  uint64_t blocked = c.end_ns - c.start_ns;
  if (blocked < ctx.options().min_blocked_ns) return false;  // (threshold_first: the analysis skips these)
  auto target = static_cast<MemoryKind>(c.dst_memory);
  const bool host_target =
      target == MemoryKind::Managed || target == MemoryKind::Pinned || target == MemoryKind::Pageable;
  if ((c.flags & kFlagSynchronousApi) && !host_target) return true;  // its kind; nothing to report
  Observation o = observation_of_copy(FindingId::BlockingMemset, c);
  o.cause = target == MemoryKind::Managed                                      ? Cause::ManagedMemory
            : (target == MemoryKind::Pinned || target == MemoryKind::Pageable) ? Cause::PinnedHostMemory
                                                                               : Cause::Unknown;
  if (target != MemoryKind::Unknown) o.host_memory = target;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  std::string target = total_bytes_part(f);
  if (f.has_host_memory)
    target += fmt::format(FMT_COMPILE(" of {} memory"),
                          f.host_memory == MemoryKind::Pinned ? "pinned host" : memory_kind_name(f.host_memory));
  std::string what = api_with_args(f, {calls_part(f), target});
  std::string blocked = total_time_words(f);
  switch (f.cause) {
    case Cause::ManagedMemory:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: a memset of managed memory is synchronous; set it on the device in a "
                      "kernel or with cudaMemsetAsync on device memory, and prefetch managed memory"),
          what, blocked);
    case Cause::PinnedHostMemory:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: a memset of host memory is synchronous; use memset on the host, or set "
                      "device memory with cudaMemsetAsync"),
          what, blocked);
    default:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: the trace does not show why (the target is {} memory); check what runs on "
                      "its stream before it"),
          what, blocked, f.has_host_memory ? memory_kind_name(f.host_memory) : "unknown");
  }
}

}  // namespace

const Rule blocking_memset = Rule(Trigger::Memset, detect, message).blocking().threshold_first();

}  // namespace asyncwatch::rules
