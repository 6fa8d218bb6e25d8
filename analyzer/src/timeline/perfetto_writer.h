// A small writer of Perfetto's binary trace format (perfetto/trace/trace.proto): a Trace is a
// sequence of TracePacket fields (field 1, length-delimited); we write TrackDescriptor packets
// (processes, threads, per-stream GPU tracks) and TrackEvent packets (slice begin/end, instants)
// with debug annotations and flows. Only the fields used here are encoded; field numbers are those
// of the public .proto files (commented at each use). All packets are on one sequence, whose first
// packet clears its incremental state: event names, categories, debug annotation names and string
// values are interned (each text written once, in the interned_data of the first packet that uses
// it; the events refer to it by iid), up to kMaxInterned texts of each kind (later new texts are
// written in full).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace asyncwatch::perfetto {

// Protobuf wire encoding into a growing byte string.
class Message {
 public:
  void varint(uint64_t v);
  void tag(uint32_t field, uint32_t wire) { varint(static_cast<uint64_t>(field) << 3 | wire); }
  void u64(uint32_t field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void i64(uint32_t field, int64_t v) { u64(field, static_cast<uint64_t>(v)); }  // int64: two's complement
  void fixed64(uint32_t field, uint64_t v);
  void str(uint32_t field, std::string_view s) {
    tag(field, 2);
    varint(s.size());
    bytes_.append(s.data(), s.size());
  }
  void sub(uint32_t field, const Message& m) { str(field, m.bytes_); }
  const std::string& bytes() const { return bytes_; }
  void clear() { bytes_.clear(); }

 private:
  std::string bytes_;
};

// One debug annotation of an event: a string or an unsigned value.
struct Arg {
  const char* name;
  std::string_view text;
  uint64_t value = 0;
  bool is_text = true;
};

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  ~Writer() { flush(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void process_track(uint64_t uuid, uint64_t pid, std::string_view name);
  void thread_track(uint64_t uuid, uint64_t pid, uint64_t tid, std::string_view name);
  void child_track(uint64_t uuid, uint64_t parent, std::string_view name);
  // A slice [ts, ts + dur] on `track`; `flow_out` (0: none) starts a flow, `flow_in` ends one.
  void slice(uint64_t track, uint64_t ts, uint64_t dur, std::string_view name, std::string_view category,
             const Arg* args, size_t nargs, uint64_t flow_out = 0, uint64_t flow_in = 0);
  void flush();
  uint64_t bytes_written() const { return written_ + buf_.size(); }

  // Texts interned per kind at most (bounds the writer's memory whatever the trace holds).
  static constexpr size_t kMaxInterned = 1u << 18;

 private:
  // One kind of interned text: text -> iid (from 1), the new ones collected for the packet.
  class Interned {
   public:
    explicit Interned(uint32_t field) : field_(field) {}
    // The iid of `s`, adding it (and its entry to `data`, InternedData) when new; 0 when full.
    uint64_t iid(std::string_view s, Message& data);

   private:
    uint32_t field_;                                  // InternedData's field of this kind
    std::deque<std::string> texts_;                   // the keys' storage (stable addresses)
    std::unordered_map<std::string_view, uint64_t> ids_;
  };
  void packet(uint64_t ts, bool has_ts, uint32_t field, const Message& body, uint64_t flags = 0,
              const Message* interned = nullptr);
  std::FILE* f_;
  std::string buf_;
  Message packet_, event_, annotation_, interned_;
  Interned names_{2}, categories_{1}, annotation_names_{3}, annotation_values_{29};  // InternedData fields
  bool first_ = true;
  uint64_t written_ = 0;
};

}  // namespace asyncwatch::perfetto
