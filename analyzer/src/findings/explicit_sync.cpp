// explicit-sync: stream, event and device synchronize calls, summarized per call site with
// the time they waited. A group is reported when its total reaches options.min_blocked_ns.
#include "report/format.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

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

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const SyncRecord& s = *e.sync;
  if (!is_explicit_sync_api(static_cast<Api>(s.api)) && !is_explicit_sync_api(static_cast<Api>(s.driver_fn)))
    return false;
  Observation o = observation_of(FindingId::ExplicitSync, s);
  if (e.stream) o.waited_for = &e.stream->since_idle;  // kept when it becomes hidden-sync (analysis.cpp)
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  return fmt::format(
      FMT_COMPILE("{} waited {} ({}, max {}): explicit synchronization; check that the host needs the result "
                  "here, or wait on an event for just the work it needs"),
      f.api, total_time_words(f), plural(f.count, "call", "calls"), format_duration(f.blocked.max()));
}

bool reported(const Finding& f, const Options& o) { return f.blocked.total() >= o.min_blocked_ns; }

}  // namespace

const Rule explicit_sync = Rule(Trigger::Sync, detect, message).time_is("waited").reported_when(reported);

}  // namespace asyncwatch::rules
