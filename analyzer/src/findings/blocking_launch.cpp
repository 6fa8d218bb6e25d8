// blocking-launch: a kernel launch that blocked the host. Causes, in order of precedence:
// context-init (the process's first call: the runtime created the context in it),
// launch-blocking-env (CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel),
// first-launch (kFlagFirstLaunch: the module was loaded lazily at the first launch),
// launch-queue-full (at least options.launch_queue_depth launches outstanding on the stream
// since it was last known idle), unknown.
#include "../format.h"
#include "../json_writer.h"
#include "../names.h"
#include "../trace_reader.h"  // is_driver_api
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const LaunchRecord& l = *e.launch;
  const StreamState& stream = *e.stream;
  const Options& opt = ctx.options();
  Observation o = observation_of(FindingId::BlockingLaunch, l);
  if (o.blocked_ns < opt.min_blocked_ns) return false;
  if (e.first_call) {
    o.cause = Cause::ContextInit;
    // A runtime call creates the context inside itself; a driver entry point (the static runtime,
    // which asyncwatch sees only at the driver) runs after the creation, which the trace lacks.
    o.context_creation_visible = !is_driver_api(static_cast<Api>(l.api));
  } else if (ctx.launch_blocking_env())
    o.cause = Cause::LaunchBlockingEnv;
  else if (l.flags & kFlagFirstLaunch)
    o.cause = Cause::FirstLaunch;
  else if (stream.launches_since_sync >= opt.launch_queue_depth)
    o.cause = Cause::LaunchQueueFull;
  else
    o.cause = Cause::Unknown;
  o.kernel_name_id = l.kernel_name_id;
  o.outstanding_launches = stream.launches_since_sync;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  std::string blocked = total_time_words(f);
  std::string what =
      api_with_args(f, {f.chevron_launch ? "<<<...>>>" : "",
                        f.kernel.empty() ? "kernel ?" : "kernel " + shorten_middle(f.kernel, kDisplayNameMax),
                        calls_part(f)});
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
    case Cause::ContextInit:
      if (f.context_creation_visible)
        return fmt::format(
            "{} blocked {}: it was the process's first CUDA call, so the runtime created the CUDA context in it "
            "(and loaded the kernel's module); create the context before the timed part, e.g. with cudaFree(0) "
            "or cudaInitDevice at start-up (this first call's time also holds asyncwatch's own start-up)",
            what, blocked);
      return fmt::format(
          "{} blocked {}: it is the first CUDA call in the trace, a driver entry point reached after the CUDA "
          "context was created by calls asyncwatch does not see (the static runtime), so the creation's time is "
          "not in this figure; create the context before the timed part, e.g. with cudaFree(0) at start-up",
          what, blocked);
    case Cause::LaunchQueueFull:
      return fmt::format(
          "{} blocked {}: {} launches had been enqueued on the stream with no sign in the trace that it had run "
          "them (no synchronization, query or waiting copy), at least --launch-queue-depth, so the launch queue "
          "was probably full and the call waited for room; launch fewer, larger kernels, or use CUDA graphs",
          what, blocked, f.outstanding_launches_max);
    default:
      return fmt::format("{} blocked {}: the trace does not show why (not a first launch, launch queue not known to "
                         "be full)",
                         what, blocked);
  }
}

void json_fields(JsonWriter& out, const Finding& f) {
  out.field("outstanding_launches_max", f.outstanding_launches_max);
  if (f.cause == Cause::ContextInit) out.field("context_creation_in_call", f.context_creation_visible);
}

}  // namespace

const Rule blocking_launch = Rule(Trigger::Launch, detect, message).blocking().per_kernel().json(json_fields);

}  // namespace asyncwatch::rules
