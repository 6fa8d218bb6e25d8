// The name both timelines give a copy, memset or launch (the Perfetto/JSON timeline's slice, the HTML
// report picture's bar): the API as the user calls it with the copy's direction and size or the
// kernel: "cudaMemcpyAsync HtoD 2.0 MiB", "cudaMemsetAsync 4.0 KiB", "cudaLaunchKernel saxpy".
#pragma once

#include "events/event.h"
#include "symbols/call_site.h"

#include <asyncwatch/trace_format.h>
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace asyncwatch {

// `detail`: a launch's kernel as the caller shows it, or a copy's or memset's size (format_bytes: the
// caller may show it elsewhere too, made once).
// The same from the record's fields (`direction`: a copy's, else unused).
inline std::string call_label(trace::RecordType kind, uint16_t api_id, uint8_t direction, std::string_view detail) {
  const std::string api = public_api_name(trace::api_name(static_cast<trace::Api>(api_id)));
  if (kind == trace::RecordType::Copy)
    return fmt::format("{} {} {}", api, direction_name(static_cast<trace::Direction>(direction)), detail);
  return fmt::format("{} {}", api, detail);
}
template <class E>
std::string call_label(const E& ev, std::string_view detail) {
  static_assert(events::is_one_of<E, trace::RecordType::Copy, trace::RecordType::Memset, trace::RecordType::Launch>);
  uint8_t direction = 0;
  if constexpr (E::kind == trace::RecordType::Copy) direction = ev.rec.direction;
  return call_label(E::kind, ev.rec.api, direction, detail);
}

}  // namespace asyncwatch
