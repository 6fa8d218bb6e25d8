// A minimal reader of trace_format.h for the tests: every valid record of every block (the framing
// walk is trace_io.h's).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "asyncwatch/trace_format.h"
#include "asyncwatch/trace_io.h"

namespace aw_test {

struct Record {
  uint32_t tid;
  std::vector<char> bytes;  // the whole record, header included
  asyncwatch::trace::RecordType type() const {
    asyncwatch::trace::RecordHeader h;
    memcpy(&h, bytes.data(), sizeof h);
    return static_cast<asyncwatch::trace::RecordType>(h.type);
  }
  template <class T>
  T as() const {
    T t{};
    memcpy(&t, bytes.data(), std::min(sizeof t, bytes.size()));
    return t;
  }
};

struct Trace {
  asyncwatch::trace::FileHeader header{};
  std::vector<Record> records;
  // A flight-recorder trace's window: the records of its ring blocks, in the ring's sequence order
  // (each block's records in order), and the sequence number of each record's block.
  std::vector<Record> window;
  std::vector<uint64_t> window_seq;
  bool ok = false;
  std::string error;

  template <class T>
  std::vector<T> all(asyncwatch::trace::RecordType t) const {
    std::vector<T> out;
    for (const Record& r : records)
      if (r.type() == t) out.push_back(r.as<T>());
    return out;
  }
  size_t count(asyncwatch::trace::RecordType t) const {
    size_t n = 0;
    for (const Record& r : records) n += r.type() == t;
    return n;
  }
  // The calls of record type `t`: their records, and those folded into SiteSummary records (summary
  // mode, ASYNCWATCH_SUMMARY=1).
  uint64_t calls(asyncwatch::trace::RecordType t) const {
    uint64_t n = 0;
    for (const Record& r : records) {
      if (r.type() == t) ++n;
      if (r.type() != asyncwatch::trace::RecordType::SiteSummary) continue;
      const auto s = r.as<asyncwatch::trace::SiteSummaryRecord>();
      asyncwatch::trace::RecordHeader h;
      memcpy(&h, s.call, sizeof h);
      if (h.type == static_cast<uint16_t>(t)) n += s.count;
    }
    return n;
  }
};

// Calls fn(tid, record bytes, size) for each record (the framing walk of trace_io.h). Returns false
// if the file is not a trace of the current version; fills *header.
template <class Fn>
bool for_each_record(const std::string& path, asyncwatch::trace::FileHeader* header, Fn fn) {
  using namespace asyncwatch::trace;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  struct stat st;
  fstat(fd, &st);
  std::vector<uint8_t> data(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  bool ok = asyncwatch::trace_io::for_each_record(
      data.data(), data.size(), header, [&](uint64_t, const BlockHeader& bh, const asyncwatch::trace_io::RawRecord& r) {
        fn(bh.tid, reinterpret_cast<const char*>(r.data), static_cast<size_t>(r.size));
      });
  return ok && header->version == kFormatVersion;
}

// The ring blocks of the file at `path` (flight recorder), in sequence order: their records into
// t->window (a block's walk stops at its first zero record header).
inline void read_window(const std::string& path, Trace* t) {
  using namespace asyncwatch::trace;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  std::vector<std::pair<uint64_t, std::vector<Record>>> blocks;
  std::vector<uint8_t> block(kBlockSize);
  for (uint64_t b = 0; pread(fd, block.data(), kBlockSize, static_cast<off_t>(kHeaderSize + b * kBlockSize)) ==
                       static_cast<ssize_t>(kBlockSize);
       ++b) {
    BlockHeader bh;
    if (!asyncwatch::trace_io::ring_block(block.data(), &bh)) continue;
    std::vector<Record> recs;
    asyncwatch::trace_io::RawRecord r;
    for (uint32_t off = sizeof(BlockHeader);
         asyncwatch::trace_io::frame_at(block.data(), off, t->header.version, &r) == asyncwatch::trace_io::Frame::Ok;
         off += r.size) {
      Record rec;
      rec.tid = bh.tid;
      rec.bytes.assign(reinterpret_cast<const char*>(r.data), reinterpret_cast<const char*>(r.data) + r.size);
      recs.push_back(std::move(rec));
    }
    blocks.emplace_back(bh.block_index, std::move(recs));
  }
  close(fd);
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [seq, recs] : blocks)
    for (auto& r : recs) {
      t->window.push_back(std::move(r));
      t->window_seq.push_back(seq);
    }
}

// Every record of a trace, kept in memory (small traces), and its flight recorder's window.
inline Trace read_trace(const std::string& path) {
  Trace t;
  t.ok = for_each_record(path, &t.header, [&](uint32_t tid, const char* p, size_t n) {
    Record r;
    r.tid = tid;
    r.bytes.assign(p, p + n);
    t.records.push_back(std::move(r));
  });
  if (!t.ok) t.error = "cannot read " + path + " as a trace";
  if (t.ok && (t.header.config_flags & asyncwatch::trace::kConfigFlight)) read_window(path, &t);
  return t;
}

}  // namespace aw_test
