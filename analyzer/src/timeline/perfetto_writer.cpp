#include "timeline/perfetto_writer.h"

namespace asyncwatch::perfetto {

namespace {
// Field numbers (perfetto/trace/trace_packet.proto, track_event/*.proto).
constexpr uint32_t kTracePacket = 1;       // Trace.packet
constexpr uint32_t kTimestamp = 8;         // TracePacket.timestamp
constexpr uint32_t kSequenceId = 10;       // TracePacket.trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;       // TracePacket.track_event
constexpr uint32_t kSequenceFlags = 13;    // TracePacket.sequence_flags
constexpr uint32_t kTrackDescriptor = 60;  // TracePacket.track_descriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParent = 5;  // TrackDescriptor
constexpr uint32_t kPdPid = 1, kPdName = 6;                                                 // ProcessDescriptor
constexpr uint32_t kThPid = 1, kThTid = 2, kThName = 5;                                     // ThreadDescriptor
constexpr uint32_t kTeAnnotations = 4, kTeType = 9, kTeTrack = 11, kTeCategories = 22, kTeName = 23;  // TrackEvent
constexpr uint32_t kTeFlowIds = 47, kTeTerminatingFlowIds = 48;
constexpr uint32_t kDaUint = 3, kDaString = 6, kDaName = 10;  // DebugAnnotation
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2;            // TrackEvent.Type
constexpr uint64_t kIncrementalStateCleared = 1;              // TracePacket.SequenceFlags
constexpr uint64_t kSequence = 1;
}  // namespace

void Message::varint(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<char>(v));
}

void Message::fixed64(uint32_t field, uint64_t v) {
  tag(field, 1);
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>(v >> (8 * i)));
}

void Writer::packet(uint64_t ts, bool has_ts, uint32_t field, const Message& body) {
  packet_.clear();
  if (has_ts) packet_.u64(kTimestamp, ts);
  packet_.u64(kSequenceId, kSequence);
  if (first_) {
    packet_.u64(kSequenceFlags, kIncrementalStateCleared);
    first_ = false;
  }
  packet_.sub(field, body);
  Message framed;  // Trace.packet: tag, length, packet
  framed.str(kTracePacket, packet_.bytes());
  buf_ += framed.bytes();
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
  event_.clear();
  event_.u64(kTeType, kSliceBegin);
  event_.u64(kTeTrack, track);
  event_.str(kTeName, name);
  if (!category.empty()) event_.str(kTeCategories, category);
  for (size_t i = 0; i < nargs; ++i) {
    annotation_.clear();
    annotation_.str(kDaName, args[i].name);
    if (args[i].is_text)
      annotation_.str(kDaString, args[i].text);
    else
      annotation_.u64(kDaUint, args[i].value);
    event_.sub(kTeAnnotations, annotation_);
  }
  if (flow_out) event_.fixed64(kTeFlowIds, flow_out);
  if (flow_in) event_.fixed64(kTeTerminatingFlowIds, flow_in);
  packet(ts, true, kTrackEvent, event_);
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
