// explicit-sync: stream, event and device synchronize calls, summarized per call site with
// the time they waited. A group is reported when its total reaches options.min_blocked_ns.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool is_explicit_sync_api(Api api) {
  switch (api) {
    case Api::cudaStreamSynchronize:
    case Api::cudaEventSynchronize:
    case Api::cudaDeviceSynchronize:
    case Api::cuStreamSynchronize:
    case Api::cuEventSynchronize:
    case Api::cuCtxSynchronize: return true;
    default: return false;
  }
}

bool check_explicit_sync(RuleContext& ctx, const SyncRecord& s) {
  if (!is_explicit_sync_api(static_cast<Api>(s.api)) && !is_explicit_sync_api(static_cast<Api>(s.driver_fn)))
    return false;
  Observation o;
  o.id = FindingId::ExplicitSync;
  o.api = s.api;
  o.driver_fn = s.driver_fn;
  o.stack_id = s.stack_id;
  o.blocked_ns = s.end_ns - s.start_ns;
  ctx.observe(o);
  return true;
}

std::string explicit_sync_message(const Finding& f) {
  return fmt::format("{} waited {} ({}, max {}): explicit synchronization; check that the host needs the result "
                     "here, or wait on an event for just the work it needs",
                     f.api, format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : ""),
                     plural(f.count, "call", "calls"), format_duration(f.blocked.max()));
}

}  // namespace asyncwatch::rules
