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
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace asyncwatch::perfetto {

// Protobuf wire encoding into a growing byte buffer (its own, not a std::string: an append to
// one was a call, made for every field: a good part of the Perfetto timeline's time).
class Message {
 public:
  void varint(uint64_t v) {
    reserve(10);
    while (v >= 0x80) {
      data_[size_++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    data_[size_++] = static_cast<char>(v);
  }
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
    reserve(s.size());
    if (!s.empty()) std::memcpy(data_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }
  void sub(uint32_t field, const Message& m) { str(field, m.bytes()); }
  std::string_view bytes() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }

 private:
  void reserve(size_t n) {
    if (size_ + n > capacity_) grow(n);
  }
  void grow(size_t n);
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
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
  // `max_interned`: texts interned per kind at most (kMaxInterned; smaller in tests).
  explicit Writer(std::FILE* f, size_t max_interned = kMaxInterned)
      : f_(f),
        names_(2, max_interned),
        categories_(1, max_interned),
        annotation_names_(3, max_interned),
        annotation_values_(29, max_interned) {}
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
    Interned(uint32_t field, size_t max) : field_(field), max_(max) {}
    // The iid of `s`, adding it (and its entry to `data`, InternedData) when new; 0 when full.
    uint64_t iid(std::string_view s, Message& data) {
      // Most texts were asked for recently: a cache indexed by the text's length and first and
      // last 8 bytes, checked by content, before the hash table (hashing every text was most of
      // the interning's cost, itself most of the Perfetto timeline's).
      uint64_t head = 0, tail = 0;
      std::memcpy(&head, s.data(), s.size() < 8 ? s.size() : 8);
      if (s.size() > 8) std::memcpy(&tail, s.data() + s.size() - 8, 8);
      Recent& r = recent_[((head ^ (tail << 1) ^ s.size()) * 0x9e3779b97f4a7c15ull) >> (64 - kRecentBits)];
      if (r.text.size() == s.size() && r.id && std::memcmp(r.text.data(), s.data(), s.size()) == 0) return r.id;
      std::string_view text;
      const uint64_t id = lookup(s, data, &text);
      if (id) r = Recent{text, id};
      return id;
    }

   private:
    // iid() through the hash table; `*text`: the interned copy.
    uint64_t lookup(std::string_view s, Message& data, std::string_view* text);
    struct Recent {
      std::string_view text;  // the interned copy
      uint64_t id = 0;
    };
    static constexpr unsigned kRecentBits = 8;
    uint32_t field_;                 // InternedData's field of this kind
    size_t max_;                     // texts at most
    std::deque<std::string> texts_;  // the keys' storage (stable addresses)
    std::unordered_map<std::string_view, uint64_t> ids_;
    Recent recent_[1u << kRecentBits];
  };
  void packet(uint64_t ts, bool has_ts, uint32_t field, const Message& body, uint64_t flags = 0,
              const Message* interned = nullptr);
  std::FILE* f_;
  std::string buf_;
  Message packet_, event_, annotation_, interned_, framing_;
  Interned names_, categories_, annotation_names_, annotation_values_;  // (their InternedData fields)
  bool first_ = true;
  uint64_t written_ = 0;
};

}  // namespace asyncwatch::perfetto
