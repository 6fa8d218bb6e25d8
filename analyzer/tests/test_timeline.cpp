// The GPU overlap figures' interval arithmetic and the protobuf encoding of the Perfetto writer, its
// interning included (the whole files are decoded by analyzer/tests/timeline/decode_perfetto.py in
// apps.gpu_timeline and timeline.perfetto-decoded).
#include "timeline/gpu_overlap.h"
#include "timeline/perfetto_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace asyncwatch;

TEST(GpuOverlap, BusyAndIdleWhileTheHostWaited) {
  GpuOverlap o;
  // Stream 7: busy [100, 200) and [150, 300) (overlapping: union 200), then [400, 500).
  o.span(7, "stream 0x7", 100, 200);
  o.span(7, "stream 0x7", 150, 300);
  o.span(7, "stream 0x7", 400, 500);
  o.span(9, "stream 0x9", 0, 10);
  // Pageable copies on stream 7 blocked the host [250, 450): busy 50 + 50, idle 100.
  o.flagged(FindingId::PageableAsyncCopy, 7, 250, 350);
  o.flagged(FindingId::PageableAsyncCopy, 7, 300, 450);    // overlaps the first (another thread)
  o.flagged(FindingId::PageableAsyncCopy, 9, 1000, 2000);  // on the other stream: not stream 7's
  auto f = o.figures();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].stream, "stream 0x7");  // most busy first
  EXPECT_EQ(f[0].spans, 3u);
  EXPECT_EQ(f[0].busy_ns, 300u);
  EXPECT_EQ(f[0].first_ns, 100u);
  EXPECT_EQ(f[0].last_ns, 500u);
  ASSERT_EQ(f[0].rules.size(), 1u);
  EXPECT_EQ(f[0].rules[0].calls, 2u);
  EXPECT_EQ(f[0].rules[0].host_blocked_ns, 200u);
  EXPECT_EQ(f[0].rules[0].gpu_busy_ns, 100u);
  EXPECT_EQ(f[0].rules[0].gpu_idle_ns, 100u);
  ASSERT_EQ(f[1].rules.size(), 1u);
  EXPECT_EQ(f[1].rules[0].gpu_busy_ns, 0u);
  EXPECT_EQ(f[1].rules[0].gpu_idle_ns, 1000u);
  auto lines = gpu_overlap_lines(f, true);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_NE(lines[1].find("[pageable-async-copy]"), std::string::npos) << lines[1];
  EXPECT_TRUE(gpu_overlap_lines({}, false).empty());
  EXPECT_EQ(gpu_overlap_lines({}, true).size(), 1u);
}

TEST(PerfettoWriter, WireEncoding) {
  perfetto::Message m;
  m.u64(1, 300);  // tag 0x08, varint 300 = ac 02
  m.str(2, "hi");
  m.fixed64(3, 0x0102030405060708ull);
  const std::string want = std::string("\x08\xac\x02\x12\x02hi\x19\x08\x07\x06\x05\x04\x03\x02\x01", 16);
  EXPECT_EQ(m.bytes(), want);
  perfetto::Message big;
  big.u64(1, UINT64_MAX);  // 10 bytes of varint
  EXPECT_EQ(big.bytes().size(), 11u);
}

namespace {
size_t occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(PerfettoWriter, NamesInternedOncePerSequence) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  ASSERT_NE(f, nullptr);
  {
    perfetto::Writer w(f);
    w.thread_track(2, 1, 1, "main (tid 1)");
    const perfetto::Arg args[2] = {{"kernel", "saxpy_kernel_name"}, {"grid_size_annotation", {}, 7, false}};
    for (uint64_t i = 0; i < 3; ++i)
      w.slice(2, 100 * i, 10, "cudaLaunchKernel saxpy_kernel_name", "launch,blocked", args, 2);
    w.flush();
  }
  std::fclose(f);
  const std::string out(data, size);
  std::free(data);
  // Three slices, each text once: the first slice's packet interns it, the others refer to its iid.
  EXPECT_EQ(occurrences(out, "cudaLaunchKernel saxpy_kernel_name"), 1u);
  EXPECT_EQ(occurrences(out, "launch,blocked"), 1u);
  EXPECT_EQ(occurrences(out, "grid_size_annotation"), 1u);
  EXPECT_EQ(occurrences(out, "saxpy_kernel_name"), 2u);  // the event name's and the annotation value's
  // The first packet clears the sequence's incremental state: sequence_flags (field 13) = 1.
  EXPECT_NE(out.find(std::string("\x68\x01", 2)), std::string::npos);
}

TEST(PerfettoWriter, TextsBeyondTheBoundWrittenInFull) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  ASSERT_NE(f, nullptr);
  {
    perfetto::Writer w(f, 2);  // two texts of each kind interned at most
    w.thread_track(2, 1, 1, "main (tid 1)");
    for (const char* name :
         {"first_slice_name", "second_slice_name", "third_slice_name", "third_slice_name", "first_slice_name"})
      w.slice(2, 0, 10, name, "", nullptr, 0);
    w.flush();
  }
  std::fclose(f);
  const std::string out(data, size);
  std::free(data);
  EXPECT_EQ(occurrences(out, "first_slice_name"), 1u);  // interned: once
  EXPECT_EQ(occurrences(out, "second_slice_name"), 1u);
  EXPECT_EQ(occurrences(out, "third_slice_name"), 2u);  // the table was full: in full, each time
}
