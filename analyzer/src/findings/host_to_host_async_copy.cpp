// host-to-host-async-copy: an asynchronous copy whose both sides are host memory is always
// synchronous (the runtime does it with a 2D driver copy and waits): every one is reported,
// --min-blocked-us ranks them (warning at or above it, note below).
#include "report/format.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const CopyFacts& facts = *e.copy_facts;
  if (facts.direction != Direction::HtoH) return false;
  Observation o = observation_of_copy(FindingId::HostToHostAsyncCopy, *e.copy);
  o.at_threshold = at_threshold(ctx.options(), o.blocked_ns);
  o.direction = facts.direction;
  o.host_memory = facts.host;
  ctx.observe(o);
  return true;
}

std::string message(const Finding& f) {
  return fmt::format(
      FMT_COMPILE(
          "{} blocked {}: a copy between two host buffers is always synchronous, whatever the API's name; use memcpy "
          "(or std::copy) on the host, or keep the data on the device"),
      copy_call_words(f), total_time_words(f));
}

}  // namespace

// The first of the copy rules (precedence 0): the direction decides.
const Rule host_to_host_async_copy =
    Rule(Trigger::Copy, detect, message).blocking().ranked().claims_copies(kCopyHostToHost);

}  // namespace asyncwatch::rules
