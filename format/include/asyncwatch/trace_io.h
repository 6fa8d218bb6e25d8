// The block walk of a trace, once: a reader of the framing over a byte span (file header, block
// headers, record headers, record sizes from the record table) and a writer-side builder that lays
// records into per-thread blocks. Header-only, for the analyzer's reader (framing), the preload
// tests' reader (preload/tests/trace_reader.h), the analyzer's test builder
// (analyzer/tests/trace_builder.h) and the benchmark generator (bench/gen_trace.cpp).
// Not used by the preload library itself (its writer is thread_buffer.cpp, lock-free and in place).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "asyncwatch/trace_format.h"

namespace asyncwatch::trace_io {

// What is wrong with the framing of a record (Ok: nothing; End: the valid part of the block ended).
enum class Frame : uint8_t {
  Ok,
  End,              // type 0 with size 0, or no room left for a record header
  EndWithSize,      // type 0 but a non-zero size
  UnknownType,      // not a row of the record table
  TypeTooNew,       // a row, but newer than the trace's version
  SizeNotMultiple,  // size 0..7 or not a multiple of 8
  PastBlock,        // runs past the end of the block
};

struct RawRecord {
  uint16_t type;
  uint16_t size;    // as stored
  uint32_t offset;  // in the block
  const uint8_t* data;
};

// The framing of the record at `off` of the block at `block` (kBlockSize bytes) in a trace of
// `version`; fills *out unless End. Record contents (sizes per type, fields) are not checked here.
inline Frame frame_at(const uint8_t* block, uint32_t off, uint32_t version, RawRecord* out) {
  if (off + sizeof(trace::RecordHeader) > trace::kBlockSize) return Frame::End;
  trace::RecordHeader rh;
  std::memcpy(&rh, block + off, sizeof rh);
  *out = RawRecord{rh.type, rh.size, off, block + off};
  if (rh.type == 0) return rh.size == 0 ? Frame::End : Frame::EndWithSize;
  const trace::RecordInfo& info = trace::record_info(rh.type);
  if (rh.type >= trace::kRecordTypeLimit || info.since == 0) return Frame::UnknownType;
  if (info.since > version) return Frame::TypeTooNew;
  if (rh.size < sizeof(trace::RecordHeader) + 4 || rh.size % 8 != 0) return Frame::SizeNotMultiple;
  if (off + rh.size > trace::kBlockSize) return Frame::PastBlock;
  return Frame::Ok;
}

// The size a record of this type must have by the table (fixed types; 0 for others).
inline uint32_t fixed_size_of(uint16_t type) {
  const trace::RecordInfo& info = trace::record_info(type);
  return info.size_rule == trace::SizeRule::Fixed ? info.fixed : 0;
}

// Whether `size` is right for the record at `p` of `type` by the table (fixed, fixed + payload, or
// at least fixed), in the current version's layout.
inline bool size_matches(uint16_t type, uint32_t size, const uint8_t* p) {
  const trace::RecordInfo& info = trace::record_info(type);
  switch (info.size_rule) {
    case trace::SizeRule::Fixed: return size == info.fixed;
    case trace::SizeRule::Any: return size >= info.fixed;
    case trace::SizeRule::Variable:
      return size >= info.fixed &&
             size == trace::record_size_aligned(info.struct_size + trace::record_payload_bytes(type, p));
  }
  return false;
}

// The block header at `block`; false when the block is unused (no magic).
inline bool block_used(const uint8_t* block, trace::BlockHeader* out) {
  std::memcpy(out, block, sizeof *out);
  return out->magic == trace::kBlockMagic || out->magic == trace::kBlockMagicShared;
}

// A flight recorder's ring block (version 6): its records are copies of call records, the window of
// the last calls (block_used is false for it: a walk of the threads' blocks leaves it out).
inline bool ring_block(const uint8_t* block, trace::BlockHeader* out) {
  std::memcpy(out, block, sizeof *out);
  return out->magic == trace::kBlockMagicRing;
}

// The thread a Handoff record at `r` hands the rest of its block to.
inline uint32_t handoff_tid(const RawRecord& r) {
  trace::HandoffRecord h;
  std::memcpy(&h, r.data, sizeof h);
  return h.tid;
}

// Calls fn(block_index, block_header, record) for every well-framed record of every used block of
// the file image [data, data + size), in file order; a block's walk stops at its end or at the first
// record whose framing is wrong (reported through on_error(block_index, record, frame) when given).
// The header's tid is the record's thread: from a Handoff record on (itself included), its tid.
// Returns false when the image is not a trace (magic, version, header size); fills *header.
template <class Fn>
bool for_each_record(const uint8_t* data, size_t size, trace::FileHeader* header, Fn&& fn,
                     const std::function<void(uint64_t, const RawRecord&, Frame)>& on_error = {}) {
  using namespace asyncwatch::trace;
  if (size < kHeaderSize) return false;
  std::memcpy(header, data, sizeof *header);
  if (std::memcmp(header->magic, kMagic, sizeof kMagic) != 0 || header->version < kOldestReadableVersion ||
      header->version > kFormatVersion || header->header_size != kHeaderSize || header->block_size != kBlockSize)
    return false;
  for (uint64_t b = 0; kHeaderSize + (b + 1) * kBlockSize <= size; ++b) {
    const uint8_t* block = data + kHeaderSize + b * kBlockSize;
    BlockHeader bh;
    if (!block_used(block, &bh)) continue;
    RawRecord r;
    for (uint32_t off = sizeof(BlockHeader);; off += r.size) {
      Frame f = frame_at(block, off, header->version, &r);
      if (f == Frame::End) break;
      if (f != Frame::Ok) {
        if (on_error) on_error(b, r, f);
        break;
      }
      if (r.type == static_cast<uint16_t>(RecordType::Handoff) && r.size >= sizeof(HandoffRecord))
        bh.tid = handoff_tid(r);
      fn(b, bh, r);
    }
  }
  return true;
}

// Writer side: lays records into kBlockSize blocks, one chain per thread, as the preload does (a
// record that does not fit the rest of a thread's block goes into a new block; the rest stays zero).
// Blocks are numbered in the order they were started, as claims number them. Two modes: kept
// (default: every block stays here, blocks() gives them; copyable) or streaming (`emit(index,
// bytes)` receives each block when it is full, and the open ones at finish()).
class BlockBuilder {
 public:
  using Emit = std::function<void(uint64_t index, const std::vector<uint8_t>& block)>;
  BlockBuilder() = default;
  explicit BlockBuilder(Emit emit) : emit_(std::move(emit)) {}

  // Appends one record for thread `tid`: `fixed` (fixed_size bytes, its RecordHeader is overwritten
  // with `type` and the total size) followed by `payload`, padded with zeros to a multiple of 8.
  void add(uint32_t tid, trace::RecordType type, const void* fixed, size_t fixed_size, const void* payload = nullptr,
           size_t payload_size = 0) {
    uint32_t total = trace::record_size_aligned(static_cast<uint32_t>(fixed_size + payload_size));
    Chain& c = chains_[tid];
    if (c.index == kNone || c.used + total > trace::kBlockSize) {
      if (emit_ && c.index != kNone) emit_(c.index, c.block);
      c.index = next_index_++;
      std::vector<uint8_t>& block = emit_ ? c.block : kept_.emplace_back();
      block.assign(trace::kBlockSize, 0);
      trace::BlockHeader bh{trace::kBlockMagic, tid, c.index};
      std::memcpy(block.data(), &bh, sizeof bh);
      c.used = sizeof bh;
    }
    uint8_t* p = (emit_ ? c.block : kept_[c.index]).data() + c.used;
    std::memcpy(p, fixed, fixed_size);
    if (payload_size) std::memcpy(p + fixed_size, payload, payload_size);
    trace::RecordHeader h{static_cast<uint16_t>(type), static_cast<uint16_t>(total)};
    std::memcpy(p, &h, sizeof h);
    c.used += total;
    ++records_;
  }
  template <class T>
  void add(uint32_t tid, trace::RecordType type, const T& rec) {
    add(tid, type, &rec, sizeof rec);
  }
  // Streaming mode: emits every block still open.
  void finish() {
    if (!emit_) return;
    for (auto& [tid, c] : chains_)
      if (c.index != kNone) emit_(c.index, c.block);
    chains_.clear();
  }
  // Kept mode: the blocks, by index.
  const std::vector<std::vector<uint8_t>>& blocks() const { return kept_; }
  uint64_t block_count() const { return next_index_; }
  uint64_t records() const { return records_; }

 private:
  static constexpr uint64_t kNone = UINT64_MAX;
  struct Chain {
    std::vector<uint8_t> block;  // streaming mode only
    uint64_t index = kNone;
    uint32_t used = 0;
  };
  Emit emit_;
  std::map<uint32_t, Chain> chains_;
  std::vector<std::vector<uint8_t>> kept_;
  uint64_t next_index_ = 0;
  uint64_t records_ = 0;
};

}  // namespace asyncwatch::trace_io
