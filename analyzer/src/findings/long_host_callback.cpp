// long-host-callback: a host function (cudaLaunchHostFunc) or stream callback
// (cudaStreamAddCallback) that ran for at least options.min_callback_ns. While it runs, all
// later work in its stream waits. HostFuncEnqueue and HostFuncRun are joined by callback_id.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool check_long_host_callback(RuleContext& ctx, const HostFuncEnqueueRecord& e, const HostFuncRunRecord& run) {
  uint64_t ran = run.end_ns - run.start_ns;
  if (ran < ctx.options().min_callback_ns) return false;
  Observation o;
  o.id = FindingId::LongHostCallback;
  o.api = e.api;
  o.driver_fn = e.driver_fn;
  o.stack_id = e.stack_id;
  o.blocked_ns = ran;
  // The stream had drained before the enqueuing call returned: the callback started first.
  o.drained_before_return = run.start_ns < e.end_ns;
  ctx.observe(o);
  return true;
}

std::string long_host_callback_message(const Finding& f) {
  std::string drained;
  if (f.drained_before_return)
    drained = f.count == 1 ? std::string(" (the stream had drained before the enqueuing call returned, so the callback "
                                         "started at once)")
                           : fmt::format(" (in {} of {} calls the stream had drained before the enqueuing call returned, "
                                         "so the callback started at once)",
                                         f.drained_before_return, f.count);
  return fmt::format(
      "{}: the host function ran {} ({}max {}) and held its stream that long: all later work in the stream waited{}; "
      "keep host functions short: signal a host thread and do the work there",
      api_with_args(f), format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : ""),
      f.count > 1 ? plural(f.count, "run", "runs") + ", " : "", format_duration(f.blocked.max()), drained);
}

}  // namespace asyncwatch::rules
