// deprecated-stream-callback: cudaStreamAddCallback / cuStreamAddCallback, deprecated in
// favour of cudaLaunchHostFunc / cuLaunchHostFunc.
#include "../format.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

bool check_deprecated_stream_callback(RuleContext& ctx, const HostFuncEnqueueRecord& e) {
  auto api = static_cast<Api>(e.api);
  auto driver = static_cast<Api>(e.driver_fn);
  if (api != Api::cudaStreamAddCallback && api != Api::cuStreamAddCallback && driver != Api::cuStreamAddCallback)
    return false;
  Observation o;
  o.id = FindingId::DeprecatedStreamCallback;
  o.api = e.api;
  o.driver_fn = e.driver_fn;
  o.stack_id = e.stack_id;
  o.blocked_ns = e.end_ns - e.start_ns;
  ctx.observe(o);
  return true;
}

std::string deprecated_stream_callback_message(const Finding& f) {
  bool driver = f.api.rfind("cuda", 0) != 0;
  return fmt::format(
      "{} ({}) is deprecated; use {} instead (the callback blocks all later work in its stream until it returns, "
      "and must not call CUDA)",
      f.api, plural(f.count, "call", "calls"), driver ? "cuLaunchHostFunc" : "cudaLaunchHostFunc");
}

}  // namespace asyncwatch::rules
