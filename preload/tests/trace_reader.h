// A minimal reader of trace_format.h for the tests: every valid record of every block.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "asyncwatch/trace_format.h"

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
};

// Calls fn(tid, record bytes, size) for each record without keeping them (for traces of
// millions of records). Returns false if the file is not a trace; fills *header.
template <class Fn>
bool for_each_record(const std::string& path, asyncwatch::trace::FileHeader* header, Fn fn) {
  using namespace asyncwatch::trace;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  struct stat st;
  fstat(fd, &st);
  std::vector<char> data(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (data.size() < kHeaderSize) return false;
  memcpy(header, data.data(), sizeof *header);
  if (memcmp(header->magic, kMagic, 8) != 0 || header->version != kFormatVersion) return false;
  for (size_t off = kHeaderSize; off + kBlockSize <= data.size(); off += kBlockSize) {
    BlockHeader bh;
    memcpy(&bh, data.data() + off, sizeof bh);
    if (bh.magic != kBlockMagic) continue;
    size_t pos = sizeof(BlockHeader);
    while (pos + sizeof(RecordHeader) <= kBlockSize) {
      RecordHeader h;
      memcpy(&h, data.data() + off + pos, sizeof h);
      if (h.type == 0 || h.size < sizeof(RecordHeader) || pos + h.size > kBlockSize) break;
      fn(bh.tid, data.data() + off + pos, static_cast<size_t>(h.size));
      pos += h.size;
    }
  }
  return true;
}

// Every record of a trace, kept in memory (small traces).
inline Trace read_trace(const std::string& path) {
  Trace t;
  t.ok = for_each_record(path, &t.header, [&](uint32_t tid, const char* p, size_t n) {
    Record r;
    r.tid = tid;
    r.bytes.assign(p, p + n);
    t.records.push_back(std::move(r));
  });
  if (!t.ok) t.error = "cannot read " + path + " as a trace";
  return t;
}

}  // namespace aw_test
