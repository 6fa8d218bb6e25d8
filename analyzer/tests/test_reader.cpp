// The reader: every kind of damage gives its own clear error, never a crash.
#include "findings/analysis.h"
#include "test_util.h"
#include "read/trace_reader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

TraceBuilder small_trace() {
  TraceBuilder b(42);
  b.thread_info(7, "main");
  b.module(7, "/nonexistent/app", 0, 0x400000, 0x500000);
  uint32_t s = b.stack(7, {0x401000, 0x402000});
  uint32_t k = b.string(7, "_Z6kernelv");
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(7, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, k, t, t + 3 * kUs));
  b.event(7, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                             MemoryKind::Pageable, t + 10 * kUs, t + 5 * kMs, 1 << 20, 0, 0x5000, s));
  b.event(8, RecordType::Sync, TraceBuilder::sync(Api::cudaDeviceSynchronize, Api::cuCtxSynchronize, t, t + kMs, 0, s));
  return b;
}

// Opens, indexes and analyzes; returns the TraceError message ("" when fine).
std::string error_of(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::string p = tmp_path(name);
  TraceBuilder::write_bytes(p, bytes);
  try {
    analyze_trace(p, Options{});
  } catch (const TraceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(p), std::string::npos) << "the error names the file: " << m;
    return m;
  }
  return "";
}

template <class T>
void poke(std::vector<uint8_t>& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

constexpr size_t kBlock0 = tf::kHeaderSize;
constexpr size_t kFirstRecord = kBlock0 + sizeof(tf::BlockHeader);

}  // namespace

TEST(Reader, ValidTraceIsRead) {
  auto b = small_trace();
  std::string p = write_trace(b, "valid.awtrace");
  auto t = TraceFile::open(p);
  t->index();
  EXPECT_TRUE(t->closed_cleanly());
  EXPECT_EQ(t->threads().size(), 2u);
  EXPECT_EQ(t->modules().size(), 1u);
  ASSERT_TRUE(t->stack(1));
  EXPECT_EQ((*t->stack(1))[0], 0x401000u);
  EXPECT_FALSE(t->stack(2));
  ASSERT_TRUE(t->string(1));
  EXPECT_EQ(*t->string(1), "_Z6kernelv");
  EXPECT_EQ(t->event_record_count(), 3u);
  // Merged order is by start time across threads.
  std::vector<uint64_t> times;
  t->for_each_merged([&](const RecordView& r) { times.push_back(record_time(r)); });
  ASSERT_EQ(times.size(), 3u);
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
}

// The merged walk, by the scan (up to 8 threads) and by the loser tree (more): records by time,
// equal times in thread order, each thread's own order kept where its clock goes back.
TEST(Reader, MergedOrderForAnyNumberOfThreads) {
  for (uint32_t threads : {1u, 2u, 5u, 8u, 9u, 17u}) {
    TraceBuilder b(42);
    std::mt19937 rng(threads);
    const uint64_t t0 = b.header().start_monotonic_ns + kMs;
    for (uint32_t i = 0; i < threads; ++i) b.thread_info(100 + i, "worker");
    std::map<uint32_t, std::vector<uint64_t>> keys;  // tid -> merge key of each record, in order
    for (uint32_t n = 0; n < 40 * threads; ++n) {
      const uint32_t tid = 100 + static_cast<uint32_t>(rng() % threads);
      const uint64_t start = t0 + (rng() % 50) * kUs;  // few distinct times: many ties, clocks going back
      b.event(tid, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, start, start + kUs + n));
      auto& k = keys[tid];
      k.push_back(k.empty() ? start : std::max(k.back(), start));
    }
    auto t = TraceFile::open(write_trace(b, "merged_order.awtrace"));
    std::map<uint32_t, size_t> index;  // tid -> its place among the file's threads (ties go in this order)
    t->index_blocks();
    for (size_t i = 0; i < t->threads().size(); ++i) index[t->threads()[i].tid] = i;
    std::vector<std::tuple<uint64_t, size_t, size_t>> want;  // (key, thread, position in the thread)
    for (const auto& [tid, k] : keys)
      for (size_t j = 0; j < k.size(); ++j) want.emplace_back(k[j], index.at(tid), j);
    std::sort(want.begin(), want.end());
    std::vector<std::tuple<uint64_t, size_t, size_t>> got;
    std::map<uint32_t, size_t> seen;
    t->stream_merged([&](const RecordView& r) {
      if (r.type != RecordType::Launch) return;
      got.emplace_back(keys.at(r.tid)[seen[r.tid]], index.at(r.tid), seen[r.tid]);
      ++seen[r.tid];
    });
    EXPECT_EQ(got, want) << threads << " threads";
  }
}

// The pages of the blocks read are given back a window at a time (TraceFile::block_done), also
// while one thread's block holds the window back: its records come last by time, the other
// threads' blocks (interleaved) run far ahead in the file. Every record arrives, in order, with
// its own bytes, and the mapping's resident part stays bounded (well below the file).
TEST(Reader, MappingStaysSmallWhileAThreadLags) {
  TraceBuilder b(42);
  const uint64_t t0 = b.header().start_monotonic_ns + kMs;
  b.event(7, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0, t0 + 1));  // block 0
  constexpr uint64_t kRecords = 600 * (tf::kBlockSize / sizeof(tf::LaunchRecord));             // ~600 blocks
  for (uint64_t n = 0; n < kRecords; ++n) {
    const uint64_t s = t0 + 10 + n;
    b.event(n % 2 ? 9 : 8, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, s, s + n));
  }
  const uint64_t last = t0 + 10 + kRecords;  // thread 7's second record: still in block 0, read last
  b.event(7, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, last, last + 7));
  const std::string p = write_trace(b, "lagging_thread.awtrace");
  auto resident_kib = [&] {  // Rss of the trace's mapping in this process
    std::ifstream smaps("/proc/self/smaps");
    bool in = false;
    for (std::string line; std::getline(smaps, line);) {
      if (line.find(p) != std::string::npos) in = true;
      if (in && line.rfind("Rss:", 0) == 0) return std::stoull(line.substr(4));
    }
    return 0ull;
  };
  for (bool stream : {true, false}) {
    auto t = TraceFile::open(p);
    ASSERT_GT(t->block_count(), 590u);
    if (!stream) t->index();
    uint64_t n = 0, max_kib = 0;
    bool ok = true;
    auto visit = [&](const RecordView& r) {
      const auto& l = r.ref<tf::LaunchRecord>();
      const uint64_t want = n == 0 ? t0 : t0 + 10 + (n - 1);
      if (n == kRecords + 1)
        ok &= l.start_ns == last && l.end_ns == last + 7 && r.tid == 7;
      else if (n > 0)
        ok &= l.start_ns == want && l.end_ns == want + (n - 1) && r.tid == ((n - 1) % 2 ? 9u : 8u);
      if (n % 4096 == 0) max_kib = std::max<uint64_t>(max_kib, resident_kib());
      ++n;
    };
    if (stream)
      t->stream_merged(visit);
    else
      t->for_each_merged(visit);
    EXPECT_EQ(n, kRecords + 2);
    EXPECT_TRUE(ok) << "a record's bytes or order (stream " << stream << ")";
    // The window, the lag (3 threads), the blocks being read, and 4 MiB for mappings of whole large
    // folios (fault-around): ~10 MiB, against the file's 37.5 MiB.
    const uint64_t bound_blocks = TraceFile::kReleaseBlocks + TraceFile::kReleaseLag + 2 * 3 + 3 + 64;
    EXPECT_LE(max_kib, bound_blocks * (tf::kBlockSize / 1024)) << "stream " << stream;
    EXPECT_LE(resident_kib(), 1024u) << "given back at the end (stream " << stream << ")";
  }
}

TEST(Reader, EmptyFile) { EXPECT_NE(error_of({}, "empty.awtrace").find("the file is empty"), std::string::npos); }

TEST(Reader, WrongMagic) {
  auto b = small_trace().bytes();
  b[0] = 'X';
  EXPECT_NE(error_of(b, "magic.awtrace").find("wrong magic"), std::string::npos);
  EXPECT_NE(error_of({'h', 'i'}, "tiny.awtrace").find("wrong magic"), std::string::npos);
}

TEST(Reader, TruncatedHeader) {
  auto b = small_trace().bytes();
  b.resize(100);
  EXPECT_NE(error_of(b, "short.awtrace").find("shorter than the 4096-byte file header"), std::string::npos);
}

TEST(Reader, NewerVersion) {
  auto b = small_trace().bytes();
  poke<uint32_t>(b, offsetof(tf::FileHeader, version), tf::kFormatVersion + 1);
  const auto newer = "trace format version " + std::to_string(tf::kFormatVersion + 1) +
                     " is newer than this asyncwatch supports (" + std::to_string(tf::kFormatVersion) + ")";
  EXPECT_NE(error_of(b, "newer.awtrace").find(newer), std::string::npos);
  poke<uint32_t>(b, offsetof(tf::FileHeader, version), 0);
  EXPECT_NE(error_of(b, "v0.awtrace").find("version 0 is not valid"), std::string::npos);
}

TEST(Reader, HeaderSizes) {
  auto b = small_trace().bytes();
  poke<uint32_t>(b, offsetof(tf::FileHeader, header_size), 512);
  EXPECT_NE(error_of(b, "hs.awtrace").find("header size 512"), std::string::npos);
  b = small_trace().bytes();
  poke<uint32_t>(b, offsetof(tf::FileHeader, block_size), 4096);
  EXPECT_NE(error_of(b, "bs.awtrace").find("block size 4096"), std::string::npos);
  b = small_trace().bytes();
  poke<uint32_t>(b, offsetof(tf::FileHeader, closed), 7);
  EXPECT_NE(error_of(b, "closed.awtrace").find("'closed' is 0x7"), std::string::npos);
}

TEST(Reader, TruncatedBlock) {
  auto b = small_trace().bytes();
  b.resize(b.size() - 1000);
  EXPECT_NE(error_of(b, "trunc.awtrace").find("truncated: the last block has"), std::string::npos);
}

TEST(Reader, MissingClaimedBlocks) {
  auto b = small_trace().bytes();
  poke<uint64_t>(b, offsetof(tf::FileHeader, blocks_claimed), 9);
  EXPECT_NE(error_of(b, "claimed.awtrace").find("9 blocks were claimed but the file holds only 2"), std::string::npos);
}

TEST(Reader, BadBlockMagicAndIndex) {
  auto b = small_trace().bytes();
  poke<uint32_t>(b, kBlock0, 0x12345678);
  EXPECT_NE(error_of(b, "bmagic.awtrace").find("bad block magic 0x12345678"), std::string::npos);
  b = small_trace().bytes();
  poke<uint64_t>(b, kBlock0 + offsetof(tf::BlockHeader, block_index), 5);
  EXPECT_NE(error_of(b, "bindex.awtrace").find("says it is block 5"), std::string::npos);
}

TEST(Reader, BadRecordHeaders) {
  auto b = small_trace().bytes();
  poke<uint16_t>(b, kFirstRecord, 99);
  EXPECT_NE(error_of(b, "rtype.awtrace").find("unknown record type 99"), std::string::npos);
  b = small_trace().bytes();
  poke<uint16_t>(b, kFirstRecord + 2, 13);
  EXPECT_NE(error_of(b, "rsize.awtrace").find("size 13 is not a positive multiple of 8"), std::string::npos);
  b = small_trace().bytes();
  poke<uint16_t>(b, kFirstRecord + 2, 0);
  EXPECT_NE(error_of(b, "rsize0.awtrace").find("size 0"), std::string::npos);
  b = small_trace().bytes();
  poke<uint16_t>(b, kFirstRecord + 2, 32);  // ThreadInfo is 24 bytes
  EXPECT_NE(error_of(b, "rsize32.awtrace").find("ThreadInfo record"), std::string::npos);
}

TEST(Reader, RecordRunsPastBlock) {
  TraceBuilder tb(1);
  tb.thread_info(7, "main");
  auto b = tb.bytes();
  // Put a record header at the very end of block 0 that claims 64 bytes.
  size_t off = kBlock0 + tf::kBlockSize - 8;
  // Fill the gap with a Lost record chain is awkward: instead make the first record jump there.
  poke<uint16_t>(b, kFirstRecord + 2, static_cast<uint16_t>(tf::kBlockSize - 8 - sizeof(tf::BlockHeader)));
  poke<uint16_t>(b, off, static_cast<uint16_t>(tf::RecordType::Lost));
  poke<uint16_t>(b, off + 2, 64);
  std::string e = error_of(b, "past.awtrace");
  EXPECT_TRUE(e.find("run past the end of the block") != std::string::npos ||
              e.find("ThreadInfo record") != std::string::npos)
      << e;
}

TEST(Reader, PythonFramesValidated) {
  {
    TraceBuilder tb(1);
    tf::StackRecord s{};
    s.stack_id = 1;
    s.python_depth = tf::kMaxPythonDepth + 1;
    std::vector<uint64_t> frames(s.python_depth, 0x1);
    tb.raw(7, RecordType::Stack, &s, sizeof s, frames.data(), frames.size() * 8);
    EXPECT_NE(error_of(tb.bytes(), "pydepth.awtrace").find("python depth 33 exceeds the maximum 32"),
              std::string::npos);
  }
  {
    TraceBuilder tb(1);
    tf::PyCodeRecord c{};
    c.filename_len = 4;
    tb.raw(7, RecordType::PyCode, &c, sizeof c, "a.py", 4);
    EXPECT_NE(error_of(tb.bytes(), "pycode.awtrace").find("code id 0"), std::string::npos);
  }
  {
    TraceBuilder tb(1);
    tf::PyCodeRecord c{};
    c.code_id = 1;
    c.filename_len = 12;
    tb.raw(7, RecordType::PyCode, &c, sizeof c, "a.py", 4);  // a word short of what it announces
    EXPECT_NE(error_of(tb.bytes(), "pysize.awtrace").find("size"), std::string::npos);
  }
}

// StackRecord.python_own (v7): a thread's own Python frames, then a lender's. Before v7 the byte
// was python_depth's high one, so it must be 0 there.
TEST(Reader, OwnAndBorrowedPythonFrames) {
  const uint32_t lender = tf::python_lender_encode(4242, false);
  auto trace = [&](uint32_t version, uint32_t own, uint32_t lender_value) {
    TraceBuilder tb(1);
    tb.header().version = version;
    tb.thread_info(7, "pt_autograd_0");
    tb.python_stack(7, {0x401000}, {{1, 0}, {2, 0}, {3, 0}}, lender_value, own);
    return tb;
  };
  {
    std::string p = write_trace(trace(tf::kFormatVersion, 2, lender), "own-borrowed.awtrace");
    auto t = TraceFile::open(p);
    t->index();
    EXPECT_EQ(t->python_frames(1).size(), 3u);
    EXPECT_EQ(t->python_own(1), 2u);
    EXPECT_EQ(t->python_lender(1), lender);
  }
  {
    // A version-6 trace with all its frames borrowed reads as before.
    std::string p = write_trace(trace(6, 0, lender), "v6-borrowed.awtrace");
    auto t = TraceFile::open(p);
    t->index();
    EXPECT_EQ(t->python_own(1), 0u);
    EXPECT_EQ(t->python_lender(1), lender);
  }
  EXPECT_NE(error_of(trace(6, 2, lender).bytes(), "v6-own.awtrace").find("python depth 515 exceeds the maximum 32"),
            std::string::npos);
  EXPECT_NE(error_of(trace(tf::kFormatVersion, 2, 0).bytes(), "own-alone.awtrace")
                .find("2 own Python frames without a lender"),
            std::string::npos);
  EXPECT_NE(
      error_of(trace(tf::kFormatVersion, 3, lender).bytes(), "own-all.awtrace").find("without borrowed Python frames"),
      std::string::npos);
  EXPECT_NE(
      error_of(trace(tf::kFormatVersion, 4, lender).bytes(), "own-more.awtrace").find("without borrowed Python frames"),
      std::string::npos);
}

TEST(Reader, FieldValidation) {
  {
    TraceBuilder tb(1);
    tf::StackRecord s{};
    s.stack_id = 1;
    s.depth = tf::kMaxStackDepth + 1;
    std::vector<uint64_t> frames(s.depth, 0x1000);
    tb.raw(7, RecordType::Stack, &s, sizeof s, frames.data(), frames.size() * 8);
    EXPECT_NE(error_of(tb.bytes(), "depth.awtrace").find("stack depth 65 exceeds the maximum 64"), std::string::npos);
  }
  {
    TraceBuilder tb(1);
    uint64_t t = tb.header().start_monotonic_ns;
    tb.event(7, RecordType::Copy,
             TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                MemoryKind::Pageable, t, t + 5, 1, 0, 0x5000, /*stack*/ 9));
    EXPECT_NE(error_of(tb.bytes(), "stackid.awtrace").find("refers to stack id 9, which the trace never defines"),
              std::string::npos);
  }
  {
    TraceBuilder tb(1);
    uint64_t t = tb.header().start_monotonic_ns;
    auto c = TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                MemoryKind::Pageable, t, t + 5, 1);
    c.api = 9999;
    tb.event(7, RecordType::Copy, c);
    EXPECT_NE(error_of(tb.bytes(), "api.awtrace").find("unknown api id 9999"), std::string::npos);
  }
  {
    TraceBuilder tb(1);
    uint64_t t = tb.header().start_monotonic_ns;
    auto c = TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                MemoryKind::Pageable, t + 10, t, 1);
    tb.add(7, RecordType::Copy, c);
    EXPECT_NE(error_of(tb.bytes(), "times.awtrace").find("is before start time"), std::string::npos);
  }
  {
    TraceBuilder tb(1);
    uint64_t t = tb.header().start_monotonic_ns;
    auto c = TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                MemoryKind::Pageable, t, t + 1, 1);
    c.dst_memory = 17;
    tb.event(7, RecordType::Copy, c);
    EXPECT_NE(error_of(tb.bytes(), "mem.awtrace").find("unknown destination memory kind 17"), std::string::npos);
  }
  {
    TraceBuilder tb(1);
    uint64_t t = tb.header().start_monotonic_ns;
    tb.event(7, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 5, t, t + 1));
    EXPECT_NE(error_of(tb.bytes(), "str.awtrace").find("refers to string id 5"), std::string::npos);
  }
}

TEST(Reader, CrashedTraceWithZeroBlocksIsAnalyzedWithANote) {
  auto b = small_trace();
  b.crashed();
  b.add_zero_blocks(4);
  std::string p = write_trace(b, "crashed.awtrace");
  ProcessResult r = analyze_trace(p, Options{});
  EXPECT_FALSE(r.process.closed_cleanly);
  ASSERT_FALSE(r.process.notes.empty());
  EXPECT_EQ(r.process.notes[0],
            "the process did not exit cleanly (killed or crashed); records up to the last returned call are included");
  // Wall time runs to the last record.
  EXPECT_EQ(r.process.wall_ns, (1 * kMs + 5 * kMs));
}

TEST(Reader, ZeroBlockHeaderWithRecordsIsCorrupt) {
  auto b = small_trace();
  b.add_zero_blocks(1);
  auto bytes = b.bytes();
  size_t last = tf::kHeaderSize + 2 * tf::kBlockSize;
  poke<uint16_t>(bytes, last + sizeof(tf::BlockHeader), 5);
  EXPECT_NE(error_of(bytes, "zeroblock.awtrace").find("the block has no magic (unused) but holds records"),
            std::string::npos);
}

TEST(Reader, BitFlipsNeverCrash) {
  const auto good = small_trace().bytes();
  std::mt19937_64 rng(1234);
  // Flip bits in the parts that hold data: the header's first 256 bytes and the records.
  std::vector<size_t> interesting;
  for (size_t i = 0; i < 256; ++i) interesting.push_back(i);
  for (size_t blk = 0; blk < 2; ++blk)
    for (size_t i = 0; i < 512; ++i) interesting.push_back(tf::kHeaderSize + blk * tf::kBlockSize + i);
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = good;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      size_t pos = interesting[rng() % interesting.size()];
      b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    std::string p = tmp_path("flip.awtrace");
    TraceBuilder::write_bytes(p, b);
    // analyze_traces never throws for a bad trace: it names it in `unreadable`.
    Report r = analyze_traces({p}, Options{});
    EXPECT_EQ(r.processes.size() + r.unreadable.size(), 1u);
    errors += static_cast<int>(r.unreadable.size());
  }
  EXPECT_GT(errors, 100);
}

// The calls the fast path checks from their type's row (TraceFile::fast_call: launches, syncs,
// host-function enqueues, memsets, copies) name each field's problem as the slow path does, the
// first of several in the checks' order, after a valid record of the same type read fast.
TEST(Reader, RowCheckedCallsNameTheirProblems) {
  const auto error_with = [](RecordType type, auto bad, const char* name) {
    TraceBuilder tb(1);
    const uint64_t t = tb.header().start_monotonic_ns;
    auto good = bad;
    good.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
    good.driver_fn = static_cast<uint16_t>(Api::None);
    good.start_ns = t, good.end_ns = t + 5;
    tb.event(7, type, good);
    bad.start_ns = t + 10, bad.end_ns = t + 15;
    tb.event(7, type, bad);
    return error_of(tb.bytes(), name);
  };
  const uint64_t t = 0;
  auto launch = TraceBuilder::launch(Api::cudaLaunchKernel, 0, t, t);
  launch.stream_kind = 200;
  EXPECT_NE(error_with(RecordType::Launch, launch, "row_launch.awtrace").find("unknown stream kind 200"),
            std::string::npos);
  auto sync = TraceBuilder::sync(Api::cudaStreamSynchronize, Api::None, t, t);
  sync.driver_fn = 60000;
  sync.stream_kind = 200;  // (the driver function is checked first)
  EXPECT_NE(error_with(RecordType::Sync, sync, "row_sync.awtrace").find("unknown driver function id 60000"),
            std::string::npos);
  auto enqueue = TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::None, 1, t, t);
  enqueue.stream_kind = 201;
  EXPECT_NE(error_with(RecordType::HostFuncEnqueue, enqueue, "row_enqueue.awtrace").find("unknown stream kind 201"),
            std::string::npos);
  auto copy = TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                 MemoryKind::Pinned, t, t, 1);
  copy.direction = 9;
  EXPECT_NE(error_with(RecordType::Copy, copy, "row_copy.awtrace").find("unknown direction 9"), std::string::npos);
  auto memset = copy;
  memset.direction = static_cast<uint8_t>(Direction::Unknown);
  memset.src_memory = 33;
  EXPECT_NE(error_with(RecordType::Memset, memset, "row_memset.awtrace").find("unknown source memory kind 33"),
            std::string::npos);
}

TEST(Reader, EveryTruncationIsAnErrorOrFine) {
  const auto good = small_trace().bytes();
  for (size_t len = 0; len < good.size(); len += 997) {
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<long>(len));
    std::string e = error_of(b, "cut.awtrace");
    EXPECT_FALSE(e.empty()) << "length " << len;
  }
}

TEST(Reader, DirectoryInputs) {
  std::string dir = tmp_path("dir-in");
  mkdir(dir.c_str(), 0755);
  small_trace().write(dir + "/b.awtrace");
  small_trace().write(dir + "/a.awtrace");
  auto in = expand_trace_inputs({dir});
  ASSERT_EQ(in.paths.size(), 2u);
  EXPECT_NE(in.paths[0].find("a.awtrace"), std::string::npos);
  EXPECT_TRUE(in.unreadable.empty());
  // Inputs that name no trace are each named, with why; the others are still expanded.
  std::string empty = tmp_path("dir-empty");
  mkdir(empty.c_str(), 0755);
  in = expand_trace_inputs({empty, tmp_path("does-not-exist"), dir});
  EXPECT_EQ(in.paths.size(), 2u);
  ASSERT_EQ(in.unreadable.size(), 2u);
  EXPECT_EQ(in.unreadable[0].trace, empty);
  EXPECT_EQ(in.unreadable[0].error, "the directory holds no .awtrace files");
  EXPECT_EQ(in.unreadable[1].error, "No such file or directory");
}

// A trace is input: a Module record naming a FIFO made the analysis wait for ever for a writer
// (libdwfl opened it to read symbols; found by a long fuzz run). Such a module is
// now skipped with a note, and the report is made.
TEST(Reader, ModulePathNamingAFifoDoesNotBlockTheReport) {
  std::string fifo = tmp_path("module.fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  TraceBuilder b(42);
  b.thread_info(7, "main");
  b.module(7, fifo, 0, 0x400000, 0x500000);
  uint32_t s = b.stack(7, {0x401000, 0x402000});
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(7, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                             MemoryKind::Pageable, t, t + 5 * kMs, 1 << 20, 0, 0x5000, s));
  Report r = analyze_traces({write_trace(b, "fifo-module.awtrace")}, Options{});
  EXPECT_FALSE(r.findings.empty());
  ASSERT_EQ(r.processes.size(), 1u);
  bool noted = false;
  for (const std::string& n : r.processes[0].notes) noted = noted || n.find("not a regular file") != std::string::npos;
  EXPECT_TRUE(noted);
  unlink(fifo.c_str());
}

TEST(Reader, UncleanTraceMayClaimMoreBlocksThanItWrote) {
  auto b = small_trace();
  b.crashed();
  auto bytes = b.bytes();
  poke<uint64_t>(bytes, offsetof(tf::FileHeader, blocks_claimed), 9);
  EXPECT_EQ(error_of(bytes, "claimed-unclean.awtrace"), "");
}

TEST(Reader, ClaimedBlockWithoutMagicIsUnused) {
  auto b = small_trace();
  b.crashed();
  b.add_zero_blocks(1);
  auto bytes = b.bytes();
  size_t last = tf::kHeaderSize + 2 * tf::kBlockSize;
  poke<uint32_t>(bytes, last + offsetof(tf::BlockHeader, tid), 77);  // tid and index written, magic not yet
  poke<uint64_t>(bytes, last + offsetof(tf::BlockHeader, block_index), 2);
  EXPECT_EQ(error_of(bytes, "nomagic.awtrace"), "");
}

// ---- version 2: padding, in-band losses, calls in flight; version 1 through the adapter ------

TEST(Reader, PaddingIsSkippedAndInFlightCallsAreCounted) {
  auto b = small_trace();
  tf::PaddingRecord pad{};
  std::vector<uint8_t> zeros(40, 0);
  b.raw(7, RecordType::Padding, &pad, sizeof pad, zeros.data(), zeros.size());  // a cancelled 48-byte reservation
  uint64_t t = b.header().start_monotonic_ns + 20 * kMs;
  auto c = TraceBuilder::copy(Api::cudaMemcpy, Api::cuMemcpyDtoH_v2, Direction::DtoH, MemoryKind::Device,
                              MemoryKind::Pageable, t, 0, 4096, tf::kFlagInFlight);  // end 0: still in the call
  b.add(7, RecordType::Copy, c);
  tf::LostRecord lost{};
  lost.reason = static_cast<uint32_t>(tf::LostReason::SignalHandler);
  lost.count = 3;
  lost.first_lost_ns = t + 1;
  lost.last_lost_ns = t + 2;
  b.add(8, RecordType::Lost, lost);
  auto f = TraceFile::open(write_trace(b, "v2.awtrace"));
  f->index();
  EXPECT_EQ(f->event_record_count(), 3u);  // the in-flight copy is not an event the rules see
  EXPECT_EQ(f->in_flight_records(), 1u);
  EXPECT_EQ(f->lost_in_records(), 3u);
  ASSERT_EQ(f->lost_reports().size(), 1u);
  EXPECT_EQ(f->lost_reports()[0].tid, 8u);
  EXPECT_EQ(f->lost_reports()[0].reason, tf::LostReason::SignalHandler);
  size_t merged = 0;
  f->for_each_merged([&](const RecordView& r) {
    ++merged;
    EXPECT_NE(r.type, RecordType::Padding);
  });
  EXPECT_EQ(merged, 3u);
  size_t scanned = 0;
  f->scan([&](const RecordView& r) { scanned += r.type == RecordType::Padding; });
  EXPECT_EQ(scanned, 0u);
  EXPECT_EQ(error_of(b.bytes(), "v2b.awtrace"), "");
}

TEST(Reader, RecordSizesComeFromTheTable) {
  for (uint16_t type = 1; type < tf::kRecordTypeLimit; ++type) {
    const tf::RecordInfo& info = tf::record_info(type);
    if (info.since == 0) continue;  // an id no row uses (ids may leave gaps: ranges are given out per change)
    if (info.size_rule != tf::SizeRule::Fixed) continue;
    auto b = small_trace();
    std::vector<uint8_t> rec(info.fixed + 8, 0);  // one word too long
    b.raw(7, static_cast<RecordType>(type), rec.data(), rec.size());
    std::string e = error_of(b.bytes(), "size.awtrace");
    EXPECT_NE(e.find(fmt::format("{} record at block offset", info.name)), std::string::npos) << e;
    EXPECT_NE(e.find(fmt::format("(expected {})", info.fixed)), std::string::npos) << e;
  }
}

namespace {
// A version-1 Copy record, as v1 writers laid it out (no CallHead).
struct V1Copy {
  tf::RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t direction, src_memory, dst_memory, stream_kind;
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint64_t start_ns, end_ns, stream, bytes;
};
struct V1Stack {
  tf::RecordHeader h;
  uint32_t stack_id, depth;
};
}  // namespace

TEST(Reader, Version1RecordsAreConverted) {
  TraceBuilder b(42);
  b.header().version = 1;
  b.thread_info(7, "main");
  V1Stack s{};
  s.stack_id = 1;
  s.depth = 2;
  uint64_t frames[2] = {0x401000, 0x402000};
  b.raw(7, RecordType::Stack, &s, sizeof s, frames, sizeof frames);  // frames at offset 12
  uint64_t t = b.header().start_monotonic_ns + kMs;
  V1Copy c{};
  c.api = static_cast<uint16_t>(Api::cudaMemcpyAsync);
  c.driver_fn = static_cast<uint16_t>(Api::cuMemcpyDtoHAsync_v2);
  c.direction = static_cast<uint8_t>(Direction::DtoH);
  c.src_memory = static_cast<uint8_t>(MemoryKind::Device);
  c.dst_memory = static_cast<uint8_t>(MemoryKind::Pageable);
  c.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
  c.flags = tf::kFlagStackCaptured | tf::kFlagInFlight;  // bit 8 meant nothing in v1: ignored
  c.stack_id = 1;
  c.start_ns = t;
  c.end_ns = t + 5 * kMs;
  c.stream = 0x5000;
  c.bytes = 1 << 20;
  b.raw(7, RecordType::Copy, &c, sizeof c);
  b.note_time(c.end_ns);
  auto f = TraceFile::open(write_trace(b, "v1.awtrace"));
  f->index();
  EXPECT_EQ(f->version(), 1u);
  ASSERT_TRUE(f->stack(1));
  EXPECT_EQ(*f->stack(1), (std::vector<uint64_t>{0x401000, 0x402000}));
  std::vector<tf::CopyRecord> copies;
  f->for_each_merged([&](const RecordView& r) {
    ASSERT_EQ(r.type, RecordType::Copy);
    EXPECT_EQ(r.size, sizeof(tf::CopyRecord));
    EXPECT_EQ(r.stored_size, sizeof(V1Copy));
    copies.push_back(r.as<tf::CopyRecord>());
  });
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].api, c.api);
  EXPECT_EQ(copies[0].driver_fn, c.driver_fn);
  EXPECT_EQ(copies[0].direction, c.direction);
  EXPECT_EQ(copies[0].dst_memory, c.dst_memory);
  EXPECT_EQ(copies[0].flags, uint32_t{tf::kFlagStackCaptured});
  EXPECT_EQ(copies[0].stack_id, 1u);
  EXPECT_EQ(copies[0].end_ns - copies[0].start_ns, 5 * kMs);
  EXPECT_EQ(copies[0].stream, 0x5000u);
  EXPECT_EQ(copies[0].bytes, uint64_t{1} << 20);
  EXPECT_EQ(error_of(b.bytes(), "v1b.awtrace"), "");

  // A v1 record with its v1 size wrong, and a type that version 1 did not have.
  auto bad = b;
  V1Copy shortc = c;
  bad.raw(7, RecordType::Copy, &shortc, sizeof shortc - 8);
  EXPECT_NE(error_of(bad.bytes(), "v1c.awtrace").find("Copy record at block offset 0x"), std::string::npos);
  EXPECT_NE(error_of(bad.bytes(), "v1c.awtrace").find("size 48 (expected 56)"), std::string::npos);
  auto newer = b;
  tf::PaddingRecord pad{};
  newer.raw(7, RecordType::Padding, &pad, sizeof pad);
  EXPECT_NE(error_of(newer.bytes(), "v1p.awtrace").find("unknown record type 17 in a version-1 trace"),
            std::string::npos);
}

// Version 5: a block handed on (magic BLK2) holds the parts of several threads, each after a
// Handoff naming it. Every walk (file order, merged and validating, merged after index) gives each
// record its part's thread; a Handoff to thread 0 is an error; BLK2 in an older trace is a bad magic.
TEST(Reader, BlockHandedOnIsReadAsEachThreadsPart) {
  TraceBuilder b(42);
  const uint64_t t0 = b.header().start_monotonic_ns + kMs;
  b.thread_info(7, "first");
  b.event(7, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0, t0 + kUs));  // block 0
  b.thread_info(8, "other");
  b.event(8, RecordType::Launch,
          TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0 + 5 * kUs, t0 + 6 * kUs));  // block 1
  b.event(9, RecordType::Launch,
          TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0 + 9 * kUs, t0 + 10 * kUs));  // block 2
  auto bytes = b.bytes();
  // Thread 9 starts in the rest of block 0 (its later block, 2, comes after it in the file).
  size_t off = kFirstRecord;
  for (;;) {
    tf::RecordHeader h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.type == 0) break;
    off += h.size;
  }
  auto put = [&](auto rec, RecordType type) {
    rec.h = tf::RecordHeader{static_cast<uint16_t>(type), static_cast<uint16_t>(tf::record_size_aligned(sizeof rec))};
    std::memcpy(bytes.data() + off, &rec, sizeof rec);
    off += rec.h.size;
  };
  poke<uint32_t>(bytes, kBlock0, tf::kBlockMagicShared);
  const size_t handoff_at = off;
  tf::HandoffRecord ho{};
  ho.tid = 9;
  put(ho, RecordType::Handoff);
  tf::ThreadInfoRecord ti{};
  ti.tid = 9;
  std::strcpy(ti.name, "late");
  put(ti, RecordType::ThreadInfo);
  put(TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0 + 2 * kUs, t0 + 3 * kUs), RecordType::Launch);
  const std::string p = tmp_path("handed_on.awtrace");
  TraceBuilder::write_bytes(p, bytes);

  const std::vector<std::pair<uint32_t, uint64_t>> want = {
      {7, t0}, {9, t0 + 2 * kUs}, {8, t0 + 5 * kUs}, {9, t0 + 9 * kUs}};
  for (bool single_pass : {true, false}) {
    auto t = TraceFile::open(p);
    std::vector<std::pair<uint32_t, uint64_t>> got;
    auto visit = [&](const RecordView& r) {
      if (r.type == RecordType::Launch) got.emplace_back(r.tid, record_time(r));
    };
    if (single_pass) {
      t->stream_merged(visit);
    } else {
      t->index();
      t->for_each_merged(visit);
    }
    EXPECT_EQ(got, want) << single_pass;
    ASSERT_EQ(t->threads().size(), 3u);
    ASSERT_NE(t->thread_name(9), nullptr);
    EXPECT_EQ(*t->thread_name(9), "late");
    EXPECT_EQ(*t->thread_name(7), "first");
  }
  std::vector<std::pair<uint32_t, RecordType>> scanned;  // file order (dump)
  TraceFile::open(p)->scan([&](const RecordView& r) { scanned.emplace_back(r.tid, r.type); });
  const std::vector<std::pair<uint32_t, RecordType>> in_file = {
      {7, RecordType::ThreadInfo}, {7, RecordType::Launch},     {9, RecordType::Handoff}, {9, RecordType::ThreadInfo},
      {9, RecordType::Launch},     {8, RecordType::ThreadInfo}, {8, RecordType::Launch},  {9, RecordType::Launch}};
  EXPECT_EQ(scanned, in_file);
  EXPECT_EQ(error_of(bytes, "handed_on_ok.awtrace"), "");

  auto to_zero = bytes;
  poke<uint32_t>(to_zero, handoff_at + offsetof(tf::HandoffRecord, tid), 0);
  EXPECT_NE(error_of(to_zero, "handoff0.awtrace").find("thread id 0"), std::string::npos);
  auto unmarked = bytes;
  poke<uint32_t>(unmarked, kBlock0, tf::kBlockMagic);
  EXPECT_NE(error_of(unmarked, "handoff_blk1.awtrace").find("not marked handed on"), std::string::npos);
  auto older = bytes;
  poke<uint32_t>(older, offsetof(tf::FileHeader, version), 4);
  EXPECT_NE(error_of(older, "blk2_v4.awtrace").find("bad block magic"), std::string::npos);
}
