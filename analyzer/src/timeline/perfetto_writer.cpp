#include "timeline/perfetto_writer.h"

#include <algorithm>

namespace asyncwatch::perfetto {

namespace {
// Field numbers (perfetto/trace/trace_packet.proto, track_event/*.proto).
constexpr uint32_t kTracePacket = 1;       // Trace.packet
constexpr uint32_t kTimestamp = 8;         // TracePacket.timestamp
constexpr uint32_t kSequenceId = 10;       // TracePacket.trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;       // TracePacket.track_event
constexpr uint32_t kInternedData = 12;     // TracePacket.interned_data
constexpr uint32_t kSequenceFlags = 13;    // TracePacket.sequence_flags
constexpr uint32_t kTrackDescriptor = 60;  // TracePacket.track_descriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParent = 5;  // TrackDescriptor
constexpr uint32_t kPdPid = 1, kPdName = 6;                                                 // ProcessDescriptor
constexpr uint32_t kThPid = 1, kThTid = 2, kThName = 5;                                     // ThreadDescriptor
constexpr uint32_t kTeCategoryIids = 3, kTeAnnotations = 4, kTeType = 9, kTeNameIid = 10, kTeTrack = 11;  // TrackEvent
constexpr uint32_t kTeCategories = 22, kTeName = 23, kTeFlowIds = 47, kTeTerminatingFlowIds = 48;
constexpr uint32_t kDaNameIid = 1, kDaUint = 3, kDaString = 6, kDaName = 10, kDaStringIid = 17;  // DebugAnnotation
constexpr uint32_t kIdIid = 1, kIdName = 2;  // EventName, EventCategory, DebugAnnotationName (InternedString: str)
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2;  // TrackEvent.Type
// TracePacket.SequenceFlags: SEQ_INCREMENTAL_STATE_CLEARED (the first packet: no interned text
// before it), SEQ_NEEDS_INCREMENTAL_STATE (a packet that refers to interned texts).
constexpr uint64_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;
constexpr uint64_t kSequence = 1;
}  // namespace

void Message::fixed64(uint32_t field, uint64_t v) {
  tag(field, 1);
  reserve(8);
  for (int i = 0; i < 8; ++i) data_[size_++] = static_cast<char>(v >> (8 * i));
}

void Message::grow(size_t n) {
  const size_t capacity = std::max(capacity_ * 2, size_ + n + 256);
  std::unique_ptr<char[]> data(new char[capacity]);
  if (size_) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

uint64_t Writer::Interned::lookup(std::string_view s, Message& data, std::string_view* text) {
  auto it = ids_.find(s);
  if (it == ids_.end()) {
    if (ids_.size() >= max_) return 0;
    it = ids_.emplace(texts_.emplace_back(s), ids_.size() + 1).first;
    Message entry;
    entry.u64(kIdIid, it->second);
    entry.str(kIdName, s);  // InternedString's `str` (bytes) has the same number and wire type
    data.sub(field_, entry);
  }
  *text = it->first;
  return it->second;
}

void Writer::packet(uint64_t ts, bool has_ts, uint32_t field, const Message& body, uint64_t flags,
                    const Message* interned) {
  packet_.clear();
  if (has_ts) packet_.u64(kTimestamp, ts);
  packet_.u64(kSequenceId, kSequence);
  if (first_) {
    flags |= kIncrementalStateCleared;
    first_ = false;
  }
  if (flags) packet_.u64(kSequenceFlags, flags);
  if (interned && !interned->bytes().empty()) packet_.sub(kInternedData, *interned);
  packet_.sub(field, body);
  framing_.clear();  // Trace.packet: tag, length, then the packet
  framing_.tag(kTracePacket, 2);
  framing_.varint(packet_.bytes().size());
  buf_.append(framing_.bytes());
  buf_.append(packet_.bytes());
  if (buf_.size() > (1u << 20)) flush();
}

void Writer::process_track(uint64_t uuid, uint64_t pid, std::string_view name) {
  Message p, td;
  p.u64(kPdPid, pid);
  p.str(kPdName, name);
  td.u64(kTdUuid, uuid);
  td.sub(kTdProcess, p);
  packet(0, false, kTrackDescriptor, td);
}

void Writer::thread_track(uint64_t uuid, uint64_t pid, uint64_t tid, std::string_view name) {
  Message t, td;
  t.u64(kThPid, pid);
  t.u64(kThTid, tid);
  t.str(kThName, name);
  td.u64(kTdUuid, uuid);
  td.sub(kTdThread, t);
  packet(0, false, kTrackDescriptor, td);
}

void Writer::child_track(uint64_t uuid, uint64_t parent, std::string_view name) {
  Message td;
  td.u64(kTdUuid, uuid);
  td.str(kTdName, name);
  td.u64(kTdParent, parent);
  packet(0, false, kTrackDescriptor, td);
}

void Writer::slice(uint64_t track, uint64_t ts, uint64_t dur, std::string_view name, std::string_view category,
                   const Arg* args, size_t nargs, uint64_t flow_out, uint64_t flow_in) {
  // Each text by its iid (field_iid), or in full (field) once its kind's table is full.
  auto text = [&](Message& m, Interned& table, uint32_t field_iid, uint32_t field, std::string_view s) {
    if (uint64_t id = table.iid(s, interned_))
      m.u64(field_iid, id);
    else
      m.str(field, s);
  };
  interned_.clear();
  event_.clear();
  event_.u64(kTeType, kSliceBegin);
  event_.u64(kTeTrack, track);
  text(event_, names_, kTeNameIid, kTeName, name);
  if (!category.empty()) text(event_, categories_, kTeCategoryIids, kTeCategories, category);
  for (size_t i = 0; i < nargs; ++i) {
    annotation_.clear();
    text(annotation_, annotation_names_, kDaNameIid, kDaName, args[i].name);
    if (args[i].is_text)
      text(annotation_, annotation_values_, kDaStringIid, kDaString, args[i].text);
    else
      annotation_.u64(kDaUint, args[i].value);
    event_.sub(kTeAnnotations, annotation_);
  }
  if (flow_out) event_.fixed64(kTeFlowIds, flow_out);
  if (flow_in) event_.fixed64(kTeTerminatingFlowIds, flow_in);
  packet(ts, true, kTrackEvent, event_, kNeedsIncrementalState, &interned_);
  event_.clear();
  event_.u64(kTeType, kSliceEnd);
  event_.u64(kTeTrack, track);
  packet(ts + dur, true, kTrackEvent, event_);
}

void Writer::flush() {
  if (!buf_.empty()) {
    std::fwrite(buf_.data(), 1, buf_.size(), f_);
    written_ += buf_.size();
  }
  buf_.clear();
}

}  // namespace asyncwatch::perfetto
