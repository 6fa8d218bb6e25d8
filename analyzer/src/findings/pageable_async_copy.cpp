// pageable-async-copy: an asynchronous copy between the device and pageable host memory.
// DtoH: the call returns only after the copy completed, so it waits for all earlier work in
// the stream (cause waited-for-stream). HtoD: the driver stages the data through pinned
// memory and returns after staging, blocked in proportion to the size (cause staged);
// copies up to options.inline_htod_bytes are done inline and ignored. A batch copy (BatchCopy record)
// comes here through its pageable elements; one whose pageable source is read in stream order
// (kFlagSourceStreamOrder) waited for the stream.
// copies up to options.inline_htod_bytes are done inline and ignored. Both are synchronous by the
// CUDA rules whatever their duration, so every one is reported: --min-blocked-us only ranks them
// (a group none of whose calls blocked that long is a note). What pinning would save end to end is
// the impact model's (impact.h).
#include "report/format.h"
#include "report/json_writer.h"
#include "symbols/names.h"
#include "findings/rules.h"

#include <algorithm>
#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const CopyRecord& c = *e.copy;
  const Options& opt = ctx.options();
  const Direction d = e.copy_facts->direction;
  uint64_t blocked = c.end_ns - c.start_ns;
  // Most copies are of pinned memory: decided before an observation is built.
  const bool pageable_src = c.src_memory == static_cast<uint8_t>(MemoryKind::Pageable);
  Cause cause;
  if (d == Direction::DtoH && c.dst_memory == static_cast<uint8_t>(MemoryKind::Pageable))
    cause = Cause::WaitedForStream;
  else if (d == Direction::HtoD && pageable_src && (c.flags & kFlagSourceStreamOrder))
    cause = Cause::WaitedForStream;  // a batch element whose pageable source is read in stream order
  else if (d == Direction::HtoD && pageable_src && c.bytes > opt.inline_htod_bytes)
    cause = Cause::Staged;
  else
    return false;
  Observation o = observation_of_copy(FindingId::PageableAsyncCopy, c);
  o.cause = cause;
  if (cause == Cause::WaitedForStream) {
    o.waited_for = &e.stream->since_idle;
    if (d == Direction::DtoH) o.event_waits = e.stream->event_waits;
  }
  o.at_threshold = at_threshold(opt, blocked);
  o.direction = d;  // HtoD or DtoH
  o.host_memory = MemoryKind::Pageable;
  ctx.observe(o);
  return true;
}

std::string waited_for_words(const Finding& f) {
  if (f.waited_for.empty()) return "all earlier work in the stream";
  std::vector<std::pair<std::string, uint64_t>> k = most_first(f.waited_for);
  std::string out = k.size() == 1 ? "kernel " : "kernels ";
  for (size_t i = 0; i < k.size() && i < 4; ++i) {
    if (i) out += ", ";
    out += shorten_middle(k[i].first, kDisplayNameMax);
    if (k[i].second > f.count && f.count >= 1 && k[i].second > 1) out += fmt::format(FMT_COMPILE(" x{}"), k[i].second);
  }
  if (k.size() > 4) out += fmt::format(FMT_COMPILE(" and {} more"), k.size() - 4);
  if (f.event_waits)
    return "the stream (" + out + "; it waited on an event with cudaStreamWaitEvent, so these include the kernels " +
           "not yet known complete on other streams then, which it may have waited for)";
  return "the stream (" + out + ")";
}

std::string message(const Finding& f) {
  std::string what = copy_call_words(f);
  if (f.cause == Cause::Staged)
    return fmt::format(
        FMT_COMPILE(
            "{} blocked {}: the source is pageable host memory, so the driver staged it through pinned memory and the "
            "call returned only after staging, in proportion to the size; allocate it with cudaMallocHost or register "
            "it with cudaHostRegister"),
        what, total_time_words(f));
  if (f.direction == Direction::HtoD)
    return fmt::format(
        FMT_COMPILE(
            "{} blocked {}: the source is pageable host memory read in stream order, so the call waited for {} and "
            "ran synchronously; allocate it with cudaMallocHost or register it with cudaHostRegister"),
        what, total_time_words(f), waited_for_words(f));
  return fmt::format(
      FMT_COMPILE(
          "{} blocked {}: the destination is pageable host memory, so the copy waited for {} and ran synchronously; "
          "allocate it with cudaMallocHost or register it with cudaHostRegister"),
      what, total_time_words(f), waited_for_words(f));
}

void json_fields(JsonWriter& out, const Finding& f) { out.field("event_waits", f.event_waits); }

}  // namespace

// After host-to-host-async-copy and managed-memory-copy.
const Rule pageable_async_copy = Rule(Trigger::Copy, detect, message)
                                     .after(2)
                                     .blocking()
                                     .ranked()
                                     .claims_copies(copy_memory(MemoryKind::Pageable))
                                     .json(json_fields);

}  // namespace asyncwatch::rules
