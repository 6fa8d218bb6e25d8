// End-to-end: LD_PRELOAD libasyncwatch.so into tests/test_app.cpp running on the fake libcuda,
// then read the trace back and assert on its records.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace_reader.h"

using namespace asyncwatch::trace;
using aw_test::Trace;

namespace {

struct AppRun {
  int status;        // raw wait status
  std::string out;   // stdout
  std::string err;   // stderr
  std::string dir;   // trace directory
  std::vector<std::string> traces;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> list_traces(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 8 && n.substr(n.size() - 8) == ".awtrace") out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string make_dir() {
  char tmpl[] = "/tmp/aw-e2e-XXXXXX";
  return mkdtemp(tmpl);
}

// Runs the test app with LD_PRELOAD and extra environment entries "NAME=value".
AppRun run(const std::vector<std::string>& args, std::vector<std::string> env = {}, std::string dir = "",
        bool preload = true) {
  AppRun r;
  r.dir = dir.empty() ? make_dir() : dir;
  std::string out = r.dir + "/.stdout", err = r.dir + "/.stderr";
  pid_t pid = fork();
  if (pid == 0) {
    // The test's own entries first: getenv returns the first match.
    std::vector<std::string> e = env;
    for (std::string x : {"LD_LIBRARY_PATH=" AW_FAKE_CUDA_DIR, "PATH=/usr/bin:/bin"}) e.push_back(x);
    e.push_back("ASYNCWATCH_OUTPUT_DIR=" + r.dir);
    if (preload) e.push_back("LD_PRELOAD=" AW_PRELOAD_PREFIX AW_PRELOAD_LIB);
    if (*AW_SANITIZER_ENV) e.push_back(AW_SANITIZER_ENV);
    std::vector<char*> ev;
    for (auto& x : e) ev.push_back(x.data());
    ev.push_back(nullptr);
    std::vector<std::string> a = {AW_TEST_APP};
    for (auto& x : args) a.push_back(x);
    std::vector<char*> av;
    for (auto& x : a) av.push_back(x.data());
    av.push_back(nullptr);
    freopen(out.c_str(), "w", stdout);
    freopen(err.c_str(), "w", stderr);
    execve(av[0], av.data(), ev.data());
    _exit(127);
  }
  waitpid(pid, &r.status, 0);
  r.out = slurp(out);
  r.err = slurp(err);
  r.traces = list_traces(r.dir);
  return r;
}

bool exited_ok(const AppRun& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

Trace only_trace(const AppRun& r) {
  EXPECT_EQ(r.traces.size(), 1u) << r.err;
  if (r.traces.empty()) return Trace{};
  Trace t = aw_test::read_trace(r.traces[0]);
  EXPECT_TRUE(t.ok) << t.error;
  return t;
}

std::vector<CopyRecord> copies(const Trace& t) { return t.all<CopyRecord>(RecordType::Copy); }

}  // namespace

TEST(EndToEnd, ProgramWithoutCudaGetsNoTraceAndSameOutput) {
  AppRun r = run({"none"});
  EXPECT_TRUE(exited_ok(r));
  EXPECT_EQ(r.out, "no cuda here\n");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.traces.empty());
}

TEST(EndToEnd, LinkedProgramCopiesClassifiedAndTimed) {
  AppRun r = run({"linked"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_NE(r.err.find("tracing to"), std::string::npos);  // the banner
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  auto c = copies(t);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].bytes, 1000u);
  EXPECT_EQ(c[0].api, static_cast<uint16_t>(Api::cuMemcpyHtoDAsync_v2));
  EXPECT_EQ(c[0].driver_fn, static_cast<uint16_t>(Api::cuMemcpyHtoDAsync_v2));
  EXPECT_EQ(c[0].direction, static_cast<uint8_t>(Direction::HtoD));
  EXPECT_EQ(c[0].src_memory, static_cast<uint8_t>(MemoryKind::Pageable));
  EXPECT_EQ(c[0].dst_memory, static_cast<uint8_t>(MemoryKind::Device));
  EXPECT_EQ(c[0].stream_kind, static_cast<uint8_t>(StreamKind::Explicit));
  EXPECT_TRUE(c[0].flags & kFlagEvidenceChecked);
  EXPECT_TRUE(c[0].flags & kFlagCompletedAtReturn);
  EXPECT_TRUE(c[0].flags & kFlagStackCaptured);
  EXPECT_GT(c[0].stack_id, 0u);
  EXPECT_GE(c[0].end_ns, c[0].start_ns);
  EXPECT_EQ(c[1].src_memory, static_cast<uint8_t>(MemoryKind::Pinned));  // interior of cuMemHostAlloc
  EXPECT_FALSE(c[1].flags & kFlagEvidenceChecked);                       // auto: pinned needs none
  EXPECT_EQ(c[2].direction, static_cast<uint8_t>(Direction::DtoH));
  EXPECT_EQ(c[2].dst_memory, static_cast<uint8_t>(MemoryKind::Pageable));
  EXPECT_EQ(c[2].stream_kind, static_cast<uint8_t>(StreamKind::LegacyDefault));
  EXPECT_EQ(c[3].src_memory, static_cast<uint8_t>(MemoryKind::Pinned));  // registered range
  EXPECT_EQ(c[4].src_memory, static_cast<uint8_t>(MemoryKind::Pageable));  // after unregister
  auto m = t.all<CopyRecord>(RecordType::Memset);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].bytes, 4000u);
  EXPECT_EQ(m[0].dst_memory, static_cast<uint8_t>(MemoryKind::Device));
  auto sc = t.all<StreamCreateRecord>(RecordType::StreamCreate);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].stream_flags, 1u);
  EXPECT_EQ(sc[0].stream, c[0].stream);
  auto mem = t.all<MemoryOpRecord>(RecordType::MemoryOp);
  EXPECT_GE(mem.size(), 5u);
  EXPECT_GE(t.count(RecordType::Module), 3u);
  EXPECT_GE(t.count(RecordType::Stack), 1u);
  auto dev = t.all<DeviceInfoRecord>(RecordType::DeviceInfo);
  ASSERT_EQ(dev.size(), 1u);
  EXPECT_EQ(dev[0].simulated, 1u);
  EXPECT_STREQ(dev[0].name, "asyncwatch fake device");
}

TEST(EndToEnd, GetProcAddressHonoursFlagsAndPassesNullThrough) {
  AppRun r = run({"proc"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_NE(r.out.find("missing=500 ptr=(nil) status=1"), std::string::npos) << r.out;
  Trace t = only_trace(r);
  auto c = copies(t);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].bytes, 111u);
  EXPECT_FALSE(c[0].flags & kFlagPerThreadEntry);
  EXPECT_EQ(c[0].stream_kind, static_cast<uint8_t>(StreamKind::LegacyDefault));
  EXPECT_EQ(c[1].bytes, 222u);
  EXPECT_TRUE(c[1].flags & kFlagPerThreadEntry);  // the driver chose the _ptsz symbol; so did we
  EXPECT_EQ(c[1].stream_kind, static_cast<uint8_t>(StreamKind::PerThreadDefault));
  EXPECT_EQ(c[2].bytes, 333u);
}

TEST(EndToEnd, LaunchNamesInternedOnceAndFirstLaunchFlagged) {
  AppRun r = run({"launch"}, {"ASYNCWATCH_STACKS=all"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  auto l = t.all<LaunchRecord>(RecordType::Launch);
  ASSERT_EQ(l.size(), 3u);
  auto strings = t.all<StringRecord>(RecordType::String);
  ASSERT_EQ(strings.size(), 1u);
  EXPECT_EQ(l[0].kernel_name_id, strings[0].string_id);
  EXPECT_EQ(l[2].kernel_name_id, strings[0].string_id);
  EXPECT_TRUE(l[0].flags & kFlagFirstLaunch);
  EXPECT_FALSE(l[1].flags & kFlagFirstLaunch);
  EXPECT_EQ(l[0].grid[0], 4u);
  EXPECT_EQ(l[0].grid[1], 2u);
  EXPECT_EQ(l[0].block[0], 128u);
  EXPECT_TRUE(l[0].flags & kFlagStackCaptured);
  for (const auto& rec : t.records)
    if (rec.type() == RecordType::String)
      EXPECT_EQ(std::string(rec.bytes.data() + sizeof(StringRecord), strings[0].len), "_Z5dummyPfi");
}

TEST(EndToEnd, DefaultPolicyNoStackForFastLaunch) {
  AppRun r = run({"launch"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto l = only_trace(r).all<LaunchRecord>(RecordType::Launch);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_FALSE(l[1].flags & kFlagStackCaptured);
}

TEST(EndToEnd, HostFunctionsRunRecordedAndStatusPassedThrough) {
  AppRun r = run({"hostfunc"});
  ASSERT_TRUE(exited_ok(r)) << r.out << r.err;  // the app checks that both callbacks ran with status 0
  Trace t = only_trace(r);
  auto enq = t.all<HostFuncEnqueueRecord>(RecordType::HostFuncEnqueue);
  auto runs = t.all<HostFuncRunRecord>(RecordType::HostFuncRun);
  ASSERT_EQ(enq.size(), 2u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].callback_id, enq[0].callback_id);
  EXPECT_GE(runs[0].end_ns - runs[0].start_ns, 1'000'000u);  // it slept 2 ms
  EXPECT_EQ(enq[1].api, static_cast<uint16_t>(Api::cuStreamAddCallback));
  EXPECT_NE(enq[0].user_function, 0u);
}

TEST(EndToEnd, CaptureFlaggedAndNoEvidenceDuringCapture) {
  AppRun r = run({"capture"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  auto c = copies(t);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c[0].flags & kFlagCaptureActive);
  EXPECT_FALSE(c[0].flags & kFlagEvidenceChecked);
  EXPECT_FALSE(c[1].flags & kFlagCaptureActive);
  EXPECT_TRUE(c[1].flags & kFlagEvidenceChecked);
  EXPECT_EQ(t.count(RecordType::Capture), 2u);
}

TEST(EndToEnd, Cuda13CtxSynchronizeV2AndCaptureToGraph) {
  AppRun r = run({"cuda13"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  auto s = t.all<SyncRecord>(RecordType::Sync);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].api, static_cast<uint16_t>(Api::cuCtxSynchronize));
  EXPECT_EQ(s[0].driver_fn, static_cast<uint16_t>(Api::cuCtxSynchronize_v2));
  auto cap = t.all<CaptureRecord>(RecordType::Capture);
  ASSERT_EQ(cap.size(), 2u);
  EXPECT_EQ(cap[0].api, static_cast<uint16_t>(Api::cuStreamBeginCapture_v2));
  EXPECT_EQ(cap[0].driver_fn, static_cast<uint16_t>(Api::cuStreamBeginCaptureToGraph));
  auto c = copies(t);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].flags & kFlagCaptureActive);
  EXPECT_FALSE(c[0].flags & kFlagEvidenceChecked);  // the capture was counted
}

TEST(EndToEnd, DefaultStackPolicyOnlyDoubtfulCopies) {
  {
    AppRun r = run({"linked"});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    auto c = copies(only_trace(r));
    ASSERT_EQ(c.size(), 5u);
    EXPECT_TRUE(c[0].flags & kFlagStackCaptured);   // pageable source
    EXPECT_FALSE(c[1].flags & kFlagStackCaptured);  // pinned, returned at once
    EXPECT_EQ(c[1].stack_id, 0u);
    EXPECT_TRUE(c[2].flags & kFlagStackCaptured);   // pageable destination
    EXPECT_FALSE(c[3].flags & kFlagStackCaptured);  // registered (pinned)
    EXPECT_TRUE(c[4].flags & kFlagStackCaptured);   // pageable again after unregister
  }
  {
    AppRun r = run({"linked"}, {"ASYNCWATCH_STACKS=all"});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    auto c = copies(only_trace(r));
    ASSERT_EQ(c.size(), 5u);
    for (const auto& x : c) EXPECT_TRUE(x.flags & kFlagStackCaptured);
  }
  {
    // A pinned copy that blocked longer than the threshold gets its stack.
    AppRun r = run({"linked"}, {"ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=1", "FAKE_CUDA_COPY_SLEEP_US=200"});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    auto c = copies(only_trace(r));
    ASSERT_EQ(c.size(), 5u);
    EXPECT_TRUE(c[1].flags & kFlagStackCaptured);
  }
}

// The call-site cache must not hand one call site's stack to another when both reach the
// driver from the same place at the same depth (the static runtime's case, seen on the H200).
TEST(EndToEnd, CallSiteCacheTellsSitesBehindOneCallerApart) {
  AppRun r = run({"two_sites"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto c = copies(only_trace(r));
  ASSERT_EQ(c.size(), 20u);
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c[i].flags & kFlagStackCaptured) << i;
    EXPECT_EQ(c[i].bytes, i % 2 ? 200u : 100u);
    EXPECT_EQ(c[i].stack_id, c[i % 2].stack_id) << "copy " << i << " got the other site's stack";
  }
  EXPECT_NE(c[0].stack_id, c[1].stack_id);
}

TEST(EndToEnd, EvidenceNotReadyAndOff) {
  AppRun r = run({"linked"}, {"FAKE_CUDA_INCOMPLETE=1"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto c = copies(only_trace(r));
  ASSERT_FALSE(c.empty());
  EXPECT_TRUE(c[0].flags & kFlagEvidenceChecked);
  EXPECT_FALSE(c[0].flags & kFlagCompletedAtReturn);
  AppRun off = run({"linked"}, {"ASYNCWATCH_EVIDENCE=off", "ASYNCWATCH_STACKS=none"});
  auto c2 = copies(only_trace(off));
  ASSERT_FALSE(c2.empty());
  EXPECT_FALSE(c2[0].flags & kFlagEvidenceChecked);
  EXPECT_FALSE(c2[0].flags & kFlagStackCaptured);
}

TEST(EndToEnd, BlockedTimeMeasured) {
  AppRun r = run({"kill", "3"}, {"FAKE_CUDA_COPY_SLEEP_US=20000"});
  auto c = copies(only_trace(r));
  ASSERT_EQ(c.size(), 3u);
  for (auto& x : c) EXPECT_GE(x.end_ns - x.start_ns, 20'000'000u);
}

TEST(EndToEnd, ErrnoPreserved) {
  AppRun r = run({"errno"});
  EXPECT_TRUE(exited_ok(r)) << r.out << r.err;
  AppRun bare = run({"errno"}, {}, "", false);
  EXPECT_EQ(r.out, bare.out);
}

TEST(EndToEnd, SigkillKeepsEveryReturnedCall) {
  AppRun r = run({"kill", "5000"});
  ASSERT_TRUE(WIFSIGNALED(r.status));
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, 0u);  // the reader can tell it was not closed cleanly
  EXPECT_EQ(copies(t).size(), 5000u);
}

TEST(EndToEnd, AbortKeepsEveryReturnedCall) {
  AppRun r = run({"abort", "77"});
  ASSERT_TRUE(WIFSIGNALED(r.status));
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, 0u);
  EXPECT_EQ(copies(t).size(), 77u);
}

TEST(EndToEnd, UnderscoreExitClosesCleanly) {
  AppRun r = run({"exit_"});
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 7);
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(t.header.exit_status, 7);
  EXPECT_EQ(copies(t).size(), 5u);
}

TEST(EndToEnd, ForkChildGetsItsOwnTrace) {
  AppRun r = run({"fork"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  ASSERT_EQ(r.traces.size(), 2u);
  Trace a = aw_test::read_trace(r.traces[0]), b = aw_test::read_trace(r.traces[1]);
  const Trace& parent = a.header.parent_pid_if_forked == 0 ? a : b;
  const Trace& child = a.header.parent_pid_if_forked == 0 ? b : a;
  EXPECT_EQ(child.header.parent_pid_if_forked, parent.header.pid);
  EXPECT_EQ(copies(parent).size(), 5u);
  EXPECT_EQ(copies(child).size(), 4u);
  EXPECT_EQ(parent.header.closed, kClosedCleanly);
  EXPECT_EQ(child.header.closed, kClosedCleanly);
  EXPECT_GE(child.count(RecordType::Module), 1u);
}

TEST(EndToEnd, ExecChildTracedEvenWithItsOwnEnvironment) {
  AppRun r = run({"exec"}, {"ASYNCWATCH_OUTPUT_PATTERN=exec-%p.awtrace"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  ASSERT_EQ(r.traces.size(), 2u);  // same pid: the second one gets a suffix
  size_t total = 0;
  for (auto& p : r.traces) {
    Trace t = aw_test::read_trace(p);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    total += copies(t).size();
  }
  EXPECT_EQ(total, 1u + 5u);
}

TEST(EndToEnd, UnwritableDirectoryLeavesAppUnaffectedWithOneWarning) {
  AppRun r = run({"linked"}, {"ASYNCWATCH_OUTPUT_DIR=/proc/no/such/dir"});
  EXPECT_TRUE(exited_ok(r));
  size_t n = 0;
  for (size_t p = r.err.find("cannot create trace file"); p != std::string::npos;
       p = r.err.find("cannot create trace file", p + 1))
    ++n;
  EXPECT_EQ(n, 1u) << r.err;
}

TEST(EndToEnd, PrecreatedSymlinkNotFollowed) {
  std::string dir = make_dir();
  std::string victim = dir + "/victim";
  { std::ofstream(victim) << "keep"; }
  // The name the first trace would get: the pattern without %p so it is predictable.
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/fixed.awtrace").c_str()), 0);
  AppRun r = run({"linked"}, {"ASYNCWATCH_OUTPUT_PATTERN=fixed.awtrace"}, dir);
  EXPECT_TRUE(exited_ok(r));
  EXPECT_EQ(slurp(victim), "keep");
  struct stat st;
  ASSERT_EQ(lstat((dir + "/fixed.awtrace").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(list_traces(dir).size(), 2u);  // the symlink and fixed.1.awtrace
  EXPECT_TRUE(aw_test::read_trace(dir + "/fixed.1.awtrace").ok);
}

TEST(EndToEnd, FileModeHonoured) {
  AppRun r = run({"linked"}, {"ASYNCWATCH_FILE_MODE=0640"});
  ASSERT_EQ(r.traces.size(), 1u);
  struct stat st;
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(EndToEnd, DisabledRecordsNothing) {
  AppRun r = run({"linked"}, {"ASYNCWATCH_DISABLE=1"});
  EXPECT_TRUE(exited_ok(r));
  EXPECT_TRUE(r.traces.empty());
}

TEST(EndToEnd, ManyThreadsNoLoss) {
  AppRun r = run({"threads", "8"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  EXPECT_EQ(copies(t).size(), 8u * 2000u);
  EXPECT_EQ(t.header.records_lost, 0u);
}

// Per-thread and per-kind counts of the copy records of a (possibly huge) trace.
struct CopyCounts {
  FileHeader header{};
  bool ok = false;
  uint64_t total = 0, pinned = 0, pageable = 0, other = 0;
  std::map<uint32_t, uint64_t> per_tid;
  std::map<uint64_t, uint64_t> per_bytes;
};

CopyCounts count_copies(const std::string& path) {
  CopyCounts c;
  c.ok = aw_test::for_each_record(path, &c.header, [&](uint32_t tid, const char* p, size_t n) {
    RecordHeader h;
    memcpy(&h, p, sizeof h);
    if (static_cast<RecordType>(h.type) != RecordType::Copy) return;
    CopyRecord r{};
    memcpy(&r, p, std::min(n, sizeof r));
    ++c.total;
    ++c.per_tid[tid];
    ++c.per_bytes[r.bytes];
    if (r.src_memory == static_cast<uint8_t>(MemoryKind::Pinned)) ++c.pinned;
    else if (r.src_memory == static_cast<uint8_t>(MemoryKind::Pageable)) ++c.pageable;
    else ++c.other;
  });
  return c;
}

// Issue 7, stress: 32 threads x 100,000 intercepted calls (pinned and pageable 64-byte
// cuMemcpyHtoDAsync_v2 alternating) through the fake driver, default settings. Every call is in the
// trace, once, under its own thread; nothing lost; closed cleanly. A deadlock ends the app with
// SIGALRM (its own 120 s alarm) and fails the status check. Sanitizer builds run 1/10 of the calls.
TEST(EndToEnd, StressThirtyTwoThreadsExactCounts) {
  const int threads = 32;
  const int calls = *AW_SANITIZER_ENV ? 10000 : 100000;
  auto t0 = std::chrono::steady_clock::now();
  AppRun r = run({"threads", std::to_string(threads), std::to_string(calls)}, {"ASYNCWATCH_QUIET=1"});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(exited_ok(r)) << "status " << r.status << " " << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(r.traces.size(), 1u);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  const uint64_t expected = uint64_t(threads) * uint64_t(calls);
  EXPECT_EQ(c.total, expected);
  EXPECT_EQ(c.pinned, expected / 2);
  EXPECT_EQ(c.pageable, expected / 2);
  EXPECT_EQ(c.other, 0u);
  EXPECT_EQ(c.header.records_lost, 0u);
  EXPECT_EQ(c.header.closed, kClosedCleanly);  // exit_status stays -1: a return from main is not seen
  // One trace thread per application thread (the main thread makes no copy), each with all of its calls.
  size_t with_copies = 0;
  for (auto& [tid, n] : c.per_tid)
    if (n) {
      ++with_copies;
      EXPECT_EQ(n, uint64_t(calls)) << "tid " << tid;
    }
  EXPECT_EQ(with_copies, size_t(threads));
  RecordProperty("app_seconds", std::to_string(secs));
  printf("[ stress ] %d threads x %d calls: app ran %.2f s\n", threads, calls, secs);
}

int count_of(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Issue 7, output trouble: RLIMIT_FSIZE, set by the app before its first CUDA call, stops the
// trace after its first 4 MiB segment (limit 6 MiB; 200,000 copies need ~11 MiB). The app must
// see nothing: no SIGXFSZ, exit 0, the same stdout as without asyncwatch. asyncwatch warns once,
// the trace stays readable, and the header counts what it could not write.
TEST(EndToEnd, FileSizeLimitStopsTracingNotTheApp) {
  const int calls = 200000;
  AppRun r = run({"fsize", std::to_string(6 << 20), std::to_string(calls)});
  AppRun bare = run({"fsize", std::to_string(6 << 20), std::to_string(calls)}, {}, "", false);
  ASSERT_FALSE(WIFSIGNALED(r.status)) << "killed by signal " << WTERMSIG(r.status);
  EXPECT_TRUE(exited_ok(r)) << r.err;
  EXPECT_TRUE(exited_ok(bare));
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
  EXPECT_EQ(count_of(r.err, "RLIMIT_FSIZE"), 1) << r.err;
  ASSERT_EQ(r.traces.size(), 1u);
  struct stat st;
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_LE(st.st_size, 6 << 20);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  EXPECT_GT(c.total, 0u);        // the first segment's records are there
  EXPECT_LT(c.total, uint64_t(calls));
  EXPECT_GT(c.header.records_lost, 0u);
  EXPECT_EQ(c.header.closed, kClosedCleanly);
  printf("[ fsize  ] %llu copies written, records_lost=%llu of %d calls\n", (unsigned long long)c.total,
         (unsigned long long)c.header.records_lost, calls);
}

// What docs/trace-format.md says records_lost means: every call after tracing stopped is a record
// lost, so written + lost covers every call. (Before the fix, calls after the stop were neither
// written nor counted: 74,860 written + 1 lost of 200,000 calls.)
TEST(EndToEnd, FileSizeLimitCountsEveryUnrecordedCall) {
  const int calls = 200000;
  AppRun r = run({"fsize", std::to_string(6 << 20), std::to_string(calls)}, {"ASYNCWATCH_QUIET=1"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  ASSERT_EQ(r.traces.size(), 1u);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  EXPECT_GE(c.total + c.header.records_lost, uint64_t(calls));
  EXPECT_LE(c.total + c.header.records_lost, uint64_t(calls) + 16);  // + the set-up calls at most
}

// The same with the limit far below the first segment (256 KiB): only the header fits.
TEST(EndToEnd, TinyFileSizeLimitStopsTracingNotTheApp) {
  AppRun r = run({"fsize", std::to_string(256 << 10), "1000"});
  AppRun bare = run({"fsize", std::to_string(256 << 10), "1000"}, {}, "", false);
  ASSERT_FALSE(WIFSIGNALED(r.status)) << "killed by signal " << WTERMSIG(r.status);
  EXPECT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
  ASSERT_EQ(r.traces.size(), 1u);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.total, 0u);
  EXPECT_GE(c.header.records_lost, 1000u);  // every copy: none fit
  EXPECT_EQ(c.header.closed, kClosedCleanly);
}

// Issue 7, bad configuration: every ASYNCWATCH_* variable that is validated set to garbage at
// once (ASYNCWATCH_OUTPUT_DIR is not validated: a bad directory is the unwritable-directory case
// above). One warning per variable, the defaults are used, and the trace is still written.
TEST(EndToEnd, AllVariablesGarbageAtOnceWarnEachAndUseDefaults) {
  const std::vector<std::string> bad = {
      "ASYNCWATCH_OUTPUT_PATTERN=../escape/%p", "ASYNCWATCH_STACKS=bogus",
      "ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=12abc", "ASYNCWATCH_EVIDENCE=maybe",
      "ASYNCWATCH_LOG=loud", "ASYNCWATCH_QUIET=yes",
      "ASYNCWATCH_FILE_MODE=rw-r--r--", "ASYNCWATCH_DISABLE=true"};
  AppRun r = run({"linked"}, bad);
  AppRun bare = run({"linked"}, {}, "", false);
  EXPECT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, bare.out);
  for (const std::string& kv : bad) {
    std::string name = kv.substr(0, kv.find('='));
    EXPECT_EQ(count_of(r.err, "invalid " + name + "='"), 1) << name << "\n" << r.err;
  }
  EXPECT_EQ(count_of(r.err, "invalid "), int(bad.size())) << r.err;
  EXPECT_EQ(count_of(r.err, "tracing to"), 1) << r.err;  // QUIET default: the banner
  ASSERT_EQ(r.traces.size(), 1u);                          // DISABLE default: traced
  EXPECT_NE(r.traces[0].find("/asyncwatch-aw_test_app-"), std::string::npos) << r.traces[0];  // default pattern
  struct stat st;
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // FILE_MODE default
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(t.header.launch_stack_threshold_ns, 50'000u);  // threshold default
  auto c = copies(t);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_TRUE(c[0].flags & kFlagStackCaptured);    // STACKS default: pageable copy has a stack
  EXPECT_FALSE(c[1].flags & kFlagStackCaptured);   // ... a quick pinned copy none
  EXPECT_TRUE(c[0].flags & kFlagEvidenceChecked);  // EVIDENCE default (auto): pageable checked
  EXPECT_FALSE(c[1].flags & kFlagEvidenceChecked); // ... pinned not
}

// Issue 7, Python multiprocessing-style fork: the parent makes calls, forks 4 children that make
// calls while the parent makes its own, and each child leaves through _exit (the clean close path
// of the _exit interposer). Every process's trace holds exactly its own calls: the copies' sizes
// tell the processes apart (parent 64 before the fork and 65 after, child k 100+k).
TEST(EndToEnd, MultiprocessingStyleForkEachTraceHasExactlyItsOwnRecords) {
  const int kids = 4, calls = 20000;
  AppRun r = run({"forks", std::to_string(kids), std::to_string(calls)}, {"ASYNCWATCH_QUIET=1"});
  ASSERT_TRUE(exited_ok(r)) << r.out << r.err;
  ASSERT_EQ(r.traces.size(), size_t(kids + 1)) << r.err;
  uint64_t parent_pid = 0;
  std::map<uint64_t, int> seen_bytes;  // copy size -> number of traces holding it
  std::vector<CopyCounts> all;
  for (auto& p : r.traces) {
    all.push_back(count_copies(p));
    CopyCounts& c = all.back();
    ASSERT_TRUE(c.ok) << p;
    EXPECT_EQ(c.header.closed, kClosedCleanly) << p;
    EXPECT_EQ(c.header.records_lost, 0u) << p;
    if (c.header.parent_pid_if_forked == 0) parent_pid = c.header.pid;
    for (auto& [bytes, n] : c.per_bytes) ++seen_bytes[bytes];
  }
  ASSERT_NE(parent_pid, 0u);
  for (auto& c : all) {
    if (c.header.pid == parent_pid) {
      EXPECT_EQ(c.header.parent_pid_if_forked, 0u);
      ASSERT_EQ(c.per_bytes.size(), 2u);
      EXPECT_EQ(c.per_bytes[64], 1000u);
      EXPECT_EQ(c.per_bytes[65], uint64_t(calls));
      EXPECT_EQ(c.total, 1000u + calls);
    } else {
      EXPECT_EQ(c.header.parent_pid_if_forked, parent_pid);
      ASSERT_EQ(c.per_bytes.size(), 1u) << "pid " << c.header.pid;  // nothing of the parent's or a sibling's
      uint64_t bytes = c.per_bytes.begin()->first;
      EXPECT_GE(bytes, 100u);
      EXPECT_LT(bytes, 100u + kids);
      EXPECT_EQ(c.total, uint64_t(calls));
    }
  }
  for (auto& [bytes, n] : seen_bytes) EXPECT_EQ(n, 1) << bytes << "-byte copies in " << n << " traces";
  EXPECT_EQ(seen_bytes.size(), size_t(2 + kids));
}

TEST(EndToEnd, QuietHasNoBanner) {
  AppRun r = run({"linked"}, {"ASYNCWATCH_QUIET=1"});
  EXPECT_TRUE(exited_ok(r));
  EXPECT_EQ(r.err, "");
}

TEST(EndToEnd, RtldNextResolvedRelativeToTheCaller) {
  AppRun r = run({"rtld_next"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  // Searching after the executable finds libasyncwatch first (it is preloaded right after it);
  // a search relative to libasyncwatch itself would have found libc's.
  EXPECT_NE(r.out.find("dlsym from " AW_PRELOAD_LIB), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("_exit from " AW_PRELOAD_LIB), std::string::npos) << r.out;
  EXPECT_TRUE(r.traces.empty());
}
