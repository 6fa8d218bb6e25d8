// in-flight-call: a call whose record was still marked in flight (kFlagInFlight) when the trace
// ended: the process was killed or crashed inside it, or exited while another thread was in it.
// Only the head published before the call is known (api, start time, thread; the stack where the
// writer stored one): the time is how long it had been running when the trace ended, a lower bound
// when the process did not exit cleanly (the trace's end is then its last record).
#include "report/format.h"
#include "report/json_writer.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const CallHead& h = *e.in_flight;
  Observation o;
  o.id = FindingId::InFlightCall;
  o.api = h.api;
  o.driver_fn = h.driver_fn;
  o.stack_id = h.stack_id;
  o.blocked_ns = e.trace_end_ns > h.start_ns ? e.trace_end_ns - h.start_ns : 0;
  ObservationRare rare;
  rare.process_ended_cleanly = e.ended_cleanly;
  o.rare = &rare;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  std::string what = api_with_args(f, {calls_part(f)});
  if (f.process_ended_cleanly)
    return fmt::format(
        FMT_COMPILE(
            "{} was in flight when the process ended: it had been running {} when the process exited (another "
            "thread ended the process while this one waited in the call); find out what it waited for: the work "
            "before it on its stream, or an event that never completes"),
        what, format_duration(f.blocked.max()));
  // Killed: the trace's end is its last record, and the process may have lived on after it.
  std::string how_long =
      f.blocked.max() == 0
          ? std::string("it was the last call the trace recorded, so the trace does not show how long it ran")
          : "it had been running at least " + format_duration(f.blocked.max()) +
                " when the trace's last record was written (the process may have lived longer)";
  return fmt::format(
      FMT_COMPILE(
          "{} was in flight when the process ended (killed or crashed): {}; find out what it waited for: a long or "
          "hung kernel before it on its stream, a pageable copy behind such a kernel, or a synchronization that never "
          "completes"),
      what, how_long);
}

void json_fields(JsonWriter& out, const Finding& f) { out.field("process_ended_cleanly", f.process_ended_cleanly); }

}  // namespace

// The time is how long the call had been running when the trace ended.
const Rule in_flight_call = Rule(Trigger::InFlight, detect, message).time_is("running").json(json_fields);

}  // namespace asyncwatch::rules
