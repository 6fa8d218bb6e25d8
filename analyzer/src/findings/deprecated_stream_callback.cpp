// deprecated-stream-callback: cudaStreamAddCallback / cuStreamAddCallback, deprecated in
// favour of cudaLaunchHostFunc / cuLaunchHostFunc.
#include "report/format.h"
#include "findings/rules.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  auto api = static_cast<Api>(e.enqueue->api);
  auto driver = static_cast<Api>(e.enqueue->driver_fn);
  if (api != Api::cudaStreamAddCallback && api != Api::cuStreamAddCallback && driver != Api::cuStreamAddCallback)
    return false;
  ctx.observe(observation_of(FindingId::DeprecatedStreamCallback, *e.enqueue));
  return true;
}

std::string message(const Finding& f) {
  bool driver = f.api.rfind("cuda", 0) != 0;
  return fmt::format(
      FMT_COMPILE(
          "{} ({}) is deprecated; use {} instead (the callback blocks all later work in its stream until it returns, "
          "and must not call CUDA)"),
      f.api, plural(f.count, "call", "calls"), driver ? "cuLaunchHostFunc" : "cudaLaunchHostFunc");
}

}  // namespace

const Rule deprecated_stream_callback = Rule(Trigger::HostFuncEnqueue, detect, message);

}  // namespace asyncwatch::rules
