// asyncwatch timeline [-o FILE] TRACE_OR_DIR...
#include "analysis.h"
#include "commands.h"
#include "output_file.h"
#include "timeline_export.h"
#include "trace_reader.h"

#include <cmath>
#include <fmt/format.h>
#include <memory>

namespace asyncwatch {

int cmd_timeline(const TimelineArgs& args) {
  TraceInputs inputs = expand_trace_inputs(args.inputs);
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  std::vector<UnreadableTrace> unreadable = inputs.unreadable;
  TimelineStats stats = write_timeline(out->stream(), inputs.paths,
                                       static_cast<uint64_t>(std::llround(args.min_blocked_us * 1000.0)), Limits{},
                                       &unreadable);
  for (const auto& u : unreadable) print_error(fmt::format("{}: {}", u.trace, u.error));
  if (stats.host_functions_dropped)
    print_error(fmt::format("{} host functions are not on the stream tracks of the timeline: more than {} enqueues "
                            "were waiting for their run record (or runs for their enqueue) at once",
                            stats.host_functions_dropped, Limits{}.pending_callbacks));
  if (stats.traces == 0) {
    if (unreadable.size() != 1) print_error("no trace could be read");
    return kExitInvalid;  // `out` is discarded: nothing replaces a regular file
  }
  try {
    out->commit();
  } catch (const OutputError& e) {
    print_error(fmt::format("cannot write the timeline: {}", e.what()));
    return kExitInvalid;
  }
  return unreadable.empty() ? kExitOk : kExitPartial;
}

}  // namespace asyncwatch
