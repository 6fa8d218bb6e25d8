// The typed events: every record type of the trace format's table (ASYNCWATCH_RECORD_TYPES,
// trace_format.h) is one event type, Event<RecordType::X>, holding the record's struct read in place
// (the reader validated it) and what the consumers derive from it, once per event: the stream a
// call is on, and a copy's direction, host side and class (`copy`, events/copies.h). visit() is the
// one dispatch on the record type, generated from the same table: the analysis, both timelines,
// the call table and dump take typed events from it instead of switching on raw records
// themselves. A new record type is a table row; its consumers see it as a new Event.
#pragma once

#include "events/copies.h"
#include "events/streams.h"
#include "read/trace_reader.h"

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <type_traits>

namespace asyncwatch::events {

// The struct of a record type, from the table.
template <trace::RecordType K>
struct RecordStruct;
#define ASYNCWATCH_EVENT_STRUCT(id, name, type_, since) \
  template <>                                           \
  struct RecordStruct<trace::RecordType::name> {        \
    using type = trace::type_;                          \
  };
ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_EVENT_STRUCT)
#undef ASYNCWATCH_EVENT_STRUCT

namespace detail {
template <class T, class = void>
struct has_stream : std::false_type {};
template <class T>
struct has_stream<T, std::void_t<decltype(std::declval<const T&>().stream)>> : std::true_type {};
}  // namespace detail

struct NoCopyFacts {};

// One record of type K. `view` is where it lies (thread, block, offset), `rec` its fixed part.
template <trace::RecordType K>
struct Event {
  using Record = typename RecordStruct<K>::type;
  static constexpr trace::RecordType kind = K;
  static constexpr bool kCall = trace::is_call_record<Record>;                 // starts with CallHead
  static constexpr bool kCopy = std::is_base_of_v<trace::CopyRecord, Record>;  // Copy, Memset, BatchCopy
  static constexpr bool kOnStream = kCall && detail::has_stream<Record>::value;

  // Inline (a call per copy event, as GCC left it): the JSON report's records per second.
  __attribute__((always_inline)) Event(const RecordView& v, const Record& r) : view(v), rec(r) {
    if constexpr (kCopy) copy = copy_facts(r);
  }

  const RecordView& view;
  const Record& rec;
  // A copy's direction, host side and class (copies.h), for every consumer of this event.
  [[no_unique_address]] std::conditional_t<kCopy, CopyFacts, NoCopyFacts> copy;

  uint32_t tid() const { return view.tid; }
  // The bytes after the fixed part (variable-size records: a path, frames, text).
  const uint8_t* payload() const { return view.payload(sizeof(Record)); }
  // The stream a call is on (streams.h, the one definition of the stream key). Inline: once per
  // call record (the JSON report's records per second).
  __attribute__((always_inline)) uint64_t stream_key() const {
    static_assert(kOnStream, "a call record with a stream");
    return events::stream_key(rec.stream_kind, rec.stream, view.tid);
  }
  StreamRef stream() const {
    static_assert(kOnStream, "a call record with a stream");
    return resolve_stream(rec.stream_kind, rec.stream, view.tid);
  }
  trace::Direction direction() const {
    static_assert(kCopy, "a copy record");
    return copy.direction;
  }
};

// A record of a type the table does not have (dump shows its header; the other walks never see one).
struct OtherEvent {
  static constexpr trace::RecordType kind = trace::RecordType::None;
  static constexpr bool kCall = false;
  static constexpr bool kCopy = false;
  static constexpr bool kOnStream = false;
  const RecordView& view;
  uint32_t tid() const { return view.tid; }
};

// E is an event of one of the kinds Ks.
template <class E, trace::RecordType... Ks>
inline constexpr bool is_one_of = ((std::decay_t<E>::kind == Ks) || ...);

// The one dispatch: `f` called with the record's typed event (a generic callable: `if constexpr` on
// E::kind picks what it does), or with OtherEvent for a type outside the table; returns what f returns.
// Inline: the analysis calls it for every record of the trace (the JSON report's records per
// second, docs/performance.md).
template <class F>
__attribute__((always_inline)) inline decltype(auto) visit(const RecordView& r, F&& f) {
  switch (r.type) {
#define ASYNCWATCH_EVENT_CASE(id, name, type_, since) \
  case trace::RecordType::name: return f(Event<trace::RecordType::name>{r, r.ref<trace::type_>()});
    ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_EVENT_CASE)
#undef ASYNCWATCH_EVENT_CASE
    default: return f(OtherEvent{r});
  }
}

}  // namespace asyncwatch::events
