// Unit tests of the tricky logic: configuration parsing, the pinned-range registry, the trace
// writer's block claiming with several threads (read back with a minimal reader), stack
// interning, and the name -> hook table.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "classify/host_memory_classifier.h"
#include "config.h"
#include "cuda_abi.h"
#include "interpose/hook_table.h"
#include "stacks/stack_capture.h"
#include "trace/site_summary.h"
#include "trace/thread_buffer.h"
#include "trace/trace_file.h"
#include "trace/trace_writer.h"
#include "trace_reader.h"

// The hook table points at exported wrappers (AW_EXPORTED_NAME); here they do nothing.
namespace asyncwatch::cuda {
#define AW_STUB(sym, api, pt, record, blocking, types) \
  extern "C" CUresult AW_EXPORTED_NAME(sym) types { return 0; }
AW_DRIVER_HOOKS(AW_STUB)
#undef AW_STUB
}  // namespace asyncwatch::cuda

using namespace asyncwatch;
using namespace asyncwatch::trace;

namespace {

std::map<std::string, std::string> g_env;
std::vector<std::string> g_warnings;
const char* fake_getenv(const char* n) {
  auto it = g_env.find(n);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
void collect_warning(const std::string& w) { g_warnings.push_back(w); }

Config parse(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  g_warnings.clear();
  return parse_config(&fake_getenv, &collect_warning);
}

}  // namespace

TEST(Config, Defaults) {
  Config c = parse({});
  EXPECT_EQ(c.output_dir, ".");
  EXPECT_EQ(c.output_pattern, "asyncwatch-%n-%p.awtrace");
  EXPECT_EQ(c.stacks, StackPolicy::Default);
  EXPECT_EQ(c.launch_stack_threshold_ns, 50'000u);
  EXPECT_EQ(c.evidence, EvidencePolicy::Auto);
  EXPECT_EQ(c.file_mode, 0600u);
  EXPECT_FALSE(c.quiet);
  EXPECT_FALSE(c.disabled);
  EXPECT_TRUE(g_warnings.empty());
}

TEST(Config, PythonFrames) {
  EXPECT_TRUE(parse({}).python_frames);
  EXPECT_TRUE(config_flags(parse({})) & trace::kConfigPythonFrames);
  EXPECT_FALSE(parse({{"ASYNCWATCH_PYTHON", "off"}}).python_frames);
  EXPECT_FALSE(config_flags(parse({{"ASYNCWATCH_PYTHON", "off"}})) & trace::kConfigPythonFrames);
  EXPECT_FALSE(config_flags(parse({{"ASYNCWATCH_STACKS", "none"}})) & trace::kConfigPythonFrames);
  EXPECT_TRUE(g_warnings.empty());
  EXPECT_TRUE(parse({{"ASYNCWATCH_PYTHON", "maybe"}}).python_frames);  // invalid: one warning, the default
  ASSERT_EQ(g_warnings.size(), 1u);
  EXPECT_NE(g_warnings[0].find("ASYNCWATCH_PYTHON"), std::string::npos);
}

TEST(Config, ValidValues) {
  Config c = parse({{"ASYNCWATCH_OUTPUT_DIR", "/tmp/x"},
                    {"ASYNCWATCH_OUTPUT_PATTERN", "t-%p-%h.aw"},
                    {"ASYNCWATCH_STACKS", "all"},
                    {"ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US", "7"},
                    {"ASYNCWATCH_EVIDENCE", "off"},
                    {"ASYNCWATCH_LOG", "debug"},
                    {"ASYNCWATCH_QUIET", "1"},
                    {"ASYNCWATCH_FILE_MODE", "0640"},
                    {"ASYNCWATCH_DISABLE", "1"}});
  EXPECT_EQ(c.output_dir, "/tmp/x");
  EXPECT_EQ(c.output_pattern, "t-%p-%h.aw");
  EXPECT_EQ(c.stacks, StackPolicy::All);
  EXPECT_EQ(c.launch_stack_threshold_ns, 7000u);
  EXPECT_EQ(c.evidence, EvidencePolicy::Off);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.file_mode, 0640u);
  EXPECT_TRUE(c.disabled);
  EXPECT_TRUE(g_warnings.empty());
}

TEST(Config, InvalidValuesWarnOnceEachAndKeepDefaults) {
  Config c = parse({{"ASYNCWATCH_STACKS", "some"},
                    {"ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US", "-3"},
                    {"ASYNCWATCH_EVIDENCE", "yes"},
                    {"ASYNCWATCH_FILE_MODE", "0999"},
                    {"ASYNCWATCH_OUTPUT_PATTERN", "a/b"},
                    {"ASYNCWATCH_LOG", "loud"}});
  EXPECT_EQ(c.stacks, StackPolicy::Default);
  EXPECT_EQ(c.launch_stack_threshold_ns, 50'000u);
  EXPECT_EQ(c.evidence, EvidencePolicy::Auto);
  EXPECT_EQ(c.file_mode, 0600u);
  EXPECT_EQ(c.output_pattern, "asyncwatch-%n-%p.awtrace");
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_EQ(g_warnings.size(), 6u);
}

// ASYNCWATCH_CAPTURE_RANGE, ASYNCWATCH_DELAY, ASYNCWATCH_DURATION.
TEST(Config, CaptureRange) {
  EXPECT_EQ(parse({}).capture, trace::CaptureMode::None);
  Config p = parse({{"ASYNCWATCH_CAPTURE_RANGE", "cudaProfilerApi"}});
  EXPECT_EQ(p.capture, trace::CaptureMode::ProfilerApi);
  Config n = parse({{"ASYNCWATCH_CAPTURE_RANGE", "nvtx:train step"}});
  EXPECT_EQ(n.capture, trace::CaptureMode::Nvtx);
  EXPECT_EQ(n.capture_nvtx_name, "train step");
  Config t = parse({{"ASYNCWATCH_DELAY", "2.5"}, {"ASYNCWATCH_DURATION", "60"}});
  EXPECT_EQ(t.capture, trace::CaptureMode::Time);
  EXPECT_EQ(t.delay_ns, 2'500'000'000u);
  EXPECT_EQ(t.duration_ns, 60'000'000'000u);
  EXPECT_TRUE(g_warnings.empty());
  Config bad = parse({{"ASYNCWATCH_CAPTURE_RANGE", "nvtx:"}, {"ASYNCWATCH_DELAY", "-1"}, {"ASYNCWATCH_DURATION", "0"}});
  EXPECT_EQ(bad.capture, trace::CaptureMode::None);
  EXPECT_EQ(bad.delay_ns, 0u);
  EXPECT_EQ(bad.duration_ns, 0u);
  EXPECT_EQ(g_warnings.size(), 3u);
}

// ASYNCWATCH_GPU_TIMES, and its config flag in the trace header.
TEST(Config, GpuTimes) {
  EXPECT_FALSE(parse({}).gpu_times);
  EXPECT_EQ(config_flags(parse({})) & trace::kConfigGpuTimes, 0u);
  Config on = parse({{"ASYNCWATCH_GPU_TIMES", "1"}});
  EXPECT_TRUE(on.gpu_times);
  EXPECT_NE(config_flags(on) & trace::kConfigGpuTimes, 0u);
  EXPECT_TRUE(g_warnings.empty());
  EXPECT_FALSE(parse({{"ASYNCWATCH_GPU_TIMES", "0"}}).gpu_times);
  EXPECT_TRUE(g_warnings.empty());
  EXPECT_FALSE(parse({{"ASYNCWATCH_GPU_TIMES", "yes"}}).gpu_times);
  EXPECT_EQ(g_warnings.size(), 1u);
}

// ASYNCWATCH_TRACE_LIMIT (the flight recorder): a size, which turns summary mode on; a bad one is one
// warning and a full trace. The size's one parser (trace_format.h) is `asyncwatch run`'s too.
TEST(Config, TraceLimit) {
  EXPECT_EQ(parse({}).trace_limit, 0u);
  Config on = parse({{"ASYNCWATCH_TRACE_LIMIT", "64M"}});
  EXPECT_EQ(on.trace_limit, 64ull << 20);
  EXPECT_TRUE(on.summary);
  EXPECT_NE(config_flags(on) & trace::kConfigFlight, 0u);
  EXPECT_NE(config_flags(on) & trace::kConfigSummary, 0u);
  EXPECT_TRUE(g_warnings.empty());
  for (const char* bad : {"0", "512K", "17G", "1T", "-1M", "64 M", "M", "1.5G", "64MB2", "99999999999999999999"}) {
    Config c = parse({{"ASYNCWATCH_TRACE_LIMIT", bad}});
    EXPECT_EQ(c.trace_limit, 0u) << bad;
    EXPECT_FALSE(c.summary) << bad;
    EXPECT_EQ(config_flags(c) & trace::kConfigFlight, 0u) << bad;
    EXPECT_EQ(g_warnings.size(), 1u) << bad;
  }
  uint64_t v = 0;
  EXPECT_TRUE(trace::parse_trace_limit("1G", &v));
  EXPECT_EQ(v, 1ull << 30);
  EXPECT_TRUE(trace::parse_trace_limit("256MiB", &v));
  EXPECT_EQ(v, 256ull << 20);
  EXPECT_TRUE(trace::parse_trace_limit("1048576", &v));
  EXPECT_EQ(v, 1ull << 20);
  EXPECT_TRUE(trace::parse_trace_limit("16G", &v));
  EXPECT_EQ(v, trace::kMaxTraceLimit);
  EXPECT_TRUE(trace::parse_trace_limit("4096k", &v));
  EXPECT_EQ(v, 4ull << 20);
}

TEST(Config, PatternExpansionIntoABuffer) {
  char buf[64];
  EXPECT_TRUE(expand_output_pattern_to(buf, sizeof buf, "asyncwatch-%n-%p.awtrace", "app", 42, "h", 9));
  EXPECT_STREQ(buf, "asyncwatch-app-42.awtrace");
  char small[8];
  EXPECT_FALSE(expand_output_pattern_to(small, sizeof small, "%n-%p", "application", 42, "h", 9));
  EXPECT_STREQ(small, "applica");  // truncated, still terminated
}

TEST(Config, PatternExpansion) {
  EXPECT_EQ(expand_output_pattern("asyncwatch-%n-%p.awtrace", "app", 42, "h", 9), "asyncwatch-app-42.awtrace");
  EXPECT_EQ(expand_output_pattern("%h_%t_%%_%x", "app", 1, "node", 1700000000), "node_1700000000_%_%x");
}

TEST(PinnedRegistry, InteriorPointersAndRemoval) {
  auto& r = classify::pinned_ranges();
  r.clear();
  r.add(0x10000, 0x1000);
  r.add(0x30000, 0x100);
  r.add(0x20000, 0x2000);
  EXPECT_TRUE(r.contains(0x10000));
  EXPECT_TRUE(r.contains(0x10fff));
  EXPECT_FALSE(r.contains(0x11000));
  EXPECT_TRUE(r.contains(0x21000));
  EXPECT_FALSE(r.contains(0xffff));
  EXPECT_TRUE(r.contains(0x300ff));
  EXPECT_FALSE(r.remove(0x20010));  // only the base pointer unregisters
  EXPECT_TRUE(r.remove(0x20000));
  EXPECT_FALSE(r.contains(0x21000));
  EXPECT_TRUE(r.contains(0x10800));
  EXPECT_EQ(r.size(), 2u);
  r.clear();
}

TEST(PinnedRegistry, GrowsWhileReadersRead) {
  auto& r = classify::pinned_ranges();
  r.clear();
  r.add(0x1000, 0x10);
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0};
  std::thread reader([&] {
    while (!stop.load())
      if (!r.contains(0x1008)) ++misses;
  });
  for (uint64_t i = 0; i < 5000; ++i) r.add(0x100000 + i * 0x100, 0x80);
  for (uint64_t i = 0; i < 5000; i += 2) r.remove(0x100000 + i * 0x100);
  stop = true;
  reader.join();
  EXPECT_EQ(misses.load(), 0);
  EXPECT_TRUE(r.contains(0x100000 + 1 * 0x100 + 0x7f));
  EXPECT_FALSE(r.contains(0x100000 + 2 * 0x100));
  r.clear();
}

TEST(PinnedRegistry, ClassifierFallsBackToDriverQuery) {
  classify::pinned_ranges().clear();
  classify::set_pointer_query([](unsigned n, int* attrs, void** data, uint64_t p) -> int {
    for (unsigned i = 0; i < n; ++i) {
      if (attrs[i] == 2) *static_cast<unsigned*>(data[i]) = p == 0xd000 ? 2u : (p == 0xe000 ? 2u : 0u);
      if (attrs[i] == 8) *static_cast<int*>(data[i]) = p == 0xe000;
    }
    return 0;
  });
  classify::pinned_ranges().add(0x5000, 0x100);
  EXPECT_EQ(classify::classify_pointer(0x5010), MemoryKind::Pinned);
  EXPECT_EQ(classify::classify_pointer(0xd000), MemoryKind::Device);
  EXPECT_EQ(classify::classify_pointer(0xe000), MemoryKind::Managed);
  EXPECT_EQ(classify::classify_pointer(0xf000), MemoryKind::Pageable);
  classify::set_pointer_query(nullptr);
  classify::pinned_ranges().clear();
}

// The classifier remembers the pinned range it found last (per thread): a range unregistered,
// cleared or replaced meanwhile must not be answered from that memory.
TEST(PinnedRegistry, RememberedRangeForgottenWhenTheRegistryChanges) {
  auto& r = classify::pinned_ranges();
  r.clear();
  r.add(0x40000, 0x1000);
  EXPECT_EQ(classify::classify_pointer(0x40010), MemoryKind::Pinned);
  EXPECT_EQ(classify::classify_pointer(0x40ff0), MemoryKind::Pinned);   // from the remembered range
  EXPECT_EQ(classify::classify_pointer(0x41000), MemoryKind::Unknown);  // one past its end
  EXPECT_TRUE(r.remove(0x40000));
  EXPECT_EQ(classify::classify_pointer(0x40010), MemoryKind::Unknown);
  r.add(0x40000, 0x100);  // the same base again, smaller
  EXPECT_EQ(classify::classify_pointer(0x40010), MemoryKind::Pinned);
  EXPECT_EQ(classify::classify_pointer(0x40800), MemoryKind::Unknown);
  r.clear();
  EXPECT_EQ(classify::classify_pointer(0x40010), MemoryKind::Unknown);
  // Another thread's registration changes what this thread may answer from memory.
  r.add(0x50000, 0x100);
  EXPECT_EQ(classify::classify_pointer(0x50010), MemoryKind::Pinned);
  std::thread([&] { EXPECT_TRUE(r.remove(0x50000)); }).join();
  EXPECT_EQ(classify::classify_pointer(0x50010), MemoryKind::Unknown);
  r.clear();
}

// The fast fold's histogram bucket (from the blocked time as a double) is summary_bucket's over the
// whole range it is used for (the constexpr check covers the same values at compile time; this one
// runs the SSE conversion the wrappers use).
TEST(SiteSummary, DoubleBucketIsSummaryBucketFromFourNanosecondsOn) {
  using namespace asyncwatch;
  for (uint64_t ns = site_summary::kFoldMinNs; ns < 100000; ++ns)
    ASSERT_EQ(site_summary::detail::double_bucket(ns), trace::summary_bucket(ns)) << ns;
  for (uint64_t ns = 100000; ns < site_summary::kFoldBelowMaxNs; ns += ns / 7 + 1)
    ASSERT_EQ(site_summary::detail::double_bucket(ns), trace::summary_bucket(ns)) << ns;
  ASSERT_EQ(site_summary::detail::double_bucket(site_summary::kFoldBelowMaxNs - 1),
            trace::summary_bucket(site_summary::kFoldBelowMaxNs - 1));
  EXPECT_EQ(site_summary::fold_range(0), 0u);
  EXPECT_EQ(site_summary::fold_range(3), 0u);
  EXPECT_EQ(site_summary::fold_range(1000), 1000u - site_summary::kFoldMinNs);
  EXPECT_EQ(site_summary::fold_range(~uint64_t{0}), site_summary::kFoldBelowMaxNs - site_summary::kFoldMinNs);
}

// count_into says when a summary is full (its count reached kMaxCount), counts every call into the
// 64-bit count and never more than kMaxCount into it.
TEST(SiteSummary, CountIntoSaysWhenTheSummaryIsFull) {
  using namespace asyncwatch;
  auto r = std::make_unique<trace::SiteSummaryRecord>();
  r->count = site_summary::detail::kMaxCount - 2;
  EXPECT_FALSE(site_summary::detail::count_into(r.get(), 100, 50, trace::summary_bucket(50)));
  EXPECT_EQ(r->count, site_summary::detail::kMaxCount - 1);
  EXPECT_TRUE(site_summary::detail::count_into(r.get(), 200, 60, trace::summary_bucket(60)));
  EXPECT_EQ(r->count, site_summary::detail::kMaxCount);
  EXPECT_EQ(r->total_ns, 110u);
  EXPECT_EQ(r->last_start_ns, 200u);
  EXPECT_EQ(r->histogram[trace::summary_bucket(50)] + r->histogram[trace::summary_bucket(60)], 2u);
}

// A full summary is let go by every site entry that names it (its next calls take fold_slow, which
// starts a new summary), and only by those.
TEST(SiteSummary, FullSummaryIsLetGoByItsSites) {
  using namespace asyncwatch;
  auto full = std::make_unique<trace::SiteSummaryRecord>();
  auto other = std::make_unique<trace::SiteSummaryRecord>();
  site_summary::detail::Slots& t = site_summary::detail::slots();
  const site_summary::detail::Slots saved = t;
  for (uint32_t i = 0; i < site_summary::detail::kSites; ++i) {
    t.sites[i] = i % 3 ? other.get() : full.get();
    t.site_ra[i] = 0x1000 + 8 * i;
  }
  site_summary::detail::summary_full(full.get());
  for (uint32_t i = 0; i < site_summary::detail::kSites; ++i) EXPECT_EQ(t.site_ra[i], i % 3 ? 0x1000 + 8 * i : 0u) << i;
  t = saved;
}

TEST(HookTable, ExactNames) {
  using hooks::Hook;
  Hook h = hooks::find("cuMemcpyHtoDAsync_v2_ptsz");
  ASSERT_NE(h, Hook::Count);
  EXPECT_STREQ(hooks::info(h).name, "cuMemcpyHtoDAsync_v2_ptsz");
  EXPECT_EQ(hooks::info(h).api, Api::cuMemcpyHtoDAsync_v2);
  EXPECT_TRUE(hooks::info(h).per_thread);
  h = hooks::find("cuMemcpyHtoDAsync_v2");
  ASSERT_NE(h, Hook::Count);
  EXPECT_FALSE(hooks::info(h).per_thread);
  EXPECT_EQ(hooks::find("cuMemcpyHtoDAsync"), Hook::Count);  // the v1 ABI is not ours to wrap
  EXPECT_EQ(hooks::find("cuMemcpyHtoDAsync_v2_ptsz_x"), Hook::Count);
  EXPECT_EQ(hooks::find("malloc"), Hook::Count);
  EXPECT_EQ(hooks::info(hooks::find("cuMemcpy_ptds")).api, Api::cuMemcpy);
  EXPECT_EQ(hooks::info(hooks::find("cuStreamEndCapture_ptsz")).api, Api::cuStreamEndCapture);
  for (size_t i = 0; i < hooks::kHookCount; ++i) {
    const auto& hi = hooks::info(static_cast<Hook>(i));
    EXPECT_EQ(hooks::find(hi.name), static_cast<Hook>(i)) << hi.name;
    EXPECT_NE(hi.wrapper, nullptr);
    EXPECT_STRNE(api_name(hi.api), "unknown-api");
  }
}

// cuGetProcAddress's names: a name that some hooked form extends is looked up (dladdr), any
// other passes through without a lookup.
TEST(HookTable, PrefixOfAHookedName) {
  EXPECT_TRUE(hooks::any_starts_with("cuMemcpyHtoDAsync"));   // -> cuMemcpyHtoDAsync_v2(_ptsz)
  EXPECT_TRUE(hooks::any_starts_with("cuGraphInstantiate"));  // -> cuGraphInstantiateWithFlags
  EXPECT_TRUE(hooks::any_starts_with("cuCtxSynchronize"));
  EXPECT_TRUE(hooks::any_starts_with("cuStreamAddCallback_ptsz"));
  EXPECT_FALSE(hooks::any_starts_with("cuDeviceGetAttribute"));
  EXPECT_FALSE(hooks::any_starts_with("cuMemcpyHtoDAsync_v3"));
  EXPECT_FALSE(hooks::any_starts_with("cuZ"));
  EXPECT_FALSE(hooks::any_starts_with("malloc"));
  EXPECT_FALSE(hooks::any_starts_with(nullptr));
  for (size_t i = 0; i < hooks::kHookCount; ++i)
    EXPECT_TRUE(hooks::any_starts_with(hooks::info(static_cast<hooks::Hook>(i)).name));
}

class TraceWriterTest : public ::testing::Test {
 protected:
  static std::string dir_;
  static void SetUpTestSuite() {
    const char* base = getenv("TMPDIR");  // CTest: a directory of the build tree, checked empty afterwards
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/aw-unit-XXXXXX";
    dir_ = mkdtemp(tmpl.data());
    Config c;
    c.output_dir = dir_;
    c.output_pattern = "unit-%p.awtrace";
    c.quiet = true;
    set_config(c);
  }
  // Nothing is left in /tmp: the traces and the directory go.
  static void TearDownTestSuite() {
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') unlink((dir_ + "/" + e->d_name).c_str());
      closedir(d);
    }
    rmdir(dir_.c_str());
  }
};
std::string TraceWriterTest::dir_;

TEST_F(TraceWriterTest, ThreadsClaimBlocksAndEveryRecordReadsBack) {
  ASSERT_TRUE(trace_writer::ensure_open());
  constexpr int kThreads = 8, kPerThread = 20000;  // ~ 8 * 20000 * 32 B = 5 MiB: several segments
  std::vector<std::thread> ts;
  std::vector<uint32_t> tids(kThreads);
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t, &tids] {
      tids[t] = thread_buffer::tid();
      for (int i = 0; i < kPerThread; ++i) {
        HostFuncRunRecord r{};
        r.h.type = static_cast<uint16_t>(RecordType::HostFuncRun);
        r.h.size = sizeof r;
        r.callback_id = static_cast<uint64_t>(t) << 32 | static_cast<uint64_t>(i);
        r.start_ns = static_cast<uint64_t>(i);
        ASSERT_TRUE(thread_buffer::write(&r));
      }
      uint64_t frames[3] = {0x1, 0x2, static_cast<uint64_t>(t % 2)};
      EXPECT_GT(stacks::intern(frames, 3), 0u);
    });
  for (auto& th : ts) th.join();
  std::string path = trace_writer::path();
  trace_writer::close_clean(0);
  aw_test::Trace tr = aw_test::read_trace(path);
  ASSERT_TRUE(tr.ok) << tr.error;
  EXPECT_EQ(tr.header.closed, kClosedCleanly);
  EXPECT_EQ(tr.header.records_lost, 0u);
  EXPECT_EQ(tr.header.exit_status, 0);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kHeaderSize + tr.header.blocks_claimed * kBlockSize);
  EXPECT_EQ((st.st_mode & 0777), 0600u);
  std::map<uint32_t, std::vector<uint64_t>> by_tid;
  for (const auto& rec : tr.records) {
    if (rec.type() != RecordType::HostFuncRun) continue;
    auto r = rec.as<HostFuncRunRecord>();
    EXPECT_EQ(r.callback_id >> 32, 0u + std::find(tids.begin(), tids.end(), rec.tid) - tids.begin());
    by_tid[rec.tid].push_back(r.callback_id & 0xffffffff);
  }
  ASSERT_EQ(by_tid.size(), static_cast<size_t>(kThreads));
  for (auto& [tid, ids] : by_tid) {
    // Blocks are read in file order; a thread's blocks are claimed in order, so its records are too.
    ASSERT_EQ(ids.size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) ASSERT_EQ(ids[i], static_cast<uint64_t>(i));
  }
  EXPECT_EQ(tr.count(RecordType::ThreadInfo), static_cast<size_t>(kThreads));
  EXPECT_EQ(tr.count(RecordType::Stack), 2u);  // two unique stacks, each written once
  // After the clean close nothing more is accepted into new blocks.
  uint64_t idx;
  EXPECT_EQ(trace_writer::claim_block(&idx), nullptr);
}

// A process that leaves main while other threads still make calls: close_clean runs while threads
// claim new blocks (both touch the header's blocks_claimed; the TSan job reported the plain store in
// close_clean racing with claim_block's compare-and-swap). The threads stop by themselves once their
// writes fail after the close; the file must read as closed cleanly and be exactly as long as the
// header says.
TEST_F(TraceWriterTest, CloseWhileThreadsClaimBlocks) {
  trace_writer::after_fork_child(0);  // a fresh trace, as a fork child starts one
  ASSERT_TRUE(trace_writer::ensure_open());
  std::string path = trace_writer::path();
  constexpr int kThreads = 4;
  std::atomic<int> started{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&started] {
      ++started;
      for (uint64_t i = 0;; ++i) {
        HostFuncRunRecord r{};
        r.h.type = static_cast<uint16_t>(RecordType::HostFuncRun);
        r.h.size = sizeof r;
        r.callback_id = i;
        if (!thread_buffer::write(&r)) return;
      }
    });
  while (started.load() < kThreads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  trace_writer::close_clean(0);
  for (auto& th : ts) th.join();
  aw_test::Trace tr = aw_test::read_trace(path);
  ASSERT_TRUE(tr.ok) << tr.error;
  EXPECT_EQ(tr.header.closed, kClosedCleanly);
  EXPECT_GT(tr.count(RecordType::HostFuncRun), 0u);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  // Truncated to the blocks claimed, unless they and the mapped ones fit in the first segment (a
  // slow machine): then the file keeps that segment's length (ShortTraceIsClosedAtTheFirstSegmentsLength).
  const uint64_t claimed = tr.header.blocks_claimed;
  const bool short_trace =
      claimed <= trace_file::kFirstSegmentBlocks && trace_file::mapped_blocks() <= trace_file::kFirstSegmentBlocks;
  EXPECT_EQ(static_cast<uint64_t>(st.st_size),
            kHeaderSize + (short_trace ? trace_file::kFirstSegmentBlocks : claimed) * kBlockSize)
      << claimed << " blocks claimed";
  trace_writer::after_fork_child(0);  // waits for the file thread to let go of the file
  std::remove(path.c_str());
}

// A short process (only the first segment mapped) is closed without the truncation and without
// waiting for the file thread (trace_file::close_at_exit): the file keeps the first segment's
// length, reads as closed cleanly with its exit status, and every record is there.
TEST_F(TraceWriterTest, ShortTraceIsClosedAtTheFirstSegmentsLength) {
  trace_writer::after_fork_child(0);  // a fresh trace
  ASSERT_TRUE(trace_writer::ensure_open());
  std::string path = trace_writer::path();
  for (uint64_t i = 0; i < 100; ++i) {
    HostFuncRunRecord r{};
    r.h.type = static_cast<uint16_t>(RecordType::HostFuncRun);
    r.h.size = sizeof r;
    r.callback_id = i;
    ASSERT_TRUE(thread_buffer::write(&r));
  }
  trace_writer::close_clean(3);
  aw_test::Trace tr = aw_test::read_trace(path);
  ASSERT_TRUE(tr.ok) << tr.error;
  EXPECT_EQ(tr.header.closed, kClosedCleanly);
  EXPECT_EQ(tr.header.exit_status, 3);
  EXPECT_EQ(tr.count(RecordType::HostFuncRun), 100u);
  EXPECT_LE(tr.header.blocks_claimed, trace_file::kFirstSegmentBlocks);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kHeaderSize + trace_file::kFirstSegmentBytes);
  trace_writer::after_fork_child(0);  // waits for the file thread to let go of the file
  std::remove(path.c_str());
}

// reserve/commit (thread_buffer.h): a signal handler that writes while this thread has a record
// reserved and not committed writes into a block of its own (level 1), one more level down the
// record is refused; all committed records read back whole, in each level's order.
namespace {
uint32_t g_handler_written = 0;
bool g_handler_third_refused = false;
HostFuncRunRecord run_record(uint64_t id) {
  HostFuncRunRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::HostFuncRun);
  r.h.size = sizeof r;
  r.callback_id = id;
  return r;
}
void on_usr1(int) {
  // Level 1 (the interrupted thread's reservation is open): two records, whole.
  HostFuncRunRecord a = run_record(1001), b = run_record(1002);
  g_handler_written += thread_buffer::write(&a);
  char* p = thread_buffer::reserve(sizeof(HostFuncRunRecord));  // level 1 open...
  if (p) {
    HostFuncRunRecord c = run_record(1003);
    g_handler_third_refused = thread_buffer::reserve(sizeof(HostFuncRunRecord)) == nullptr;  // ...level 2: no
    memcpy(p + sizeof(RecordHeader), reinterpret_cast<char*>(&c) + sizeof(RecordHeader),
           sizeof c - sizeof(RecordHeader));
    thread_buffer::commit(p, RecordType::HostFuncRun, sizeof c);
    ++g_handler_written;
  }
  g_handler_written += thread_buffer::write(&b);
}
}  // namespace

// Losses are reported in band too: one LostRecord before the thread's next record.
TEST_F(TraceWriterTest, LostCallsAreReportedInBandBeforeTheNextRecord) {
  trace_writer::after_fork_child(0);  // a fresh trace
  ASSERT_TRUE(trace_writer::ensure_open());
  std::string path = trace_writer::path();
  HostFuncRunRecord a = run_record(1), b = run_record(2);
  ASSERT_TRUE(thread_buffer::write(&a));
  uint64_t before = now_ns();
  thread_buffer::note_lost(LostReason::SignalHandler);
  thread_buffer::note_lost(LostReason::NoBlock);
  ASSERT_TRUE(thread_buffer::write(&b));
  ASSERT_TRUE(thread_buffer::write(&a));  // nothing lost since: no second LostRecord
  trace_writer::close_clean(0);
  aw_test::Trace tr = aw_test::read_trace(path);
  ASSERT_TRUE(tr.ok) << tr.error;
  std::vector<RecordType> types;
  for (const auto& rec : tr.records) types.push_back(rec.type());
  EXPECT_EQ(types, (std::vector<RecordType>{RecordType::ThreadInfo, RecordType::HostFuncRun, RecordType::Lost,
                                            RecordType::HostFuncRun, RecordType::HostFuncRun}));
  auto lost = tr.all<LostRecord>(RecordType::Lost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].count, 2u);
  EXPECT_EQ(lost[0].reason, static_cast<uint32_t>(LostReason::SignalHandler));  // the first loss's
  EXPECT_GE(lost[0].first_lost_ns, before);
  EXPECT_GE(lost[0].last_lost_ns, lost[0].first_lost_ns);
}

TEST_F(TraceWriterTest, SignalHandlerWritingBetweenReserveAndCommit) {
  trace_writer::after_fork_child(0);  // a fresh trace
  ASSERT_TRUE(trace_writer::ensure_open());
  std::string path = trace_writer::path();
  HostFuncRunRecord first = run_record(1);
  ASSERT_TRUE(thread_buffer::write(&first));
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, &old);
  char* p = thread_buffer::reserve(sizeof(HostFuncRunRecord));
  ASSERT_NE(p, nullptr);
  raise(SIGUSR1);  // the handler writes while `p` is reserved and empty
  HostFuncRunRecord r = run_record(2);
  memcpy(p + sizeof(RecordHeader), reinterpret_cast<char*>(&r) + sizeof(RecordHeader), sizeof r - sizeof(RecordHeader));
  thread_buffer::commit(p, RecordType::HostFuncRun, sizeof r);
  HostFuncRunRecord last = run_record(3);
  ASSERT_TRUE(thread_buffer::write(&last));
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(g_handler_written, 3u);
  EXPECT_TRUE(g_handler_third_refused);
  trace_writer::close_clean(0);
  aw_test::Trace tr = aw_test::read_trace(path);
  ASSERT_TRUE(tr.ok) << tr.error;
  std::vector<uint64_t> ids;
  for (const auto& rec : tr.records)
    if (rec.type() == RecordType::HostFuncRun) ids.push_back(rec.as<HostFuncRunRecord>().callback_id);
  // The thread's own block (1, 2, 3 in program order) comes first in the file, then the handler's.
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 1001, 1003, 1002}));
}
