// implicit-sync: memory management calls that may synchronize the device (cudaMalloc,
// cudaFree, cudaMallocHost, cudaFreeHost, cudaHostAlloc, cudaHostRegister,
// cudaHostUnregister, cudaMallocManaged and their driver forms), reported when one known call
// site in the user's code repeats such a call at least options.implicit_sync_min_count times:
// churn, the same buffer freed and allocated again (an allocation of a size that an earlier
// allocation of the same stack had, freed since: events/allocations.h), a free of an address the
// site freed before. Calls without a call site are not reported (all calls of an API would look
// like one site), nor sites in library code (a framework's caching allocator), nor a pool (ten
// buffers of one size allocated in a loop and kept alive, or a pool growing from one line: no
// buffer is freed and made again).
#include "events/allocations.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "findings/rules.h"

#include <fmt/compile.h>
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
  ObservationRare rare;
  o.rare = &rare;
  // Addresses may be 0 (cudaFree(0)): +1 keeps them apart from "no key".
  if (events::is_release_api(static_cast<Api>(m.api)))
    rare.repeat_key = m.address + 1;
  else
    rare.repeated = e.made_again;
  if (m.memory != 0) o.host_memory = static_cast<MemoryKind>(m.memory);
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  const bool frees = f.api.find("Free") != std::string::npos || f.api.find("Unregister") != std::string::npos;
  return fmt::format(
      FMT_COMPILE("{} called {} here ({} {}), {}: it may synchronize the device each time; "
                  "allocate once outside the loop and reuse the memory, or use cudaMallocAsync/cudaFreeAsync with a "
                  "memory pool"),
      f.api, plural(f.count, "time", "times"), f.repeated_calls,
      frees ? "repeating an earlier call's address" : "allocating again a buffer of a size freed since",
      format_duration(f.blocked.total()) + " in total");
}

bool reported(const Finding& f, const Options& o) {
  return f.call_site_known && f.call_site_is_user_code && f.repeated_calls + 1 >= o.implicit_sync_min_count;
}

void json_fields(JsonWriter& out, const Finding& f) { out.field("repeated_calls", f.repeated_calls); }

}  // namespace

const Rule implicit_sync = Rule(Trigger::MemoryOp, detect, message).reported_when(reported).json(json_fields);

}  // namespace asyncwatch::rules
