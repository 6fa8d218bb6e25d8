// The flight recorder's ring (trace format version 6, docs/trace-format.md "Flight recorder"): the
// reader orders the ring blocks by sequence, reads a block reused mid-way as its new records only,
// keeps the window out of the whole run's counts (the summaries'), and refuses a ring that no
// writer makes (the ring's metadata is untrusted input).
#include "findings/analysis.h"
#include "read/trace_reader.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

constexpr uint32_t kTid = 7;
constexpr uint64_t kT0 = 1'000'000'000 + kMs;  // TraceBuilder's start + 1 ms

tf::CopyRecord copy_at(uint64_t start, uint32_t stack) {
  auto c = TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyHtoDAsync_v2, Direction::HtoD, MemoryKind::Pageable,
                              MemoryKind::Device, start, start + 2 * kUs, 4096, tf::kFlagStackCaptured, 0x5000, stack);
  c.h = {static_cast<uint16_t>(RecordType::Copy), sizeof c};
  return c;
}

// A flight-recorder trace whose summary part holds one exemplar copy and a summary of `folded`
// more (the whole run: folded + 1 copies); ring blocks are appended by ring_block().
struct FlightTrace {
  TraceBuilder b{4242};
  uint32_t stack = 0;
  std::vector<uint8_t> bytes;

  explicit FlightTrace(uint64_t folded, uint64_t ring_blocks = 8) {
    b.header().config_flags |= tf::kConfigSummary | tf::kConfigFlight;
    b.header().flight_ring_blocks = ring_blocks;
    b.thread_info(kTid, "main");
    stack = b.stack(kTid, {0x401000});
    b.event(kTid, RecordType::Copy, copy_at(kT0, stack));
    tf::SiteSummaryRecord s{};
    tf::CopyRecord c = copy_at(0, stack);
    c.end_ns = 0;
    std::memcpy(s.call, &c, sizeof c);
    s.count = folded;
    s.total_ns = folded * 2 * kUs;
    s.max_ns = 2 * kUs;
    s.histogram[tf::summary_bucket(2 * kUs)] = static_cast<uint32_t>(folded);
    s.first_start_ns = kT0 + kMs;
    s.last_start_ns = kT0 + 900 * kMs;
    b.add(kTid, RecordType::SiteSummary, s);
    b.end_at(kT0 + kMs * 1000);
    bytes = b.bytes();
  }

  // Appends a ring block: magic, tid, sequence, then `records` copies (each followed by a zero
  // header, as the writer leaves it), then `stale` bytes of an older use of the block after them.
  size_t ring_block(uint64_t seq, const std::vector<uint64_t>& starts, uint32_t magic = tf::kBlockMagicRing,
                    bool stale_after = false) {
    const size_t at = bytes.size();
    bytes.resize(at + tf::kBlockSize, 0);
    tf::BlockHeader bh{magic, kTid, seq};
    std::memcpy(bytes.data() + at, &bh, sizeof bh);
    size_t off = at + sizeof bh;
    for (uint64_t s : starts) {
      tf::CopyRecord c = copy_at(s, stack);
      std::memcpy(bytes.data() + off, &c, sizeof c);
      off += sizeof c;
    }
    if (stale_after) {  // an older record behind the zero header that ends the new ones
      tf::CopyRecord old = copy_at(kT0 + 5 * kMs, stack);
      std::memcpy(bytes.data() + off + 8, &old, sizeof old);
    }
    tf::FileHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    h.blocks_claimed = (bytes.size() - tf::kHeaderSize) / tf::kBlockSize;
    std::memcpy(bytes.data(), &h, sizeof h);
    return at;
  }
  void header(void (*edit)(tf::FileHeader&)) {
    tf::FileHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    edit(h);
    std::memcpy(bytes.data(), &h, sizeof h);
  }
  std::string write(const std::string& name) const {
    const std::string p = tmp_path(name);
    TraceBuilder::write_bytes(p, bytes);
    return p;
  }
};

std::string error_of(const FlightTrace& f, const std::string& name) {
  try {
    analyze_trace(f.write(name), Options{});
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A ring that wrapped: blocks in the file out of sequence order (a reused block keeps its place), a
// block being reused when the process died (magic and first header zeroed: unused), one emptied and
// renumbered before its first new record (old records behind a zero header), one with a new record
// and an old one behind it. The window is the new records, in sequence order; the whole run's counts
// are the summaries' and the exemplar's, never the window's as well.
TEST(FlightWindow, WrappedRingReadsNewRecordsInSequenceOrder) {
  FlightTrace f(1000);
  f.header([](tf::FileHeader& h) {
    h.flight_blocks_reused = 5;
    h.flight_window_start_ns = kT0 + 300 * kMs;
  });
  f.ring_block(9, {kT0 + 700 * kMs, kT0 + 701 * kMs});
  f.ring_block(7, {kT0 + 500 * kMs, kT0 + 501 * kMs, kT0 + 502 * kMs});
  f.ring_block(8, {kT0 + 600 * kMs});
  f.ring_block(0, {}, 0, true);                     // torn reuse: magic and first header zero, old records after
  f.ring_block(10, {}, tf::kBlockMagicRing, true);  // emptied, renumbered, nothing new yet
  f.ring_block(11, {kT0 + 800 * kMs}, tf::kBlockMagicRing, true);
  const std::string p = f.write("flight_wrapped.awtrace");

  auto t = TraceFile::open(p);
  t->index();
  ASSERT_TRUE(t->flight());
  const FlightWindow& w = t->window();
  EXPECT_TRUE(w.present);
  EXPECT_EQ(w.blocks, 5u);  // the torn one reads as unused
  EXPECT_EQ(w.records, 7u);
  EXPECT_EQ(w.calls, 7u);
  EXPECT_EQ(w.first_ns, kT0 + 500 * kMs);
  EXPECT_EQ(w.last_ns, kT0 + 800 * kMs + 2 * kUs);
  EXPECT_EQ(t->window_first_ns(), kT0 + 500 * kMs);
  EXPECT_EQ(w.blocks_reused, 5u);
  EXPECT_EQ(t->summary_calls(), 1000u);
  // The timeline's walk: the window's copies, in order, neither the exemplar nor the summary's calls.
  std::vector<uint64_t> walked;
  t->for_each_merged([&](const RecordView& r) {
    EXPECT_EQ(r.type, RecordType::Copy);
    walked.push_back(record_time(r));
  });
  const std::vector<uint64_t> want = {kT0 + 500 * kMs, kT0 + 501 * kMs, kT0 + 502 * kMs, kT0 + 600 * kMs,
                                      kT0 + 700 * kMs, kT0 + 701 * kMs, kT0 + 800 * kMs};
  EXPECT_EQ(walked, want);

  // The report: the whole run's 1001 copies, the window's 7, the 994 before it in the summaries only.
  ProcessResult r = analyze_trace(p, Options{});
  EXPECT_EQ(r.process.cuda_calls, 1001u);
  ASSERT_TRUE(r.process.flight.present);
  EXPECT_EQ(r.process.flight.calls, 7u);
  EXPECT_EQ(r.process.flight.calls_before, 994u);
  EXPECT_EQ(r.process.flight.ring_bytes, 8u * tf::kBlockSize);
  EXPECT_EQ(r.process.flight.first_ns, 500 * kMs + kMs);
  bool noted = false;
  for (const auto& n : r.process.notes) noted = noted || n.find("flight-recorder trace") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A window that starts at a reused block's release rather than at its first record.
TEST(FlightWindow, WindowStartsNoEarlierThanTheLastReuse) {
  FlightTrace f(10);
  f.header([](tf::FileHeader& h) {
    h.flight_blocks_reused = 1;
    h.flight_window_start_ns = kT0 + 550 * kMs;
  });
  f.ring_block(3, {kT0 + 500 * kMs, kT0 + 600 * kMs});
  auto t = TraceFile::open(f.write("flight_start.awtrace"));
  t->index();
  EXPECT_EQ(t->window().first_ns, kT0 + 500 * kMs);
  EXPECT_EQ(t->window_first_ns(), kT0 + 550 * kMs);
}

// The ring's metadata is untrusted: each impossible ring is a clear error.
TEST(FlightWindow, ImpossibleRingsAreErrors) {
  {
    FlightTrace f(10);
    f.ring_block(4, {kT0 + 2 * kMs});
    f.ring_block(4, {kT0 + 3 * kMs});
    EXPECT_NE(error_of(f, "dup_seq.awtrace").find("ring block with sequence 4"), std::string::npos);
  }
  {
    FlightTrace f(10, 1);
    f.ring_block(1, {kT0 + 2 * kMs});
    f.ring_block(2, {kT0 + 3 * kMs});
    EXPECT_NE(error_of(f, "too_many.awtrace").find("more than the 1 the header gives it"), std::string::npos);
  }
  {
    FlightTrace f(10);
    f.header([](tf::FileHeader& h) { h.flight_ring_blocks = 0; });
    EXPECT_NE(error_of(f, "no_ring.awtrace").find("flight-recorder ring of 0 blocks"), std::string::npos);
  }
  {
    FlightTrace f(10);
    f.header([](tf::FileHeader& h) { h.config_flags &= ~uint32_t{tf::kConfigSummary}; });
    EXPECT_NE(error_of(f, "no_summary.awtrace").find("without summary mode"), std::string::npos);
  }
  {
    FlightTrace f(10);  // a ring block in a trace that has no ring
    f.header([](tf::FileHeader& h) { h.config_flags &= ~uint32_t{tf::kConfigFlight}; });
    f.ring_block(1, {kT0 + 2 * kMs});
    EXPECT_NE(error_of(f, "not_flight.awtrace").find("bad block magic"), std::string::npos);
  }
  {
    FlightTrace f(10);  // the flag in a trace older than the ring
    f.header([](tf::FileHeader& h) { h.version = 5; });
    EXPECT_NE(error_of(f, "old_flight.awtrace").find("flight-recorder flag in a version-5 trace"), std::string::npos);
  }
  {
    FlightTrace f(10);  // a record that is not a call
    const size_t at = f.ring_block(1, {});
    tf::ThreadInfoRecord ti{};
    ti.h = {static_cast<uint16_t>(RecordType::ThreadInfo), sizeof ti};
    ti.tid = kTid;
    std::memcpy(f.bytes.data() + at + sizeof(tf::BlockHeader), &ti, sizeof ti);
    EXPECT_NE(error_of(f, "ring_meta.awtrace").find("ThreadInfo record in a flight-recorder ring block"),
              std::string::npos);
  }
  {
    FlightTrace f(10);  // a call still in flight
    const size_t at = f.ring_block(1, {kT0 + 2 * kMs});
    tf::CopyRecord c;
    std::memcpy(&c, f.bytes.data() + at + sizeof(tf::BlockHeader), sizeof c);
    c.flags |= tf::kFlagInFlight;
    std::memcpy(f.bytes.data() + at + sizeof(tf::BlockHeader), &c, sizeof c);
    EXPECT_NE(error_of(f, "ring_in_flight.awtrace").find("a call in flight in a flight-recorder ring block"),
              std::string::npos);
  }
  {
    FlightTrace f(10);  // a stack the trace never defines
    const size_t at = f.ring_block(1, {kT0 + 2 * kMs});
    tf::CopyRecord c;
    std::memcpy(&c, f.bytes.data() + at + sizeof(tf::BlockHeader), sizeof c);
    c.stack_id = 99;
    std::memcpy(f.bytes.data() + at + sizeof(tf::BlockHeader), &c, sizeof c);
    EXPECT_NE(error_of(f, "ring_stack.awtrace").find("stack id 99, which the trace never defines"), std::string::npos);
  }
}

// Damage anywhere in the ring's metadata (the header's flight fields, the ring blocks' headers and
// records) gives a report or a clear error, never a crash; the timeline's walk of the window too.
TEST(FlightWindow, DamagedRingNeverCrashes) {
  FlightTrace f(100);
  f.header([](tf::FileHeader& h) {
    h.flight_blocks_reused = 2;
    h.flight_window_start_ns = kT0 + 300 * kMs;
  });
  const size_t a = f.ring_block(5, {kT0 + 500 * kMs, kT0 + 501 * kMs});
  const size_t b = f.ring_block(4, {kT0 + 400 * kMs});
  std::vector<size_t> interesting;
  const size_t flight_fields = offsetof(tf::FileHeader, flight_ring_blocks);
  for (size_t i = 0; i < 4 * 8; ++i) interesting.push_back(flight_fields + i);
  interesting.push_back(offsetof(tf::FileHeader, config_flags) + 1);  // kConfigFlight is bit 10
  for (size_t at : {a, b})
    for (size_t i = 0; i < 256; ++i) interesting.push_back(at + i);
  std::mt19937_64 rng(42);
  int errors = 0;
  const std::vector<uint8_t> good = f.bytes;
  for (int iter = 0; iter < 1500; ++iter) {
    FlightTrace d = f;
    d.bytes = good;
    for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n)
      d.bytes[interesting[rng() % interesting.size()]] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const std::string p = d.write("flight_flip.awtrace");
    try {
      auto t = TraceFile::open(p);
      analyze_trace(*t, Options{});
      t->for_each_merged([](const RecordView&) {});
    } catch (const TraceError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
}
