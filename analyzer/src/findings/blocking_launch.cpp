// blocking-launch: a kernel launch that blocked the host. Causes, in order of precedence:
// launch-blocking-env (CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel),
// first-launch (kFlagFirstLaunch: the module was loaded lazily at the first launch),
// launch-queue-full (at least options.launch_queue_depth launches outstanding on the stream
// since it was last known idle), unknown.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool check_blocking_launch(RuleContext& ctx, const LaunchRecord& l, const StreamState& stream) {
  const Options& opt = ctx.options();
  uint64_t blocked = l.end_ns - l.start_ns;
  if (blocked < opt.min_blocked_ns) return false;
  Observation o;
  o.id = FindingId::BlockingLaunch;
  if (ctx.launch_blocking_env())
    o.cause = Cause::LaunchBlockingEnv;
  else if (l.flags & kFlagFirstLaunch)
    o.cause = Cause::FirstLaunch;
  else if (stream.launches_since_sync >= opt.launch_queue_depth)
    o.cause = Cause::LaunchQueueFull;
  else
    o.cause = Cause::Unknown;
  o.api = l.api;
  o.driver_fn = l.driver_fn;
  o.kernel_name_id = l.kernel_name_id;
  o.stack_id = l.stack_id;
  o.blocked_ns = blocked;
  o.outstanding_launches = stream.launches_since_sync;
  ctx.observe(o);
  return true;
}

std::string blocking_launch_message(const Finding& f) {
  std::string blocked = format_duration(f.blocked.total()) + (f.count > 1 ? " in total" : "");
  std::string what = api_with_args(f);
  switch (f.cause) {
    case Cause::LaunchBlockingEnv:
      return fmt::format("{} blocked {}: CUDA_LAUNCH_BLOCKING=1 is set, so every launch waits until its kernel has "
                         "finished; unset it outside debugging",
                         what, blocked);
    case Cause::FirstLaunch:
      return fmt::format(
          "{} blocked {}: first launch of this kernel in the process: its module was loaded lazily ({}); warm the "
          "kernel up before the timed part, or set CUDA_MODULE_LOADING=EAGER to load modules at start-up",
          what, blocked,
          f.module_loading.empty() ? "CUDA_MODULE_LOADING is not set: lazy loading is the default"
                                   : "CUDA_MODULE_LOADING=" + f.module_loading);
    case Cause::LaunchQueueFull:
      return fmt::format(
          "{} blocked {}: up to {} launches were outstanding on the stream since it was last idle, so the launch "
          "queue was full and the call waited for room; launch fewer, larger kernels, or use CUDA graphs",
          what, blocked, f.outstanding_launches_max);
    default:
      return fmt::format("{} blocked {}: the trace does not show why (not a first launch, launch queue not known to "
                         "be full)",
                         what, blocked);
  }
}

}  // namespace asyncwatch::rules
