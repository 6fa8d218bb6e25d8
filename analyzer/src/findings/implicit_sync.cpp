// implicit-sync: memory management calls that may synchronize the device (cudaMalloc,
// cudaFree, cudaMallocHost, cudaFreeHost, cudaHostAlloc, cudaHostRegister,
// cudaHostUnregister, cudaMallocManaged and their driver forms), reported when one call site
// makes at least options.implicit_sync_min_count of them: an allocation in a loop.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool is_implicit_sync_api(Api api) {
  switch (api) {
    case Api::cudaMalloc:
    case Api::cudaFree:
    case Api::cudaMallocHost:
    case Api::cudaHostAlloc:
    case Api::cudaFreeHost:
    case Api::cudaHostRegister:
    case Api::cudaHostUnregister:
    case Api::cudaMallocManaged:
    case Api::cuMemAlloc_v2:
    case Api::cuMemFree_v2:
    case Api::cuMemAllocHost_v2:
    case Api::cuMemHostAlloc:
    case Api::cuMemFreeHost:
    case Api::cuMemHostRegister_v2:
    case Api::cuMemHostUnregister:
    case Api::cuMemAllocManaged: return true;
    default: return false;
  }
}

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const MemoryOpRecord& m = *e.memory_op;
  if (!is_implicit_sync_api(static_cast<Api>(m.api))) return false;
  Observation o = observation_of(FindingId::ImplicitSync, m);
  o.bytes = m.bytes;
  if (m.memory != 0) o.set_host_memory(static_cast<MemoryKind>(m.memory));
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  return fmt::format(
      "{} called {} here, {}: it may synchronize the device each time; allocate once outside the loop and "
      "reuse the memory, or use cudaMallocAsync/cudaFreeAsync with a memory pool",
      f.api, plural(f.count, "time", "times"), format_duration(f.blocked.total()) + " in total");
}

bool reported(const Finding& f, const Options& o) { return f.count >= o.implicit_sync_min_count; }

}  // namespace

const Rule implicit_sync = Rule(Trigger::MemoryOp, detect, message).reported_when(reported);

}  // namespace asyncwatch::rules
