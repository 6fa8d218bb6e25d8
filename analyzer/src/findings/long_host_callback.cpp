// long-host-callback: host functions (cudaLaunchHostFunc) and stream callbacks
// (cudaStreamAddCallback), per enqueuing call site, with how long they ran (min/median/max):
// while one runs, all later work in its stream waits. Every site is reported; a site whose
// longest run reached options.min_callback_ns is a warning, the others notes.
// HostFuncEnqueue and HostFuncRun are joined by callback_id.
#include "report/format.h"
#include "report/json_writer.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const HostFuncRunRecord& run = *e.run;
  uint64_t ran = run.end_ns >= run.start_ns ? run.end_ns - run.start_ns : 0;
  Observation o = observation_of(FindingId::LongHostCallback, *e.enqueue);
  o.blocked_ns = ran;
  o.at_threshold = ran >= ctx.options().min_callback_ns;
  // The stream had drained before the enqueuing call returned: the callback started first.
  o.drained_before_return = run.start_ns < e.enqueue->end_ns;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  std::string drained;
  if (f.drained_before_return)
    drained =
        f.count == 1
            ? std::string(
                  " (the stream had drained before the enqueuing call returned, so the callback "
                  "started at once)")
            : fmt::format(FMT_COMPILE(" (in {} of {} calls the stream had drained before the enqueuing call returned, "
                                      "so the callback started at once)"),
                          f.drained_before_return, f.count);
  if (f.below_threshold)  // no run reached --min-callback-us
    return fmt::format(
        FMT_COMPILE(
            "{}: the host function ran {} ({}min {}, median {}, max {}), holding its stream that long each time{}"),
        api_with_args(f, {calls_part(f)}), total_time_words(f),
        f.count > 1 ? plural(f.count, "run", "runs") + ", " : "", format_duration(f.blocked.min()),
        format_duration(f.blocked.median()), format_duration(f.blocked.max()), drained);
  return fmt::format(
      FMT_COMPILE(
          "{}: the host function ran {} ({}min {}, median {}, max {}) and held its stream that long: all later work in "
          "the stream waited{}; keep host functions short: signal a host thread and do the work there"),
      api_with_args(f, {calls_part(f)}), total_time_words(f), f.count > 1 ? plural(f.count, "run", "runs") + ", " : "",
      format_duration(f.blocked.min()), format_duration(f.blocked.median()), format_duration(f.blocked.max()), drained);
}

void json_fields(JsonWriter& out, const Finding& f) {
  out.field("stream_drained_before_return", f.drained_before_return);
}

}  // namespace

// The time is how long the function ran, not how long a call blocked.
const Rule long_host_callback = Rule(Trigger::HostFuncRun, detect, message).time_is("ran").ranked().json(json_fields);

}  // namespace asyncwatch::rules
