// End-to-end: LD_PRELOAD libasyncwatch.so into tests/test_app.cpp running on the fake libcuda,
// then read the trace back and assert on its records.
#include <dirent.h>
#include <grp.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "deny_unshare.h"
#include "trace_reader.h"

using namespace asyncwatch::trace;
using aw_test::Trace;

namespace {

struct AppRun {
  int status;       // raw wait status
  std::string out;  // stdout
  std::string err;  // stderr
  std::string dir;  // trace directory
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

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string& name : dir_entries(path)) remove_tree(path + "/" + name);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

// Every directory a test makes is removed when the test ends (traces of up to tens of MB; nothing
// is left in /tmp), unless AW_KEEP_TEST_DIRS=1 asks to keep them for a look.
std::vector<std::string>& test_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

// Under $TMPDIR when set (CTest sets one in the build tree and checks that it ends up empty), else /tmp.
std::string make_dir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/aw-e2e-XXXXXX";
  std::string d = mkdtemp(tmpl.data());
  test_dirs().push_back(d);
  return d;
}

class RemoveTestDirs : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo&) override {
    const char* keep = getenv("AW_KEEP_TEST_DIRS");
    if (!keep || strcmp(keep, "1") != 0)
      for (const std::string& d : test_dirs()) remove_tree(d);
    test_dirs().clear();
  }
};
const bool g_remove_test_dirs = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new RemoveTestDirs);
  return true;
}();

// The environment of a program under test: the test's own entries first (getenv returns the first
// match), then the fake driver's directory, the trace directory and LD_PRELOAD.
std::vector<std::string> app_environment(const std::vector<std::string>& env, const std::string& trace_dir,
                                         bool preload) {
  std::vector<std::string> e = env;
  for (std::string x : {"LD_LIBRARY_PATH=" AW_FAKE_CUDA_DIR, "PATH=/usr/bin:/bin"}) e.push_back(x);
  e.push_back("ASYNCWATCH_OUTPUT_DIR=" + trace_dir);
  if (preload) e.push_back("LD_PRELOAD=" AW_PRELOAD_PREFIX AW_PRELOAD_LIB);
  if (*AW_SANITIZER_ENV) e.push_back(AW_SANITIZER_ENV);
  return e;
}

// In a forked child: stdout and stderr to files, the descriptors in `closed` ("0", "12"...) closed,
// then execve. Never returns.
[[noreturn]] void exec_program(std::vector<std::string> argv, std::vector<std::string> env, const std::string& out,
                               const std::string& err, const std::string& closed = "") {
  std::vector<char*> ev;
  for (auto& x : env) ev.push_back(x.data());
  ev.push_back(nullptr);
  std::vector<char*> av;
  for (auto& x : argv) av.push_back(x.data());
  av.push_back(nullptr);
  freopen(out.c_str(), "w", stdout);
  freopen(err.c_str(), "w", stderr);
  for (char c : closed) close(c - '0');
  execve(av[0], av.data(), ev.data());
  _exit(127);
}

// Runs PROGRAM ARGS... with LD_PRELOAD and extra environment entries "NAME=value".
AppRun run_program(const std::string& program, const std::vector<std::string>& args, std::vector<std::string> env = {},
                   std::string dir = "", bool preload = true, const std::string& closed = "") {
  AppRun r;
  r.dir = dir.empty() ? make_dir() : dir;
  std::string out = r.dir + "/.stdout", err = r.dir + "/.stderr";
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::string> a = {program};
    for (auto& x : args) a.push_back(x);
    exec_program(a, app_environment(env, r.dir, preload), out, err, closed);
  }
  waitpid(pid, &r.status, 0);
  r.out = slurp(out);
  r.err = slurp(err);
  r.traces = list_traces(r.dir);
  return r;
}

// Runs the test app with LD_PRELOAD and extra environment entries "NAME=value".
AppRun run(const std::vector<std::string>& args, std::vector<std::string> env = {}, std::string dir = "",
           bool preload = true) {
  return run_program(AW_TEST_APP, args, std::move(env), std::move(dir), preload);
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

int count_of(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(EndToEnd, ProgramWithoutCudaGetsNoTraceAndSameOutput) {
  AppRun r = run({"none"});
  EXPECT_TRUE(exited_ok(r));
  EXPECT_EQ(r.out, "no cuda here\n");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.traces.empty());
}

// A program with a large static TLS (as one linked with cuBLAS): the library's own thread gets a
// stack that holds it. With a fixed 128 KiB stack, 1 MiB of TLS made pthread_create fail (EINVAL:
// "asyncwatch stops recording", seen on the H200 with conjugateGradient) and 120 KiB left the
// thread too little stack (SIGSEGV before the first record: simpleCUBLAS).
TEST(EndToEnd, ProgramWithLargeStaticTlsIsTraced) {
  for (const char* app : {AW_TEST_APP_TLS_1M, AW_TEST_APP_TLS_120K}) {
    SCOPED_TRACE(app);
    AppRun r = run_program(app, {"linked"}, {}, "", true);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    Trace t = only_trace(r);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    EXPECT_EQ(copies(t).size(), 5u);
  }
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
  EXPECT_EQ(c[3].src_memory, static_cast<uint8_t>(MemoryKind::Pinned));    // registered range
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
  // Not a Python process: no interpreter record, no code objects, no Python frames in stacks.
  EXPECT_EQ(t.count(RecordType::PythonInfo), 0u);
  EXPECT_EQ(t.count(RecordType::PyCode), 0u);
  for (const auto& s : t.all<StackRecord>(RecordType::Stack)) EXPECT_EQ(s.python_depth, 0u);
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
    // The memory kinds decide here, not the time: a pinned copy that takes longer than the
    // threshold gets a stack too (under TSan on a loaded machine one took more than 50 us).
    AppRun r = run({"linked"}, {"ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=10000000"});
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
  AppRun r = run({"two_sites"}, {"ASYNCWATCH_LOG=info"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  // The cache must really answer (a cache that always misses is correct but costs a full unwind,
  // ~3 us, per pageable copy): 20 copies from 2 sites = 2 unwinds and 18 verified hits, plus the
  // cuMemAlloc's own unwind (memory-management calls have stacks by default).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("call-site cache: (\\d+) hits, (\\d+) full unwinds"))) << r.err;
  EXPECT_EQ(std::stoul(m[1]), 18u) << r.err;
  EXPECT_EQ(std::stoul(m[2]), 3u) << r.err;
  auto c = copies(only_trace(r));
  ASSERT_EQ(c.size(), 20u);
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c[i].flags & kFlagStackCaptured) << i;
    EXPECT_EQ(c[i].bytes, i % 2 ? 200u : 100u);
    EXPECT_EQ(c[i].stack_id, c[i % 2].stack_id) << "copy " << i << " got the other site's stack";
  }
  EXPECT_NE(c[0].stack_id, c[1].stack_id);
}

// On a glibc older than 2.35 (2.33) the library finds loaded objects with a dl_iterate_phdr walk
// and reads the CPU with cpuid (src/loaded_object.cpp, src/cpu_features.cpp): tests/hide_new_glibc.c
// makes this glibc look so. The unwinder (through the walk) gives the same stacks.
TEST(EndToEnd, OlderGlibcPathsGiveTheSameStacks) {
  if (*AW_SANITIZER_ENV) GTEST_SKIP() << "the hiding library is not built for sanitizers";
  std::vector<std::string> env = {"ASYNCWATCH_STACKS=all", "ASYNCWATCH_LOG=info"};
  AppRun now = run({"two_sites"}, env);
  env.push_back("LD_PRELOAD=" AW_HIDE_NEW_GLIBC ":" AW_PRELOAD_LIB);
  AppRun older = run_program(AW_TEST_APP, {"two_sites"}, env, "", false);
  ASSERT_TRUE(exited_ok(now)) << now.err;
  ASSERT_TRUE(exited_ok(older)) << older.err;
  EXPECT_EQ(count_of(older.err, "hide_new_glibc: not found: _dl_find_object"), 1) << older.err;
  EXPECT_EQ(count_of(older.err, "hide_new_glibc: not found: __x86_get_cpuid_feature_leaf"), 1) << older.err;
  std::smatch m;
  const std::regex cache("call-site cache: \\d+ hits, \\d+ full unwinds");
  ASSERT_TRUE(std::regex_search(now.err, m, cache)) << now.err;
  const std::string cache_now = m[0];
  ASSERT_TRUE(std::regex_search(older.err, m, cache)) << older.err;
  EXPECT_EQ(m[0], cache_now);
  const Trace a = only_trace(now), b = only_trace(older);
  auto depths = [](const Trace& t) {
    std::vector<uint32_t> d;
    for (const auto& s : t.all<StackRecord>(RecordType::Stack)) d.push_back(s.depth);
    return d;
  };
  const std::vector<uint32_t> da = depths(a);
  ASSERT_FALSE(da.empty());
  for (uint32_t d : da) EXPECT_GE(d, 3u);  // the wrapper, the test program's frames, libc's
  EXPECT_EQ(depths(b), da);
}

// The trace's file thread (trace/trace_file.cpp): one per traced process, also for a short run; it
// maps segments ahead of the writers, so every record is there and nothing is lost.
TEST(EndToEnd, FileThreadMapsAheadAndNothingLost) {
  AppRun longer = run({"mapper", "200000"});  // ~11 MiB of trace: three 4 MiB segments
  ASSERT_TRUE(exited_ok(longer)) << longer.err;
  EXPECT_EQ(count_of(longer.out, "thread asyncwatch-file\n"), 1) << longer.out;
  Trace t = only_trace(longer);
  EXPECT_EQ(t.header.records_lost, 0u);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(copies(t).size(), 200000u);
  AppRun bare = run({"mapper", "200000"}, {}, "", false);
  EXPECT_EQ(bare.out.find("asyncwatch"), std::string::npos) << bare.out;

  AppRun shorter = run({"mapper", "1000"});
  ASSERT_TRUE(exited_ok(shorter)) << shorter.err;
  EXPECT_EQ(count_of(shorter.out, "thread asyncwatch-file\n"), 1) << shorter.out;
  EXPECT_EQ(copies(only_trace(shorter)).size(), 1000u);
}

// The control API (asyncwatch/control.h): calls made while paused are not recorded and not
// lost; the header counts the pauses and their length, also for a process that ends paused.
TEST(EndToEnd, PauseAndResumeRecording) {
  AppRun r = run({"pause"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "control api: yes\npause: was 1\npause again: was 0\nresume: was 0\n");
  Trace t = only_trace(r);
  auto c = copies(t);
  std::map<uint64_t, int> by_size;
  for (auto& x : c) ++by_size[x.bytes];
  EXPECT_EQ(by_size, (std::map<uint64_t, int>{{1, 10}, {3, 5}}));
  EXPECT_EQ(t.header.records_lost, 0u);
  EXPECT_EQ(t.header.pause_count, 1u);
  EXPECT_GE(t.header.paused_ns, 20'000'000u);
  EXPECT_EQ(t.header.paused_since_ns, 0u);

  AppRun ended = run({"pause", "end-paused"});
  ASSERT_TRUE(exited_ok(ended)) << ended.err;
  Trace t2 = only_trace(ended);
  EXPECT_EQ(copies(t2).size(), 10u);
  EXPECT_EQ(t2.header.pause_count, 1u);
  EXPECT_GE(t2.header.paused_ns, 20'000'000u);  // the close ended the pause
  EXPECT_EQ(t2.header.paused_since_ns, 0u);

  AppRun bare = run({"pause"}, {}, "", false);
  EXPECT_EQ(bare.out, "control api: no\n");

  // The report says so (when the analyzer is built).
  if (*AW_ASYNCWATCH_BIN && !r.traces.empty()) {
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(exited_ok(rep)) << rep.err;
    EXPECT_NE(rep.out.find("recording was paused 1 time for"), std::string::npos) << rep.out;
  }
}

// What the process keeps of its trace does not grow with it. 500,000 copies from 2 threads
// (a ~31 MiB trace): at the end only the segments in use and those mapped ahead are still mapped;
// 300 short-lived threads: their blocks go on with the next threads' records. The trace reads whole.
long field_of(const std::string& out, const std::string& name) {
  size_t p = out.find(name + "=");
  return p == std::string::npos ? -1 : atol(out.c_str() + p + name.size() + 1);
}

TEST(EndToEnd, LongRunKeepsLittleOfItsTraceMapped) {
  AppRun r = run({"long", "500000", "2"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  ASSERT_EQ(copies(t).size(), 500000u);
  EXPECT_EQ(t.header.records_lost, 0u);
  struct stat st {};
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_GT(st.st_size, 24l << 20);
  const long mapped = field_of(r.out, "mapped_kib"), rss = field_of(r.out, "rss_kib");
  ASSERT_GE(mapped, 0) << r.out;
  EXPECT_LE(mapped, 16l << 10) << r.out;  // current segment + 2 ahead (4 MiB each) + segment 0 + header
  EXPECT_LE(rss, 16l << 10) << r.out;

  AppRun threads = run({"short_threads", "300", "maps"});
  ASSERT_TRUE(exited_ok(threads)) << threads.err;
  Trace tt = only_trace(threads);
  EXPECT_EQ(copies(tt).size(), 300u);
  EXPECT_LE(field_of(threads.out, "rss_kib"), 16l << 10) << threads.out;
  struct stat st2 {};
  ASSERT_EQ(stat(threads.traces[0].c_str(), &st2), 0);
  // The threads one after another fill the blocks of those that exited (Handoff records): a few
  // blocks in all, not 300 (19 MiB).
  EXPECT_LE(st2.st_size, 1l << 20);
}

// ASYNCWATCH_CAPTURE_RANGE=cudaProfilerApi: only the calls between cuProfilerStart and
// cuProfilerStop are recorded, none counted lost; the header says what was captured.
TEST(EndToEnd, CaptureRangeProfilerApi) {
  AppRun r = run({"profiler"}, {"ASYNCWATCH_CAPTURE_RANGE=cudaProfilerApi"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  auto c = copies(t);
  ASSERT_EQ(c.size(), 20u);
  for (auto& x : c) EXPECT_EQ(x.bytes, 2u);
  EXPECT_EQ(t.header.records_lost, 0u);
  EXPECT_EQ(t.header.capture_mode, static_cast<uint8_t>(CaptureMode::ProfilerApi));
  EXPECT_EQ(t.header.capture_ranges, 1u);
  EXPECT_LE(t.header.capture_first_start_ns, c.front().start_ns);
  EXPECT_GE(t.header.capture_last_end_ns, c.back().end_ns + 20'000'000u);  // after the 20 ms sleep
  EXPECT_EQ(t.header.capture_last_start_ns, t.header.capture_first_start_ns);
  EXPECT_EQ(t.header.pause_count, 2u);  // before the range (from the trace's start) and after it
  EXPECT_EQ(t.header.paused_since_ns, 0u);

  // Without the setting the marks change nothing.
  AppRun all = run({"profiler"});
  ASSERT_TRUE(exited_ok(all)) << all.err;
  Trace ta = only_trace(all);
  EXPECT_EQ(copies(ta).size(), 35u);
  EXPECT_EQ(ta.header.capture_mode, 0u);
  EXPECT_EQ(ta.header.pause_count, 0u);

  if (*AW_ASYNCWATCH_BIN && !r.traces.empty()) {
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(exited_ok(rep)) << rep.err;
    EXPECT_NE(rep.out.find("capture range cudaProfilerApi: 1 range recorded"), std::string::npos) << rep.out;
  }
}

// A range that never opens: a trace all the same (opened by the first call, outside the range),
// with no call in it, and a report that says so with the ordinary exit status (not 4).
TEST(EndToEnd, CaptureRangeNeverOpened) {
  AppRun r = run({"profiler", "never"}, {"ASYNCWATCH_CAPTURE_RANGE=cudaProfilerApi"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  EXPECT_EQ(copies(t).size(), 0u);
  EXPECT_EQ(t.header.records_lost, 0u);
  EXPECT_EQ(t.header.capture_ranges, 0u);
  EXPECT_EQ(t.header.pause_count, 1u);
  if (*AW_ASYNCWATCH_BIN && !r.traces.empty()) {
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(exited_ok(rep)) << rep.err;
    EXPECT_NE(rep.out.find("capture range cudaProfilerApi: no range opened"), std::string::npos) << rep.out;
  }

  // A delay longer than the run: the same, said of the delay.
  AppRun late = run({"timed", "20"}, {"ASYNCWATCH_DELAY=30"});
  ASSERT_TRUE(exited_ok(late)) << late.err;
  Trace tl = only_trace(late);
  EXPECT_EQ(copies(tl).size(), 0u);
  EXPECT_EQ(tl.header.capture_mode, static_cast<uint8_t>(CaptureMode::Time));
  EXPECT_EQ(tl.header.capture_ranges, 0u);
  if (*AW_ASYNCWATCH_BIN && !late.traces.empty()) {
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", late.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(exited_ok(rep)) << rep.err;
    EXPECT_NE(rep.out.find("capture range time, delay 30.0 s: no range opened (the run ended before the delay did)"),
              std::string::npos)
        << rep.out;
  }
}

// ASYNCWATCH_DELAY / ASYNCWATCH_DURATION: the window begins at the delay's end and lasts exactly the
// duration (the file thread ends it while the program sleeps too); no call before it is recorded,
// and none after it but those made before the file thread woke at the deadline (a loaded machine:
// up to a few milliseconds; 50 allowed).
TEST(EndToEnd, CaptureRangeDelayAndDuration) {
  AppRun r = run({"timed", "300"}, {"ASYNCWATCH_DELAY=0.05", "ASYNCWATCH_DURATION=0.1"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  auto c = copies(t);
  EXPECT_GT(c.size(), 0u);
  EXPECT_LT(c.size(), 300u);
  EXPECT_EQ(t.header.capture_mode, static_cast<uint8_t>(CaptureMode::Time));
  EXPECT_EQ(t.header.capture_ranges, 1u);
  EXPECT_EQ(t.header.capture_delay_ns, 50'000'000u);
  EXPECT_EQ(t.header.capture_last_end_ns - t.header.capture_first_start_ns, 100'000'000u);
  for (auto& x : c) {
    EXPECT_GE(x.start_ns, t.header.capture_first_start_ns);
    EXPECT_LE(x.start_ns, t.header.capture_last_end_ns + 50'000'000u);
  }
  EXPECT_EQ(t.header.records_lost, 0u);

  // A duration that ends while the program makes no call: ended by the file thread at its time.
  AppRun idle = run({"timed", "20"}, {"ASYNCWATCH_DURATION=0.05"});
  ASSERT_TRUE(exited_ok(idle)) << idle.err;
  Trace ti = only_trace(idle);
  EXPECT_EQ(ti.header.capture_ranges, 1u);
  EXPECT_EQ(ti.header.capture_last_end_ns - ti.header.capture_first_start_ns, 50'000'000u);
}

// Per-thread state is released at thread exit (thread_exit.cpp): 500 short threads, each one
// pageable copy (an evidence event, a stack, the caches), leave no driver events behind.
TEST(EndToEnd, ShortThreadsLeaveNoEventsBehind) {
  AppRun r = run({"short_threads", "500"}, {"FAKE_CUDA_REPORT_EVENTS=1"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_NE(r.err.find("fake_cuda: live events 0\n"), std::string::npos) << r.err;
  auto c = copies(only_trace(r));
  ASSERT_EQ(c.size(), 500u);
  for (auto& x : c) EXPECT_TRUE(x.flags & kFlagEvidenceChecked);
}

// A thread that exits leaves the unused rest of its block to the next thread that starts writing
// (a Handoff record names it, trace format version 5): 2,000 short-lived threads, one copy each, in
// full and in summary mode, give a trace that reads whole, each copy with the thread that made it
// (the tids the threads printed; each thread's ThreadInfo in its own part), in a few blocks, not one a
// thread. The analyzer's merged walk attributes them the same (the timeline's tracks).
// "ended": the threads end in turn by returning, by pthread_exit and by cancellation.
TEST(EndToEnd, ShortLivedThreadsShareBlocks) {
  constexpr int kThreads = 2000;
  for (const char* mode : {"full", "summary", "full ended", "summary ended"}) {
    std::vector<std::string> env;
    if (!strncmp(mode, "summary", 7)) env.push_back("ASYNCWATCH_SUMMARY=1");
    AppRun r =
        run({"short_threads", std::to_string(kThreads), "tids", strstr(mode, "ended") ? "mixed" : "return"}, env);
    ASSERT_TRUE(exited_ok(r)) << mode << r.err;
    std::vector<uint32_t> printed;
    for (size_t p = r.out.find("tid="); p != std::string::npos; p = r.out.find("tid=", p + 1))
      printed.push_back(static_cast<uint32_t>(atol(r.out.c_str() + p + 4)));
    ASSERT_EQ(printed.size(), static_cast<size_t>(kThreads)) << mode;
    Trace t = only_trace(r);
    ASSERT_TRUE(t.ok) << t.error;
    EXPECT_EQ(t.header.version, kFormatVersion);
    EXPECT_EQ(t.header.records_lost, 0u) << mode;
    std::vector<uint32_t> copy_tids;
    size_t handoffs = 0;
    for (const auto& rec : t.records) {
      if (rec.type() == RecordType::Copy) copy_tids.push_back(rec.tid);
      if (rec.type() == RecordType::ThreadInfo) EXPECT_EQ(rec.as<ThreadInfoRecord>().tid, rec.tid) << mode;
      handoffs += rec.type() == RecordType::Handoff;
    }
    // One copy per thread, by its thread (the main thread makes none), in the order they ran.
    ASSERT_EQ(copy_tids.size(), static_cast<size_t>(kThreads)) << mode;
    std::vector<uint32_t> sorted_copies = copy_tids, sorted_printed = printed;
    std::sort(sorted_copies.begin(), sorted_copies.end());
    std::sort(sorted_printed.begin(), sorted_printed.end());
    EXPECT_EQ(sorted_copies, sorted_printed) << mode;
    EXPECT_GE(handoffs, static_cast<size_t>(kThreads) - 64) << mode;
    // A few hundred bytes a thread, not a 64 KiB block each (before: 125 MiB for 2,000 threads).
    struct stat st {};
    ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
    EXPECT_LE(st.st_size, 4l << 20) << mode;
    if (*AW_ASYNCWATCH_BIN) {
      const std::string json = r.dir + "/.timeline.json";
      AppRun tl =
          run_program(AW_ASYNCWATCH_BIN, {"timeline", "-o", json, r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
      ASSERT_TRUE(exited_ok(tl)) << tl.err;
      const std::string events = slurp(json);
      std::set<uint32_t> tracks;
      for (size_t p = events.find("\"name\":\"thread_name\""); p != std::string::npos;
           p = events.find("\"name\":\"thread_name\"", p + 1)) {
        const size_t at = events.find("\"tid\":", p);
        if (at != std::string::npos) tracks.insert(static_cast<uint32_t>(atol(events.c_str() + at + 6)));
      }
      for (uint32_t tid : printed) EXPECT_TRUE(tracks.count(tid)) << mode << ": no track of thread " << tid;
    }
  }
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

// Summary mode (ASYNCWATCH_SUMMARY=1): the copies of one call site are folded into a summary in the
// mapping, updated after each call returned, so a SIGKILL leaves every returned call counted; only
// the exemplars stay records of their own.
TEST(EndToEnd, SummarySigkillKeepsEveryReturnedCall) {
  AppRun r = run({"kill", "5000"}, {"ASYNCWATCH_SUMMARY=1"});
  ASSERT_TRUE(WIFSIGNALED(r.status));
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, 0u);
  EXPECT_NE(t.header.config_flags & kConfigSummary, 0u);
  EXPECT_EQ(t.calls(RecordType::Copy), 5000u);
  EXPECT_GE(t.count(RecordType::SiteSummary), 1u);
  EXPECT_LE(copies(t).size(), kSummaryFirstExemplars + kSummaryWorstExemplars);
}

// Summary mode folds a call only into a summary whose record is the call's but for its times, its
// result included: the common call is compared with its call site's summary before its record is
// completed (site_summary::fold_in_flight), with the result stored first. 1000 syncs from one call
// site whose last 400 fail: two summaries (and their exemplars), 600 calls that succeeded and 400
// that failed, none of the failed ones counted with the successful ones.
TEST(EndToEnd, SummaryKeepsCallsOfAnotherResultApart) {
  AppRun r = run({"sync-results", "1000"}, {"ASYNCWATCH_SUMMARY=1", "FAKE_CUDA_SYNC_FAIL_FROM=600"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_NE(r.out.find("failed 400"), std::string::npos) << r.out;
  Trace t = only_trace(r);
  uint64_t by_result[2] = {0, 0};  // succeeded, failed
  for (const SyncRecord& s : t.all<SyncRecord>(RecordType::Sync))
    if (s.api == static_cast<uint16_t>(Api::cuStreamSynchronize)) ++by_result[s.result != 0];
  size_t summaries = 0;
  for (const SiteSummaryRecord& s : t.all<SiteSummaryRecord>(RecordType::SiteSummary)) {
    SyncRecord c;
    memcpy(&c, s.call, sizeof c);
    if (c.h.type != static_cast<uint16_t>(RecordType::Sync) || c.api != static_cast<uint16_t>(Api::cuStreamSynchronize))
      continue;
    ++summaries;
    by_result[c.result != 0] += s.count;
  }
  EXPECT_EQ(by_result[0], 600u);
  EXPECT_EQ(by_result[1], 400u);
  EXPECT_EQ(summaries, 2u);
}

// A flight recorder's window after any kill (the copies are made one after another, by one thread
// or by a thread each): completed copies only, in the order they were made (strictly later starts in
// ring order: a block reused mid-way never mixes its old records with its new ones), at most the
// calls that returned (+1, the one being copied when the process died), within the ring's size.
void expect_consistent_window(const Trace& t, uint64_t returned, const std::string& mode) {
  EXPECT_NE(t.header.config_flags & kConfigFlight, 0u) << mode;
  EXPECT_EQ(t.header.flight_ring_blocks, 16u) << mode;
  uint64_t last_start = 0;
  for (size_t i = 0; i < t.window.size(); ++i) {
    const aw_test::Record& rec = t.window[i];
    ASSERT_EQ(rec.type(), RecordType::Copy) << mode << " window record " << i;
    const auto c = rec.as<CopyRecord>();
    EXPECT_EQ(c.flags & kFlagInFlight, 0u) << mode;
    EXPECT_GT(c.start_ns, last_start) << mode << ": window record " << i << " of block " << t.window_seq[i];
    EXPECT_GE(c.end_ns, c.start_ns) << mode;
    last_start = c.start_ns;
  }
  EXPECT_LE(t.window.size(), returned + 1) << mode;
  EXPECT_LE(t.window.size(), 16u * (kBlockSize / sizeof(CopyRecord))) << mode;
  if (t.header.flight_blocks_reused) {  // the window starts after what was dropped
    ASSERT_FALSE(t.window.empty()) << mode;
    EXPECT_GT(t.window.back().as<CopyRecord>().start_ns, t.header.flight_window_start_ns) << mode;
  }
}

// The flight recorder (ASYNCWATCH_TRACE_LIMIT) on a run well past its limit: 100,000 copies (6.4 MB
// of records) through a 1 MiB ring. The trace is the ring plus what summary mode writes for the same
// run; every copy is in the summaries; the window is the last copies, whole and in order; and
// asyncwatch's report counts what a full trace's report counts and says which window it has.
TEST(EndToEnd, FlightRecorderKeepsTheWholeRunsCountsAndTheLastWindow) {
  constexpr int kCopies = 100000;
  const std::string n = std::to_string(kCopies);
  AppRun flight = run({"copies", n}, {"ASYNCWATCH_TRACE_LIMIT=1M"});
  AppRun summary = run({"copies", n}, {"ASYNCWATCH_SUMMARY=1"});
  AppRun full = run({"copies", n});
  for (const AppRun* r : {&flight, &summary, &full}) ASSERT_TRUE(exited_ok(*r)) << r->err;
  Trace t = only_trace(flight);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_NE(t.header.config_flags & kConfigSummary, 0u);
  EXPECT_EQ(t.calls(RecordType::Copy), static_cast<uint64_t>(kCopies));
  EXPECT_LE(copies(t).size(), 8u) << "copies were not folded";
  EXPECT_GT(t.header.flight_blocks_reused, 0u);
  EXPECT_EQ(t.header.flight_copies_missed, 0u);
  expect_consistent_window(t, kCopies, "flight");
  // One thread: 15 full ring blocks and the one it writes in.
  constexpr size_t kPerBlock = (kBlockSize - sizeof(BlockHeader)) / sizeof(CopyRecord);
  EXPECT_GE(t.window.size(), 15 * kPerBlock);
  struct stat fs {
  }, ss{};
  ASSERT_EQ(stat(flight.traces[0].c_str(), &fs), 0);
  ASSERT_EQ(summary.traces.size(), 1u);
  ASSERT_EQ(stat(summary.traces[0].c_str(), &ss), 0);
  EXPECT_LE(static_cast<uint64_t>(fs.st_size), (1u << 20) + static_cast<uint64_t>(ss.st_size) + 2 * kBlockSize)
      << "the flight trace is larger than its ring and the summary trace of the same run";
  if (!*AW_ASYNCWATCH_BIN) return;
  auto report = [&](const AppRun& r) {
    const std::string out = r.dir + "/.report.json";
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", "--format", "json", "-o", out, r.traces[0]},
                             {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(WIFEXITED(rep.status) && WEXITSTATUS(rep.status) <= 1) << rep.err;
    return slurp(out);
  };
  auto number_after = [](const std::string& json, const std::string& key, size_t from = 0) -> long long {
    size_t at = json.find("\"" + key + "\":", from);
    if (at == std::string::npos) return -1;
    at += key.size() + 3;
    while (at < json.size() && json[at] == ' ') ++at;
    return atoll(json.c_str() + at);
  };
  const std::string fj = report(flight), uj = report(full);
  // The whole run's counts, the same as the full trace's; the same findings (by rule).
  EXPECT_EQ(number_after(fj, "cuda_calls"), number_after(uj, "cuda_calls"));
  EXPECT_EQ(number_after(fj, "async_calls"), number_after(uj, "async_calls"));
  EXPECT_EQ(count_of(fj, "\"rule\":"), count_of(uj, "\"rule\":"));
  EXPECT_EQ(count_of(uj, "flight_window"), 0);
  const size_t w = fj.find("\"flight_window\"");
  ASSERT_NE(w, std::string::npos) << fj.substr(0, 2000);
  EXPECT_EQ(number_after(fj, "calls", w), static_cast<long long>(t.window.size()));
  EXPECT_EQ(number_after(fj, "calls_before", w),
            number_after(fj, "cuda_calls") - static_cast<long long>(t.window.size()));
  EXPECT_EQ(number_after(fj, "ring_bytes", w), 1 << 20);
  EXPECT_EQ(static_cast<uint64_t>(number_after(fj, "last_ns", w)),
            t.window.back().as<CopyRecord>().end_ns - t.header.start_monotonic_ns);
  EXPECT_NE(fj.find("flight-recorder trace"), std::string::npos);
}

// SIGKILL at random moments of a loop of copies, in full and in summary mode: every call that
// returned (the program counts them in a shared file after each) is in the trace, as a record or in
// a summary, and at most one more (the call it was inside, in flight or folded before it returned).
// The same with each copy made by a short-lived thread of its own (threads taking over the blocks of
// exited ones): every thread's records stay its own.
TEST(EndToEnd, SigkillAtRandomMomentsKeepsEveryReturnedCall) {
  std::mt19937 rng(static_cast<unsigned>(time(nullptr)));
  for (const char* mode : {"full", "summary", "flight", "full threads", "summary threads", "flight threads"}) {
    const bool churn = strstr(mode, "threads") != nullptr;
    const bool flight = !strncmp(mode, "flight", 6);
    for (int round = 0; round < 4; ++round) {
      std::string dir = make_dir();
      const std::string counter = dir + "/.counter";
      {
        int fd = open(counter.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(ftruncate(fd, sizeof(uint64_t)), 0);
        close(fd);
      }
      std::vector<std::string> env;
      if (!strncmp(mode, "summary", 7)) env.push_back("ASYNCWATCH_SUMMARY=1");
      if (flight) env.push_back("ASYNCWATCH_TRACE_LIMIT=1M");  // 16 ring blocks: wraps within the run
      pid_t pid = fork();
      if (pid == 0)
        exec_program({AW_TEST_APP, "counted", counter, "100000000", churn ? "threads" : "one"},
                     app_environment(env, dir, true), dir + "/.stdout", dir + "/.stderr");
      const unsigned wait_ms = 30 + rng() % 300;
      usleep(wait_ms * 1000);
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFSIGNALED(status)) << mode << " " << slurp(dir + "/.stderr");
      uint64_t returned = 0;
      {
        int fd = open(counter.c_str(), O_RDONLY);
        ASSERT_EQ(pread(fd, &returned, sizeof returned, 0), static_cast<ssize_t>(sizeof returned));
        close(fd);
      }
      unlink(counter.c_str());
      auto traces = list_traces(dir);
      if (returned == 0 && traces.empty()) continue;  // killed before the first copy opened the trace
      ASSERT_EQ(traces.size(), 1u) << mode;
      Trace t = aw_test::read_trace(traces[0]);
      ASSERT_TRUE(t.ok) << t.error;
      const uint64_t in_trace = t.calls(RecordType::Copy);
      EXPECT_GE(in_trace, returned) << mode << ", killed after " << wait_ms << " ms";
      EXPECT_LE(in_trace, returned + 1) << mode << ", killed after " << wait_ms << " ms";
      if (!strcmp(mode, "summary") && returned > 100) EXPECT_LE(copies(t).size(), 8u) << "copies were not folded";
      for (const auto& rec : t.records)
        if (rec.type() == RecordType::ThreadInfo) EXPECT_EQ(rec.as<ThreadInfoRecord>().tid, rec.tid) << mode;
      if (flight) expect_consistent_window(t, returned, mode);
    }
  }
}

// The write protocol (docs/trace-format.md): a call record is published in flight before the real
// call, so a process killed inside a call leaves that call in the trace, marked kFlagInFlight, with
// no result and no end time but with its call site: the stack, taken before the call (the copy's
// host side is pageable), and its caller's return address in end_ns, the stack's first frame;
// every call that returned is complete.
TEST(EndToEnd, SigkillInsideACallLeavesItInFlight) {
  std::string dir = make_dir();
  pid_t pid = fork();
  if (pid == 0)
    exec_program({AW_TEST_APP, "copies", "50"}, app_environment({"FAKE_CUDA_COPY_SLEEP_US=100000"}, dir, true),
                 dir + "/.stdout", dir + "/.stderr");
  // The first call of a process is written after it returns (it opens the trace: here the
  // allocation before the copies); from then on records are in place: wait until one is seen in
  // flight, then kill.
  bool seen = false;
  for (int i = 0; i < 3000 && !seen; ++i) {
    usleep(5000);
    for (const std::string& p : list_traces(dir))
      for (const CopyRecord& c : copies(aw_test::read_trace(p))) seen = seen || (c.flags & kFlagInFlight);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << "no copy seen in flight within 15 s";
  auto traces = list_traces(dir);
  ASSERT_EQ(traces.size(), 1u);
  auto c = copies(aw_test::read_trace(traces[0]));
  ASSERT_GE(c.size(), 1u);
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    EXPECT_EQ(c[i].flags & kFlagInFlight, 0u) << i;
    EXPECT_GE(c[i].end_ns - c[i].start_ns, 100'000'000u) << i;
  }
  // The last one was killed inside the call (the sleep dwarfs everything else a copy does).
  const CopyRecord& killed = c.back();
  EXPECT_NE(killed.flags & kFlagInFlight, 0u);
  if (c.size() > 1) EXPECT_GT(killed.start_ns, c[c.size() - 2].end_ns);
  EXPECT_GT(killed.start_ns, 0u);
  EXPECT_NE(killed.api, 0u);
  // Its call site: the stack taken before the call, the same as the returned copies' (one call
  // site), whose first frame is the caller's return address the record holds.
  ASSERT_NE(killed.flags & kFlagStackCaptured, 0u);
  ASSERT_NE(killed.stack_id, 0u);
  if (c.size() > 1) EXPECT_EQ(killed.stack_id, c[c.size() - 2].stack_id);
  ASSERT_NE(in_flight_caller(killed), 0u);
  bool found = false;
  for (const auto& r : aw_test::read_trace(traces[0]).records) {
    if (r.type() != RecordType::Stack || r.as<StackRecord>().stack_id != killed.stack_id) continue;
    found = true;
    ASSERT_GE(r.as<StackRecord>().depth, 1u);
    uint64_t first = 0;
    memcpy(&first, r.bytes.data() + sizeof(StackRecord), sizeof first);
    EXPECT_EQ(first, in_flight_caller(killed));
  }
  EXPECT_TRUE(found) << "stack " << killed.stack_id << " not in the trace";
}

// The same in summary mode, where a call is published in flight in the thread's slot for its record
// type (trace/site_summary.h) and the returned ones are folded: the call killed inside is in the
// trace, in flight, with its call site; every other copy record is complete.
TEST(EndToEnd, SummarySigkillInsideACallLeavesItInFlight) {
  std::string dir = make_dir();
  pid_t pid = fork();
  if (pid == 0)
    exec_program({AW_TEST_APP, "copies", "50"},
                 app_environment({"FAKE_CUDA_COPY_SLEEP_US=100000", "ASYNCWATCH_SUMMARY=1"}, dir, true),
                 dir + "/.stdout", dir + "/.stderr");
  // Killed once a copy is seen in flight after more than the exemplars returned (so that it is one
  // a summary would have taken).
  bool seen = false;
  for (int i = 0; i < 3000 && !seen; ++i) {
    usleep(5000);
    for (const std::string& p : list_traces(dir)) {
      Trace t = aw_test::read_trace(p);
      if (t.calls(RecordType::Copy) < kSummaryFirstExemplars + 3) continue;
      for (const CopyRecord& c : copies(t)) seen = seen || (c.flags & kFlagInFlight);
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << "no copy seen in flight within 15 s";
  auto traces = list_traces(dir);
  ASSERT_EQ(traces.size(), 1u);
  Trace t = aw_test::read_trace(traces[0]);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_GE(t.count(RecordType::SiteSummary), 1u);
  const std::vector<CopyRecord> all = copies(t);
  const CopyRecord* killed = nullptr;
  for (const CopyRecord& c : all) {
    if (!(c.flags & kFlagInFlight)) {
      EXPECT_GE(c.end_ns - c.start_ns, 100'000'000u);
      continue;
    }
    EXPECT_EQ(killed, nullptr) << "two copies in flight";
    killed = &c;
  }
  ASSERT_NE(killed, nullptr);
  EXPECT_GT(killed->start_ns, 0u);
  EXPECT_NE(killed->api, 0u);
  EXPECT_EQ(killed->result, 0);
  EXPECT_EQ(killed->bytes, 0u);  // the body is written after the call: zero in flight, as in full mode
  ASSERT_NE(killed->flags & kFlagStackCaptured, 0u);
  EXPECT_NE(killed->stack_id, 0u);
  EXPECT_NE(in_flight_caller(*killed), 0u);
}

// A call in flight without a stack before the call (a synchronization: the default policy takes
// one only when it blocked) holds its caller's return address: the test program's call
// instruction, the same address as a completed synchronization's stack's first frame at that site.
TEST(EndToEnd, SigkillInsideASyncLeavesItsCaller) {
  std::string dir = make_dir();
  pid_t pid = fork();
  if (pid == 0)
    exec_program({AW_TEST_APP, "sync-loop", "50"}, app_environment({"FAKE_CUDA_SYNC_SLEEP_US=100000"}, dir, true),
                 dir + "/.stdout", dir + "/.stderr");
  bool seen = false;
  for (int i = 0; i < 3000 && !seen; ++i) {
    usleep(5000);
    for (const std::string& p : list_traces(dir))
      for (const SyncRecord& s : aw_test::read_trace(p).all<SyncRecord>(RecordType::Sync))
        seen = seen || (s.flags & kFlagInFlight);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << "no synchronization seen in flight within 15 s";
  auto traces = list_traces(dir);
  ASSERT_EQ(traces.size(), 1u);
  Trace t = aw_test::read_trace(traces[0]);
  auto syncs = t.all<SyncRecord>(RecordType::Sync);
  ASSERT_GE(syncs.size(), 2u);
  const SyncRecord& killed = syncs.back();
  ASSERT_NE(killed.flags & kFlagInFlight, 0u);
  EXPECT_EQ(killed.stack_id, 0u);
  const uint64_t ra = in_flight_caller(killed);
  ASSERT_NE(ra, 0u);
  // The completed ones blocked 100 ms (>= the launch threshold): they have stacks (after the call)
  // whose first frame is the same call instruction's return address.
  const SyncRecord& done = syncs[syncs.size() - 2];
  ASSERT_NE(done.stack_id, 0u);
  bool matched = false;
  for (const auto& r : t.records) {
    if (r.type() != RecordType::Stack || r.as<StackRecord>().stack_id != done.stack_id) continue;
    uint64_t first = 0;
    memcpy(&first, r.bytes.data() + sizeof(StackRecord), sizeof first);
    matched = first == ra;
  }
  EXPECT_TRUE(matched) << std::hex << "caller 0x" << ra;
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

// One name for every process (ASYNCWATCH_OUTPUT_PATTERN without %p): each still gets a trace of its
// own. 100 names ran out before (".1" .. ".99"), and tracing stopped silently for the rest.
TEST(EndToEnd, ManyProcessesWithOneFixedNameAreAllTraced) {
  if (!strncmp(AW_SANITIZER_ENV, "TSAN_OPTIONS=", 13))
    GTEST_SKIP() << "TSan does not support starting threads after a multithreaded fork";
  AppRun r = run({"forks", "120", "10"}, {"ASYNCWATCH_OUTPUT_PATTERN=fixed.awtrace"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  ASSERT_EQ(r.traces.size(), 121u) << r.err;
  std::set<uint64_t> pids;
  size_t total = 0;
  // The children end with _exit. ASan's _exit interceptor calls glibc's, past the library's: their
  // traces are left as after a kill (every returned call kept, not marked closed).
  const bool exit_interposed = strncmp(AW_SANITIZER_ENV, "LSAN_OPTIONS=", 13) != 0;
  for (auto& p : r.traces) {
    Trace t = aw_test::read_trace(p);
    EXPECT_TRUE(t.ok) << p << ": " << t.error;
    const std::string parent_name = "/fixed.awtrace";
    const bool parent = p.size() >= parent_name.size() &&
                        p.compare(p.size() - parent_name.size(), parent_name.size(), parent_name) == 0;
    if (exit_interposed || parent) EXPECT_EQ(t.header.closed, kClosedCleanly) << p;
    pids.insert(t.header.pid);
    total += copies(t).size();
  }
  EXPECT_EQ(pids.size(), 121u);
  EXPECT_EQ(total, 1000u + 120u * 10u + 10u);
  // `run` reports every process (not under a sanitizer: `run` preloads one library path, and a
  // sanitized library needs its runtime preloaded first).
  if (*AW_ASYNCWATCH_BIN && !*AW_SANITIZER_ENV) {
    std::string dir = make_dir();
    AppRun rep = run_program(AW_ASYNCWATCH_BIN,
                             {"run", "-o", dir + "/traces", "--format", "json", "--report-output", dir + "/report.json",
                              "--", AW_TEST_APP, "forks", "120", "10"},
                             {"ASYNCWATCH_OUTPUT_PATTERN=fixed.awtrace", "ASYNCWATCH_NO_SYMBOLS=1",
                              "ASYNCWATCH_PRELOAD_LIB=" AW_PRELOAD_PREFIX AW_PRELOAD_LIB},
                             dir, false);
    EXPECT_TRUE(exited_ok(rep)) << rep.err;
    EXPECT_EQ(list_traces(dir + "/traces").size(), 121u);
    const std::string json = slurp(dir + "/report.json");
    EXPECT_EQ(count_of(json, "\"parent_pid_if_forked\""), 121) << rep.err;
  }
}

// A program that execs itself 110 times (one pid): every image has its trace.
TEST(EndToEnd, ProgramExecingItselfManyTimesIsTracedEachTime) {
  AppRun r = run({"exec_chain", "110"}, {"ASYNCWATCH_OUTPUT_PATTERN=fixed.awtrace"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "chain done\n");
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  ASSERT_EQ(r.traces.size(), 111u);
  std::set<uint64_t> pids;
  for (auto& p : r.traces) {
    Trace t = aw_test::read_trace(p);
    EXPECT_EQ(t.header.closed, kClosedCleanly) << p;
    EXPECT_EQ(copies(t).size(), 1u) << p;
    pids.insert(t.header.pid);
  }
  EXPECT_EQ(pids.size(), 1u);
  // The first 16 names are the pattern's with ".N"; the rest carry the pid.
  struct stat st;
  EXPECT_EQ(stat((r.dir + "/fixed.awtrace").c_str(), &st), 0);
  EXPECT_EQ(stat((r.dir + "/fixed.15.awtrace").c_str(), &st), 0);
  EXPECT_NE(stat((r.dir + "/fixed.16.awtrace").c_str(), &st), 0);
}

// RLIMIT_NPROC counts the real user's tasks, and root is exempt from it: the program runs as a
// user id of its own (no other task of it exists), under the limit, bare and traced.
AppRun run_under_nproc(rlim_t limit, const std::vector<std::string>& args, bool preload) {
  AppRun r;
  r.dir = make_dir();
  const uid_t uid = static_cast<uid_t>(1500000000u + static_cast<unsigned>(getpid()) % 1000000u);
  if (chown(r.dir.c_str(), uid, uid) != 0) ADD_FAILURE() << "chown " << r.dir;
  std::string out = r.dir + "/.stdout", err = r.dir + "/.stderr";
  pid_t pid = fork();
  if (pid == 0) {
    rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_NPROC, &rl) != 0 || setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
      _exit(126);
    std::vector<std::string> a = {AW_TEST_APP};
    for (auto& x : args) a.push_back(x);
    exec_program(a, app_environment({}, r.dir, preload), out, err);
  }
  waitpid(pid, &r.status, 0);
  r.out = slurp(out);
  r.err = slurp(err);
  r.traces = list_traces(r.dir);
  return r;
}

// The library's file thread never takes a process slot the program needed: at the limit, the
// program's pthread_create fails (EAGAIN), the file thread ends and the call is made again.
TEST(EndToEnd, ProcessLimitLeavesTheProgramItsThreads) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: RLIMIT_NPROC is tested as a user id with no other task";
  // A sanitizer runtime intercepts pthread_create itself and calls glibc's by version, past the
  // library's wrapper: the retry it tests cannot happen there.
  if (*AW_SANITIZER_ENV) GTEST_SKIP() << "the sanitizer runtime's pthread_create bypasses the library's";
  for (const char* threads : {"8", "1"}) {
    SCOPED_TRACE(threads);
    // The limit the bare program fills exactly: its tasks with every thread alive (the main thread
    // and 8 or 1; a sanitizer runtime's own thread too).
    AppRun roomy = run_under_nproc(100, {"nproc_threads", threads}, false);
    ASSERT_TRUE(exited_ok(roomy)) << roomy.out << roomy.err;
    const long limit = field_of(roomy.out, "tasks");
    ASSERT_GE(limit, atol(threads) + 1) << roomy.out;
    AppRun bare = run_under_nproc(static_cast<rlim_t>(limit), {"nproc_threads", threads}, false);
    ASSERT_TRUE(exited_ok(bare)) << bare.out << bare.err;
    AppRun r = run_under_nproc(static_cast<rlim_t>(limit), {"nproc_threads", threads}, true);
    ASSERT_TRUE(exited_ok(r)) << r.out << r.err;
    EXPECT_EQ(r.out, bare.out);
    EXPECT_EQ(count_of(r.err, "asyncwatch's file thread ended to leave it its slot"), 1) << r.err;
    Trace t = only_trace(r);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    EXPECT_TRUE(t.header.config_flags & kConfigFileThreadYielded);
    // The segments mapped when the thread left (at least 256 KiB + 4 MiB) hold every thread's block.
    EXPECT_EQ(copies(t).size(), 1u + static_cast<size_t>(atoi(threads)));
    EXPECT_EQ(t.header.records_lost, 0u);
    if (*AW_ASYNCWATCH_BIN && !r.traces.empty()) {
      AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
      EXPECT_TRUE(exited_ok(rep)) << rep.err;
      EXPECT_NE(rep.out.find("asyncwatch's file thread ended to leave it its slot"), std::string::npos) << rep.out;
    }
  }
}

// A seccomp filter that denies (EPERM) one of the system calls the library adds, or all of them
// (docs/reliability.md, "System calls the library adds"): the program's output and status are
// as bare under the same filter; the trace is either whole (a fallback took over: the process's
// descriptor table without unshare, no pre-faulting without madvise) or absent with one warning.
TEST(EndToEnd, EachSystemCallTheLibraryAddsDeniedDegradesCleanly) {
  if (!strncmp(AW_SANITIZER_ENV, "TSAN_OPTIONS=", 13))
    GTEST_SKIP() << "TSan's own runtime needs some of the calls denied here (sched_getaffinity)";
  std::vector<std::string> names;
  for (const NamedSyscall& c : kLibrarySyscalls) names.emplace_back(c.name);
  names.emplace_back("close_range,getdents64");  // the fallback of the fallback
  names.emplace_back("all");
  size_t compared = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    // A sanitizer runtime starts every thread (the library's file thread too) with
    // pthread_getattr_np, which needs sched_getaffinity: denied, its CHECK ends the process.
    if (*AW_SANITIZER_ENV && (name == "sched_getaffinity" || name == "all")) {
      std::printf("[ %s denied ] the sanitizer runtime needs it: not compared\n", name.c_str());
      std::fflush(stdout);
      continue;
    }
    std::vector<std::string> env = {"AW_TEST_DENY_SYSCALLS=" + name};
    // LSan's check at exit stops the world from a tracer that polls getppid: denied, it waits forever.
    if (!strncmp(AW_SANITIZER_ENV, "LSAN_OPTIONS=", 13)) env.emplace_back("ASAN_OPTIONS=detect_leaks=0");
    AppRun bare = run({"linked"}, env, "", false);
    if (!exited_ok(bare)) {  // a sanitizer runtime that needs the call itself: nothing to compare with
      std::printf("[ %s denied ] the bare program fails too: not compared\n", name.c_str());
      std::fflush(stdout);
      continue;
    }
    ++compared;
    AppRun r = run({"linked"}, env);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), WEXITSTATUS(bare.status)) << r.err;
    EXPECT_EQ(r.out, bare.out);
    ASSERT_LE(r.traces.size(), 1u);
    if (r.traces.empty()) {
      EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
    } else {
      EXPECT_EQ(count_of(r.err, "warning"), 0) << r.err;
      Trace t = only_trace(r);
      EXPECT_EQ(t.header.closed, kClosedCleanly);
      EXPECT_EQ(copies(t).size(), 5u);
    }
    std::printf("[ %s denied ] %s\n", name.c_str(), r.traces.empty() ? "no trace, one warning" : "whole trace");
    std::fflush(stdout);  // before the next fork: the children would print it again
  }
  EXPECT_GE(compared, 12u);  // at least the calls only the library makes
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

// The disabled path is each exported wrapper's one bit test and a jump to the real function
// (interpose/entry_stubs.cpp on x86-64, hook_entry.h elsewhere): the calls still reach the driver
// with their arguments and results, through every way in (linked, cuGetProcAddress, dlsym), host
// functions included.
TEST(EndToEnd, DisabledPassesEveryWayThrough) {
  for (const char* mode : {"proc", "launch", "hostfunc", "cuda13"}) {
    AppRun r = run({mode}, {"ASYNCWATCH_DISABLE=1"});
    EXPECT_TRUE(exited_ok(r)) << mode << ": " << r.err;
    EXPECT_TRUE(r.traces.empty()) << mode;
  }
  AppRun r = run({"hostfunc"}, {"ASYNCWATCH_DISABLE=1"});
  EXPECT_NE(r.out.find("ran=2"), std::string::npos) << r.out;
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
    if (r.src_memory == static_cast<uint8_t>(MemoryKind::Pinned))
      ++c.pinned;
    else if (r.src_memory == static_cast<uint8_t>(MemoryKind::Pageable))
      ++c.pageable;
    else
      ++c.other;
  });
  return c;
}

// Stress: 32 threads x 100,000 intercepted calls (pinned and pageable 64-byte
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
  EXPECT_EQ(c.header.closed, kClosedCleanly);  // main returned 0: on_exit saw it
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

// Output trouble: RLIMIT_FSIZE, set by the app before its first CUDA call, stops the
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
  EXPECT_GT(c.total, 0u);  // the first segment's records are there
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

// Bad configuration: every ASYNCWATCH_* variable that is validated set to garbage at
// once (ASYNCWATCH_OUTPUT_DIR is not validated: a bad directory is the unwritable-directory case
// above). One warning per variable, the defaults are used, and the trace is still written.
TEST(EndToEnd, AllVariablesGarbageAtOnceWarnEachAndUseDefaults) {
  const std::vector<std::string> bad = {"ASYNCWATCH_OUTPUT_PATTERN=../escape/%p",
                                        "ASYNCWATCH_STACKS=bogus",
                                        "ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=12abc",
                                        "ASYNCWATCH_EVIDENCE=maybe",
                                        "ASYNCWATCH_LOG=loud",
                                        "ASYNCWATCH_QUIET=yes",
                                        "ASYNCWATCH_FILE_MODE=rw-r--r--",
                                        "ASYNCWATCH_DISABLE=true"};
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
  ASSERT_EQ(r.traces.size(), 1u);                        // DISABLE default: traced
  EXPECT_NE(r.traces[0].find("/asyncwatch-aw_test_app-"), std::string::npos) << r.traces[0];  // default pattern
  struct stat st;
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // FILE_MODE default
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(t.header.launch_stack_threshold_ns, 50'000u);  // threshold default
  auto c = copies(t);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_TRUE(c[0].flags & kFlagStackCaptured);     // STACKS default: pageable copy has a stack
  if (c[1].end_ns - c[1].start_ns < 50'000)         // (a loaded machine can make it slow: then it has one)
    EXPECT_FALSE(c[1].flags & kFlagStackCaptured);  // ... a quick pinned copy none
  EXPECT_TRUE(c[0].flags & kFlagEvidenceChecked);   // EVIDENCE default (auto): pageable checked
  EXPECT_FALSE(c[1].flags & kFlagEvidenceChecked);  // ... pinned not
}

// The traces of a process that forked children (the fork tests): each read, closed cleanly, none
// lost; which one is the parent's, and in how many traces each copy size appears (copy sizes tell
// the writers apart).
struct ForkTraces {
  std::vector<CopyCounts> all;
  uint64_t parent_pid = 0;
  std::map<uint64_t, int> seen_bytes;  // copy size -> number of traces holding it
};
void read_fork_traces(const AppRun& r, size_t expected_traces, ForkTraces* f) {
  ASSERT_EQ(r.traces.size(), expected_traces) << r.err;
  for (auto& p : r.traces) {
    f->all.push_back(count_copies(p));
    CopyCounts& c = f->all.back();
    ASSERT_TRUE(c.ok) << p;
    EXPECT_EQ(c.header.closed, kClosedCleanly) << p;
    EXPECT_EQ(c.header.records_lost, 0u) << p;
    if (c.header.parent_pid_if_forked == 0) f->parent_pid = c.header.pid;
    for (auto& [bytes, n] : c.per_bytes) ++f->seen_bytes[bytes];
  }
  ASSERT_NE(f->parent_pid, 0u);
}

// A child's trace: forked from the parent, exactly `calls` copies of its one size 100+k, k < kids
// (nothing of the parent's or a sibling's).
void check_child_trace(const CopyCounts& c, uint64_t parent_pid, int kids, int calls) {
  EXPECT_EQ(c.header.parent_pid_if_forked, parent_pid);
  ASSERT_EQ(c.per_bytes.size(), 1u) << "pid " << c.header.pid;
  uint64_t bytes = c.per_bytes.begin()->first;
  EXPECT_GE(bytes, 100u);
  EXPECT_LT(bytes, 100u + kids);
  EXPECT_EQ(c.total, uint64_t(calls));
}

// Python multiprocessing-style fork: the parent makes calls, forks 4 children that make
// calls while the parent makes its own, and each child leaves through _exit (the clean close path
// of the _exit interposer). Every process's trace holds exactly its own calls: the copies' sizes
// tell the processes apart (parent 64 before the fork and 65 after, child k 100+k).
TEST(EndToEnd, MultiprocessingStyleForkEachTraceHasExactlyItsOwnRecords) {
  const int kids = 4, calls = 20000;
  AppRun r = run({"forks", std::to_string(kids), std::to_string(calls)}, {"ASYNCWATCH_QUIET=1"});
  ASSERT_TRUE(exited_ok(r)) << r.out << r.err;
  ForkTraces f;
  ASSERT_NO_FATAL_FAILURE(read_fork_traces(r, size_t(kids + 1), &f));
  const uint64_t parent_pid = f.parent_pid;
  for (auto& c : f.all) {
    if (c.header.pid == parent_pid) {
      EXPECT_EQ(c.header.parent_pid_if_forked, 0u);
      ASSERT_EQ(c.per_bytes.size(), 2u);
      EXPECT_EQ(c.per_bytes[64], 1000u);
      EXPECT_EQ(c.per_bytes[65], uint64_t(calls));
      EXPECT_EQ(c.total, 1000u + calls);
    } else {
      ASSERT_NO_FATAL_FAILURE(check_child_trace(c, parent_pid, kids, calls));
    }
  }
  for (auto& [bytes, n] : f.seen_bytes) EXPECT_EQ(n, 1) << bytes << "-byte copies in " << n << " traces";
  EXPECT_EQ(f.seen_bytes.size(), size_t(2 + kids));
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

// ---- A segfault, programs without CUDA, a full disk, fork with threads --------------------

namespace {

// Every name in `dir` but "." and "..", sorted.
std::string describe_status(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("signal ") + strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

}  // namespace

// A real SIGSEGV (a store through a null pointer) in the middle of a run of copies. The library
// installs no signal handler, so the application dies of the same signal, with the same wait
// status, as without it; every copy that returned is in the trace, which says it was not closed.
TEST(EndToEnd, SegfaultMidRunKeepsEveryReturnedCallAndTheSignal) {
  const int n = 1234;
  std::vector<std::string> env = {"ASYNCWATCH_QUIET=1"};
  // Sanitizer job: ASan's own SEGV handler (libasan is preloaded too) would report and exit(1).
  if (*AW_SANITIZER_ENV) env.push_back("ASAN_OPTIONS=handle_segv=0");
  AppRun r = run({"segv", std::to_string(n)}, env);
  AppRun bare = run({"segv", std::to_string(n)}, {}, "", false);
  ASSERT_TRUE(WIFSIGNALED(bare.status)) << describe_status(bare.status);
  EXPECT_EQ(WTERMSIG(bare.status), SIGSEGV);
  ASSERT_TRUE(WIFSIGNALED(r.status)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_EQ(WTERMSIG(r.status), SIGSEGV);
  EXPECT_EQ(r.status, bare.status);  // the raw wait status: same signal, same core-dump bit
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(r.out, "copying\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(bare.err, "");
  Trace t = only_trace(r);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.header.closed, 0u);  // not closed cleanly: the reader can tell
  EXPECT_EQ(t.header.exit_status, -1);
  EXPECT_EQ(t.header.records_lost, 0u);
  auto c = copies(t);
  EXPECT_EQ(c.size(), size_t(n));  // every copy that returned before the fault, no more
  // The analyzer says how the run ended (the same note as for the crashed.awtrace golden).
  if (*AW_ASYNCWATCH_BIN && !r.traces.empty()) {
    AppRun rep = run_program(AW_ASYNCWATCH_BIN, {"report", r.traces[0]}, {"ASYNCWATCH_NO_SYMBOLS=1"}, "", false);
    EXPECT_TRUE(exited_ok(rep)) << describe_status(rep.status) << "\n" << rep.err;
    EXPECT_NE(rep.out.find("the process did not exit cleanly (killed or crashed)"), std::string::npos) << rep.out;
  }
}

// Programs that never use CUDA, with the library loaded: the same stdout and exit status as
// without it, nothing on stderr, nothing in the trace directory (it holds only the test's own
// .stdout and .stderr files).
void expect_unchanged_without_cuda(const std::string& program, const std::vector<std::string>& args,
                                   const std::string& expected_out, int expected_exit) {
  // Sanitizer job: LSan would report the interpreter's own leaks (python's, seen), which are not
  // the library's and not there without the sanitizer runtime that the job preloads.
  std::vector<std::string> env;
  if (*AW_SANITIZER_ENV) env.push_back("ASAN_OPTIONS=detect_leaks=0");
  AppRun r = run_program(program, args, env);
  AppRun bare = run_program(program, args, {}, "", false);
  ASSERT_TRUE(WIFEXITED(bare.status)) << describe_status(bare.status) << "\n" << bare.err;
  EXPECT_EQ(WEXITSTATUS(bare.status), expected_exit);
  EXPECT_EQ(bare.out, expected_out);
  EXPECT_EQ(r.status, bare.status) << describe_status(r.status) << " with the library, " << describe_status(bare.status)
                                   << " without";
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(bare.err, "");
  EXPECT_TRUE(r.traces.empty());
  EXPECT_EQ(dir_entries(r.dir), (std::vector<std::string>{".stderr", ".stdout"}));
}

// bash: a builtin, an external command (fork + execve through the library's execve, which passes
// LD_PRELOAD on), a subshell's status, its own exit status.
TEST(EndToEnd, BashWithTheLibraryUnchanged) {
  expect_unchanged_without_cuda("/bin/bash",
                                {"-c", "echo hi; /bin/echo from a child process; (exit 2); echo $?; exit 3"},
                                "hi\nfrom a child process\n2\n", 3);
}

// python3: a thread and a subprocess (Python's fork/vfork + exec path), then sys.exit(5).
TEST(EndToEnd, PythonWithTheLibraryUnchanged) {
  if (!*AW_PYTHON3) GTEST_SKIP() << "no python3 found when the build was configured";
  expect_unchanged_without_cuda(
      AW_PYTHON3,
      {"-I", "-c",
       "import subprocess, sys, threading\n"
       "print('hi from python', flush=True)\n"
       "t = threading.Thread(target=print, args=('from a thread',)); t.start(); t.join()\n"
       "print(subprocess.run(['/bin/echo', 'from a subprocess'], stdout=subprocess.PIPE).stdout.decode(), end='')\n"
       "sys.exit(5)\n"},
      "hi from python\nfrom a thread\nfrom a subprocess\n", 5);
}

// A statically linked program: the dynamic loader never runs, so LD_PRELOAD cannot load the
// library (the program checks /proc/self/maps).
TEST(EndToEnd, StaticBinaryIgnoresTheLibrary) {
  expect_unchanged_without_cuda(AW_STATIC_APP, {"a", "b c"},
                                "static app: 2 arguments: a b c\nlibasyncwatch mapped: no\n", 4);
}

namespace {

// The test app run with its trace directory on a fresh tmpfs of a given size, mounted in a private
// mount namespace (unshare(CLONE_NEWNS) as root, otherwise inside a new user namespace too, as
// `unshare -rm` does). The tmpfs exists only in that namespace, so the helper process that
// mounted it copies every file out before it exits.
struct TmpfsRun {
  bool mounted = false;
  std::string why_not;                // when not mounted
  AppRun r;                           // r.traces: the copies taken out of the tmpfs
  std::vector<std::string> in_tmpfs;  // names left in the tmpfs when the app had exited
};

bool write_text(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
  close(fd);
  return ok;
}

bool copy_file(const std::string& from, const std::string& to) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  int out = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = out >= 0;
  char buf[1 << 16];
  ssize_t n;
  while (ok && (n = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, size_t(n)) == n;
  close(in);
  if (out >= 0) close(out);
  return ok;
}

// In the helper process: a private mount namespace. False with the reason when not possible.
bool enter_private_mount_namespace(std::string* why) {
  if (unshare(CLONE_NEWNS) != 0) {
    std::string first = std::string("unshare(CLONE_NEWNS): ") + strerror(errno);
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      *why = first + "; unshare(CLONE_NEWUSER|CLONE_NEWNS): " + strerror(errno);
      return false;
    }
    write_text("/proc/self/setgroups", "deny");
    if (!write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      *why = first + "; cannot write the user namespace's uid/gid map: " + strerror(errno);
      return false;
    }
  }
  // Nothing mounted here may propagate back to the machine's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why = std::string("mount --make-rprivate /: ") + strerror(errno);
    return false;
  }
  return true;
}

// size: tmpfs's size= option ("6m"). fill: write a file until the tmpfs is full before the app runs.
TmpfsRun run_on_tmpfs(const std::vector<std::string>& args, const std::string& size, bool fill = false,
                      const std::vector<std::string>& env = {}) {
  TmpfsRun t;
  t.r.dir = make_dir();
  const std::string mnt = t.r.dir + "/tmpfs", saved = t.r.dir + "/saved";
  const std::string out = t.r.dir + "/.stdout", err = t.r.dir + "/.stderr";
  mkdir(mnt.c_str(), 0755);
  mkdir(saved.c_str(), 0755);
  pid_t helper = fork();
  if (helper == 0) {
    std::string why;
    if (!enter_private_mount_namespace(&why)) {
      write_text(t.r.dir + "/.why_not", why);
      _exit(77);
    }
    std::string opts = "size=" + size + ",mode=0777";
    if (mount("aw-e2e-tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      write_text(t.r.dir + "/.why_not", "mount -t tmpfs -o " + opts + ": " + strerror(errno));
      _exit(77);
    }
    if (fill) {
      int fd = open((mnt + "/filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      static char chunk[4096];
      memset(chunk, 'x', sizeof chunk);
      while (fd >= 0 && write(fd, chunk, sizeof chunk) > 0) {}
      if (fd >= 0) close(fd);
    }
    pid_t app = fork();
    if (app == 0) {
      std::vector<std::string> a = {AW_TEST_APP};
      for (auto& x : args) a.push_back(x);
      exec_program(a, app_environment(env, mnt, true), out, err);
    }
    int st = 0;
    waitpid(app, &st, 0);
    std::string listing;
    for (const std::string& name : dir_entries(mnt)) {
      listing += name + "\n";
      if (name != "filler") copy_file(mnt + "/" + name, saved + "/" + name);
    }
    write_text(t.r.dir + "/.listing", listing);
    write_text(t.r.dir + "/.status", std::to_string(st));
    _exit(0);
  }
  int hs = 0;
  waitpid(helper, &hs, 0);
  if (!WIFEXITED(hs) || WEXITSTATUS(hs) != 0) {
    t.why_not = slurp(t.r.dir + "/.why_not");
    if (t.why_not.empty()) t.why_not = "the helper process ended with " + describe_status(hs);
    return t;
  }
  t.mounted = true;
  t.r.status = std::stoi(slurp(t.r.dir + "/.status"));
  t.r.out = slurp(out);
  t.r.err = slurp(err);
  t.r.traces = list_traces(saved);
  std::stringstream ls(slurp(t.r.dir + "/.listing"));
  for (std::string name; std::getline(ls, name);) t.in_tmpfs.push_back(name);
  return t;
}

}  // namespace

// Full disk: the trace directory is a 6 MiB tmpfs. The header and the first 4 MiB segment
// fit; posix_fallocate of the second fails with ENOSPC (200,000 copies need ~11 MiB). The app must
// not notice: exit 0, the same stdout as without the library, no signal (no SIGBUS from a hole).
// asyncwatch warns once, stops recording, closes the trace cleanly and counts every call it could
// not record (docs/configuration.md, docs/trace-format.md).
TEST(EndToEnd, FullDiskStopsTracingNotTheApp) {
  const int calls = 200000;
  TmpfsRun t = run_on_tmpfs({"copies", std::to_string(calls)}, "6m");
  if (!t.mounted) GTEST_SKIP() << "cannot mount a tmpfs here: " << t.why_not;
  AppRun bare = run({"copies", std::to_string(calls)}, {}, "", false);
  const AppRun& r = t.r;
  ASSERT_FALSE(WIFSIGNALED(r.status)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_TRUE(exited_ok(r)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
  EXPECT_EQ(count_of(r.err, "cannot grow trace file: No space left on device"), 1) << r.err;
  ASSERT_EQ(r.traces.size(), 1u) << r.err;
  EXPECT_EQ(t.in_tmpfs.size(), 1u);
  struct stat st;
  ASSERT_EQ(stat(r.traces[0].c_str(), &st), 0);
  EXPECT_LE(st.st_size, 6 << 20);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.header.closed, kClosedCleanly);
  EXPECT_EQ(c.header.exit_status, 0);  // main returned 0 (on_exit), closed by the destructor
  EXPECT_GT(c.total, 0u);              // the first segment's records are there
  EXPECT_LT(c.total, uint64_t(calls));
  EXPECT_GT(c.header.records_lost, 0u);
  EXPECT_GE(c.total + c.header.records_lost, uint64_t(calls));       // every call written or counted
  EXPECT_LE(c.total + c.header.records_lost, uint64_t(calls) + 16);  // + the set-up calls at most
  printf("[ tmpfs  ] 6 MiB: %llu copies written, records_lost=%llu of %d calls, trace %lld bytes\n",
         (unsigned long long)c.total, (unsigned long long)c.header.records_lost, calls, (long long)st.st_size);
}

// The same on a 128 KiB tmpfs: the header fits, the first (256 KiB) segment does not: a header-only
// trace.
TEST(EndToEnd, FullDiskBeforeTheFirstSegmentLeavesAHeaderOnlyTrace) {
  TmpfsRun t = run_on_tmpfs({"copies", "1000"}, "128k");
  if (!t.mounted) GTEST_SKIP() << "cannot mount a tmpfs here: " << t.why_not;
  AppRun bare = run({"copies", "1000"}, {}, "", false);
  const AppRun& r = t.r;
  ASSERT_FALSE(WIFSIGNALED(r.status)) << describe_status(r.status);
  EXPECT_TRUE(exited_ok(r)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
  EXPECT_EQ(count_of(r.err, "cannot grow trace file: No space left on device"), 1) << r.err;
  ASSERT_EQ(r.traces.size(), 1u);
  CopyCounts c = count_copies(r.traces[0]);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.header.closed, kClosedCleanly);
  EXPECT_EQ(c.header.blocks_claimed, 0u);
  EXPECT_EQ(c.total, 0u);
  EXPECT_GE(c.header.records_lost, 1000u);
  EXPECT_LE(c.header.records_lost, 1000u + 16u);
}

// A tmpfs already full: not even the header can be allocated. One warning, no file left behind
// (the empty file is removed), the app unaffected.
TEST(EndToEnd, FullDiskBeforeTheHeaderLeavesNoFile) {
  TmpfsRun t = run_on_tmpfs({"copies", "1000"}, "1m", /*fill=*/true);
  if (!t.mounted) GTEST_SKIP() << "cannot mount a tmpfs here: " << t.why_not;
  AppRun bare = run({"copies", "1000"}, {}, "", false);
  const AppRun& r = t.r;
  ASSERT_FALSE(WIFSIGNALED(r.status)) << describe_status(r.status);
  EXPECT_TRUE(exited_ok(r)) << describe_status(r.status) << "\n" << r.err;
  EXPECT_EQ(r.out, bare.out);
  EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
  EXPECT_EQ(count_of(r.err, "cannot allocate trace file"), 1) << r.err;
  EXPECT_TRUE(r.traces.empty());
  EXPECT_EQ(t.in_tmpfs, (std::vector<std::string>{"filler"}));
}

// Fork from a multithreaded parent: 4 threads make copies continuously (pageable and
// pinned, with a pinned allocation and free every 2 copies) while the main thread forks 32
// children one after the other, so a fork can happen while another thread holds a trace block,
// the trace writer's lock, the stack-interning lock or the classifier's lock. Each child makes
// 1,000 copies while the threads go on, and leaves through _exit(0). Every trace holds exactly its
// own process's calls (sizes: parent main 64, parent thread t 70+t, child k 100+k); nothing lost;
// all closed cleanly; no deadlock (a child that hangs is killed after 10 s and fails the app).
// Without the fork handlers that take the library's locks, 15 to 29 runs in 20 to 30 had a child
// hung in the classifier's lock (inherited held) and failed; with 2 children instead of 32, 1 run
// in 20 (0 in 20 with an allocation every 64 copies), hence 32 children and frequent allocations.
TEST(EndToEnd, ForkFromMultithreadedParentEachTraceHasExactlyItsOwnRecords) {
  const int threads = 4, kids = 32, calls = 1000;
  AppRun r = run({"mtforks", std::to_string(threads), std::to_string(kids), std::to_string(calls), "2"},
                 {"ASYNCWATCH_QUIET=1"});
  ASSERT_TRUE(exited_ok(r)) << describe_status(r.status) << "\n" << r.out << r.err;
  EXPECT_EQ(r.err, "");
  std::map<uint64_t, uint64_t> made;  // copy size -> copies the parent's thread made (its stdout)
  std::stringstream out(r.out);
  for (std::string line; std::getline(out, line);) {
    int t;
    long n;
    if (sscanf(line.c_str(), "thread %d copies %ld", &t, &n) == 2) made[uint64_t(70 + t)] = uint64_t(n);
  }
  ASSERT_EQ(made.size(), size_t(threads)) << r.out;
  ForkTraces f;
  ASSERT_NO_FATAL_FAILURE(read_fork_traces(r, size_t(kids + 1), &f));
  const uint64_t parent_pid = f.parent_pid;
  std::set<uint64_t> child_sizes;
  for (auto& c : f.all) {
    if (c.header.pid == parent_pid) {
      EXPECT_EQ(c.per_bytes.size(), size_t(1 + threads));
      EXPECT_EQ(c.per_bytes[64], 1000u);
      uint64_t sum = 1000;
      for (auto& [bytes, n] : made) {
        EXPECT_EQ(c.per_bytes[bytes], n) << "parent thread copying " << bytes << " bytes";
        sum += n;
      }
      EXPECT_EQ(c.total, sum);
      printf("[ mtfork ] parent: %llu copies (threads: ", (unsigned long long)c.total);
      for (auto& [bytes, n] : made) printf("%llu ", (unsigned long long)n);
      printf(")\n");
    } else {
      ASSERT_NO_FATAL_FAILURE(check_child_trace(c, parent_pid, kids, calls));
      child_sizes.insert(c.per_bytes.begin()->first);
      EXPECT_EQ(c.per_tid.size(), 1u);  // only the forking thread exists in the child
    }
  }
  EXPECT_EQ(child_sizes.size(), size_t(kids));
  for (auto& [bytes, n] : f.seen_bytes) EXPECT_EQ(n, 1) << bytes << "-byte copies in " << n << " traces";
}

// ---- Preload library: the application's files, descriptors, signals, cancellation,
// runtime instances, loss accounting, clone -------------------------------------------------------
namespace {

// The two places the trace's descriptor can live (trace/trace_file.h): the file thread's own table
// (the default), or the process's table when unshare() is refused (a container's seccomp profile;
// the test app installs such a filter with AW_TEST_DENY_UNSHARE=1). In its own table the file is
// made unnamed (O_TMPFILE) and linked once its header is written; where O_TMPFILE is refused
// (AW_TEST_DENY_TMPFILE=1: a file system without it) it is created under its name.
struct FdMode {
  const char* name;
  std::vector<std::string> env;
  bool own_table;  // the descriptor in the file thread's own table
};
const FdMode kFdModes[] = {{"private table", {}, true},
                           {"private table, no O_TMPFILE", {"AW_TEST_DENY_TMPFILE=1"}, true},
                           {"process table (unshare denied)", {"AW_TEST_DENY_UNSHARE=1"}, false}};

std::map<uint64_t, size_t> copies_by_size(const Trace& t) {
  std::map<uint64_t, size_t> m;
  for (const auto& c : copies(t)) ++m[c.bytes];
  return m;
}

// The sanitizer jobs preload the sanitizer runtime before the library: it defines sigaction,
// signal and _exit itself, in front of ours (see preload/tests/CMakeLists.txt).
bool under_sanitizer() { return *AW_SANITIZER_ENV != 0; }
bool under_tsan() { return !strncmp(AW_SANITIZER_ENV, "TSAN_OPTIONS=", 13); }
// For programs whose signal handlers make CUDA calls: under TSan (whose runtime runs the program's
// handlers itself, where the library cannot tell them from the program), TSan's reports of
// "signal-unsafe call inside of a signal" are about exactly that, and are turned off; its race
// reports stay on. Entries of the test come first (getenv returns the first match).
std::vector<std::string> handler_env(std::vector<std::string> env = {}) {
  if (under_tsan()) env.push_back(std::string(AW_SANITIZER_ENV) + ":report_signal_unsafe=0");
  return env;
}

bool skipped_for_seccomp(const AppRun& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 20; }

std::string copy_file_to(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  return to;
}

}  // namespace

// Item 1: the program closes or replaces every descriptor from 3 up after its first CUDA calls,
// then writes a file of its own (8 MiB, 80,000 more calls in between: new trace segments).
TEST(HostileApp, ProgramClosingOrReplacingDescriptorsLeavesItsFileAndTheTraceIntact) {
  for (const char* how : {"closefrom", "close_range", "dup2"}) {
    for (const FdMode& m : kFdModes) {
      SCOPED_TRACE(std::string(how) + ", " + m.name);
      std::string dir = make_dir();
      AppRun bare = run({"fdsteal", how, dir + "/bare.data", "2000"}, m.env, dir, false);
      if (skipped_for_seccomp(bare)) GTEST_SKIP() << "seccomp filters not available: " << bare.err;
      std::string tdir = make_dir();
      AppRun r = run({"fdsteal", how, tdir + "/own.data", "2000"}, m.env, tdir);
      ASSERT_TRUE(exited_ok(bare)) << bare.err;
      ASSERT_TRUE(exited_ok(r)) << r.err;
      EXPECT_EQ(r.out, "own file intact\n");
      EXPECT_EQ(r.out, bare.out);
      Trace t = only_trace(r);
      EXPECT_EQ(t.header.closed, kClosedCleanly);
      size_t written = copies(t).size();
      if (m.own_table) {
        // The descriptor was never in the program's table: nothing happened to the trace.
        EXPECT_EQ(written, 1000u + 2000u * 40u);
        EXPECT_EQ(t.header.records_lost, 0u);
        EXPECT_EQ(count_of(r.err, "warning"), 0) << r.err;
      } else {
        // Tracing stopped at the next segment with one warning; the copies since are counted.
        EXPECT_EQ(count_of(r.err, "closed or replaced by the application"), 1) << r.err;
        EXPECT_EQ(count_of(r.err, "warning"), 1) << r.err;
        EXPECT_EQ(written + t.header.records_lost, 1000u + 2000u * 40u);
        EXPECT_GE(written, 1000u);
      }
    }
  }
}

// Item 1, after fork(): the child closes its inherited copy of the parent's file, then closes or
// replaces every descriptor from 3 up and writes a file of its own; the parent writes its file
// before and after the fork. Both files intact, each process's trace exactly its own calls.
TEST(HostileApp, ForkChildClosingDescriptorsLeavesBothFilesAndTracesIntact) {
  // The parent has the trace's file thread; the child starts its own, which TSan refuses after a
  // multithreaded fork (die_after_fork), as for the other fork tests.
  if (under_tsan()) GTEST_SKIP() << "TSan does not support starting threads after a multithreaded fork";
  for (const char* how : {"closefrom", "dup2"}) {
    for (const FdMode& m : kFdModes) {
      SCOPED_TRACE(std::string(how) + ", " + m.name);
      std::string bdir = make_dir(), tdir = make_dir();
      AppRun bare = run({"fdsteal_fork", how, bdir + "/child.data", "500"}, m.env, bdir, false);
      if (skipped_for_seccomp(bare)) GTEST_SKIP() << "seccomp filters not available: " << bare.err;
      AppRun r = run({"fdsteal_fork", how, tdir + "/child.data", "500"}, m.env, tdir);
      ASSERT_TRUE(exited_ok(bare)) << bare.err;
      ASSERT_TRUE(exited_ok(r)) << r.err;
      EXPECT_EQ(bare.out, "own file intact\nchild exit 0, parent's file intact\n");
      EXPECT_EQ(r.out, bare.out);
      ASSERT_EQ(r.traces.size(), 2u) << r.err;
      for (const std::string& p : r.traces) {
        Trace t = aw_test::read_trace(p);
        ASSERT_TRUE(t.ok) << t.error;
        EXPECT_EQ(t.header.closed, kClosedCleanly) << p;
        size_t written = copies(t).size();
        if (t.header.parent_pid_if_forked == 0) {  // the parent: its descriptor was never touched
          EXPECT_EQ(written, 1500u) << p;
          EXPECT_EQ(t.header.records_lost, 0u) << p;
        } else if (m.own_table) {  // the child, its descriptor in the file thread's own table
          EXPECT_EQ(written, 1000u + 500u * 40u) << p;
          EXPECT_EQ(t.header.records_lost, 0u) << p;
        } else {  // the child's high descriptor closed by it: stopped, the rest counted
          EXPECT_EQ(written + t.header.records_lost, 1000u + 500u * 40u) << p;
        }
      }
      EXPECT_LE(count_of(r.err, "warning"), m.own_table ? 0 : 1) << r.err;
    }
  }
}

// Item 2: a closed stdin/stdout/stderr never becomes the trace: read(0)/write(1|2) still fail with
// EBADF after the first CUDA call, the program's own file (which gets the lowest number) is
// untouched, and the trace header is intact. With stderr closed the library writes nothing.
TEST(HostileApp, ClosedStandardDescriptorsNeverBecomeTheTrace) {
  for (const char* closed : {"0", "1", "2", "012"}) {
    for (const FdMode& m : kFdModes) {
      SCOPED_TRACE(std::string("closed ") + closed + ", " + m.name);
      std::string bdir = make_dir(), tdir = make_dir();
      AppRun bare = run_program(AW_TEST_APP, {"closed_stdio", bdir + "/report"}, m.env, bdir, false, closed);
      if (skipped_for_seccomp(bare)) GTEST_SKIP() << "seccomp filters not available";
      AppRun r = run_program(AW_TEST_APP, {"closed_stdio", tdir + "/report"}, m.env, tdir, true, closed);
      ASSERT_TRUE(exited_ok(bare));
      ASSERT_TRUE(exited_ok(r)) << r.err;
      std::string want = slurp(bdir + "/report"), got = slurp(tdir + "/report");
      EXPECT_NE(want.find("own file intact"), std::string::npos) << want;
      EXPECT_EQ(got, want);
      if (strchr(closed, '2')) EXPECT_EQ(r.err, "");  // nothing written anywhere: not the banner either
      Trace t = only_trace(r);
      EXPECT_EQ(t.header.closed, kClosedCleanly);
      EXPECT_EQ(copies(t).size(), 100u + 80u);
    }
  }
}

// Item 3: a signal handler that calls _exit or exit at any moment of the process's first CUDA call
// (the trace's open, its first segment) ends the process: 40 children (10 under a sanitizer), the timer at 0-2 ms.
TEST(HostileApp, HandlerExitingDuringTheFirstCallNeverHangs) {
  for (const char* kind : {"_exit", "exit"}) {
    SCOPED_TRACE(kind);
    // exit() is not async-signal-safe: it runs atexit handlers, which allocate. Through our
    // trampoline the handler never interrupts the library's own code (deferred); under a
    // sanitizer runtime (no trampoline of ours) it can interrupt an allocation of ours.
    if (under_sanitizer() && !strcmp(kind, "exit")) continue;
    const std::string n = under_sanitizer() ? "10" : "40";  // a sanitized child takes ~1 s
    // Each copy takes 2 ms: the first ones run while the file thread makes the file, as a real
    // first call (context creation) does, so that the handler can end the process meanwhile.
    const std::vector<std::string> slow{"FAKE_CUDA_COPY_SLEEP_US=2000"};
    AppRun bare = run({"sig_exit", kind, n, "50"}, slow, "", false);
    AppRun r = run({"sig_exit", kind, n, "50"}, handler_env(slow));
    EXPECT_EQ(bare.out, "children=" + n + " ended_by_handler=" + n + " hung=0 other=0\n") << bare.err;
    EXPECT_EQ(r.out, bare.out) << r.err;
    EXPECT_TRUE(exited_ok(r));
    // Each child's trace reads (closed, or header only when the handler came before the first
    // segment). Not under a sanitizer: its _exit bypasses ours, so a child ended while the file
    // thread was creating the file can leave it empty, as SIGKILL there would. Ended by exit()
    // (which runs ours), every trace left is closed: one the file thread was making is named and
    // closed, or never named (trace_file::settle_unnamed); the child's exit handler makes a CUDA
    // call after that, which must not wait for the file.
    if (!under_sanitizer())
      for (const std::string& p : r.traces) {
        aw_test::Trace t = aw_test::read_trace(p);
        EXPECT_TRUE(t.ok) << p;
        if (!strcmp(kind, "exit")) EXPECT_EQ(t.header.closed, kClosedCleanly) << p;
      }
  }
}

// Item 3 and 10: a handler that makes a CUDA call at any moment of the first call: the handler's
// call is recorded or counted in records_lost, never dropped; the program's own calls all recorded.
TEST(HostileApp, HandlerCopyDuringTheFirstCallIsWrittenOrCounted) {
  const std::string n = under_sanitizer() ? "10" : "40";  // a sanitized child takes ~1 s
  AppRun bare = run({"sig_copy", n, "50", "200"}, {}, "", false);
  AppRun r = run({"sig_copy", n, "50", "200"}, handler_env());
  EXPECT_EQ(bare.out, "children=" + n + " ok=" + n + " hung=0 other=0\n") << bare.err;
  EXPECT_EQ(r.out, bare.out) << r.err;
  ASSERT_EQ(r.traces.size(), std::stoul(n)) << r.err;
  for (const std::string& p : r.traces) {
    Trace t = aw_test::read_trace(p);
    ASSERT_TRUE(t.ok) << p;
    auto by = copies_by_size(t);
    EXPECT_EQ(by[64], 200u) << p;
    EXPECT_EQ(by[77] + t.header.records_lost, 1u) << p;
  }
}

// Items 3, 9 and 10: a timer every 40 us whose handler copies, while the program makes 20,000
// copies: every handler call is in the trace or in records_lost, the trace reads record by record.
// Installed with sigaction, the handler never runs inside the library (held back until it returns):
// every call is written. Installed with the raw system call (unseen by the library), a handler that
// interrupted the library's own code passes through and is counted.
TEST(HostileApp, SignalStormEveryCallWrittenOrCounted) {
  for (bool raw : {false, true}) {
    SCOPED_TRACE(raw ? "raw rt_sigaction" : "sigaction");
    // Under TSan the handler's pinned copy takes longer than the stack threshold, and unwinding its
    // stack through the test's own signal-return trampoline fails inside libgcc (the frame after
    // the trampoline reads as pc 0x7: SIGSEGV in 5-6 of 8 runs, 0 of 8 bare). Not seen in the plain
    // build (8 of 8 with ASYNCWATCH_STACKS=all) nor under ASan; not understood yet (docs/reliability.md).
    if (raw && under_tsan()) {
      printf("[ storm ] raw: skipped under TSan (unwinding through the raw trampoline, see the comment)\n");
      continue;
    }
    std::vector<std::string> args = {"sig_storm", "20000", "40"};
    if (raw) args.push_back("raw");
    AppRun bare = run(args, {}, "", false);
    AppRun r = run(args, handler_env());
    ASSERT_TRUE(exited_ok(bare)) << bare.err;
    ASSERT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.out, bare.out);
    std::smatch mt;
    ASSERT_TRUE(std::regex_search(r.err, mt, std::regex("handler calls (\\d+)"))) << r.err;
    uint64_t handler_calls = std::stoull(mt[1]);
    EXPECT_GT(handler_calls, 0u);
    Trace t = only_trace(r);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    auto by = copies_by_size(t);
    EXPECT_EQ(by[64], 20000u);
    EXPECT_EQ(by[77] + t.header.records_lost, handler_calls);
    // Through our trampoline nothing is lost (not under a sanitizer runtime, which installs the
    // program's handlers itself, past the library).
    if (!raw && !under_sanitizer()) EXPECT_EQ(t.header.records_lost, 0u);
    printf("[ storm ] %s: %llu handler calls: %zu recorded, %llu counted lost\n", raw ? "raw" : "sigaction",
           static_cast<unsigned long long>(handler_calls), by[77],
           static_cast<unsigned long long>(t.header.records_lost));
    fflush(stdout);  // before the next fork
  }
}

// A signal handler whose calls fill the thread's block while the call it interrupted has its record
// in flight there: the block is retired, and the segment holding it (segment 0: the first call's
// record) may leave the mapping before that call completes its record. It must stay mapped until
// then (trace_file.cpp, in_flight_left): unmapped, the completion was a SIGSEGV in the program. In
// each mode, since each completes the record its own way (summary mode through its slot, the flight
// recorder with its ring copy made before the record's last store).
TEST(HostileApp, HandlerFillingTheBlockOfAnInterruptedCallKeepsItsRecordMapped) {
  const char* copies = "8000";  // 64-byte copy records: 560 KiB, past the first segment's 256 KiB
  AppRun bare = run({"sig_fill", copies}, {"FAKE_CUDA_SYNC_SLEEP_US=300000"}, "", false);
  ASSERT_TRUE(exited_ok(bare)) << bare.err;
  for (const char* mode : {"", "ASYNCWATCH_SUMMARY=1", "ASYNCWATCH_TRACE_LIMIT=1M"}) {
    SCOPED_TRACE(*mode ? mode : "full mode");
    std::vector<std::string> env = handler_env();
    env.push_back("FAKE_CUDA_SYNC_SLEEP_US=300000");
    if (*mode) env.push_back(mode);
    AppRun r = run({"sig_fill", copies}, env);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.out, bare.out);
    Trace t = only_trace(r);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    EXPECT_EQ(t.calls(RecordType::Copy) + t.header.records_lost, 8000u);
    EXPECT_EQ(t.calls(RecordType::Sync), 1u);
    for (const auto& sync : t.all<SyncRecord>(RecordType::Sync))
      EXPECT_EQ(sync.flags & kFlagInFlight, 0u) << "completed";
  }
}

// Item 3: a signal that arrives while the thread runs the library's own code (here: queued by the
// fake driver inside the library's pointer query) is held back and delivered, with its siginfo,
// when the wrapper returns: the handler runs once per signal, its copy is recorded (not lost), and
// after the call that was interrupted.
TEST(HostileApp, SignalInTheLibrarysCodeDeliveredAfterItWithItsSiginfo) {
  if (under_sanitizer())
    GTEST_SKIP() << "the sanitizer runtime installs the program's handlers itself: no trampoline of ours";
  AppRun r = run({"sig_deferred", "50"}, {"FAKE_CUDA_QUERY_SIGNAL=" + std::to_string(SIGUSR2)});
  ASSERT_TRUE(exited_ok(r)) << describe_status(r.status) << r.err;
  EXPECT_EQ(r.out, "handler ran 50 times, 50 with their siginfo\n");
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.records_lost, 0u);
  std::vector<uint64_t> sizes;
  for (const auto& c : copies(t)) sizes.push_back(c.bytes);
  std::vector<uint64_t> want;
  for (int i = 0; i < 50; ++i) want.insert(want.end(), {64, 77});
  EXPECT_EQ(sizes, want);
}

// Item 3: a handler that leaves with siglongjmp (on the thread's stack and on an alternate signal
// stack): its copy is recorded as a handler's (no call site, no driver query), and the thread's
// later calls as usual (pageable, with their call site), as the library tells from the stack that
// the handler is gone.
TEST(HostileApp, HandlerLeftWithSiglongjmpLaterCallsRecordedAsUsual) {
  for (bool alt : {false, true}) {
    SCOPED_TRACE(alt ? "alternate signal stack" : "thread's stack");
    std::vector<std::string> args = {"sig_longjmp"};
    if (alt) args.push_back("alt");
    AppRun bare = run(args, {}, "", false);
    AppRun r = run(args, handler_env());
    EXPECT_EQ(bare.out, "handler ran 3 times\n") << bare.err;
    EXPECT_EQ(r.out, bare.out) << r.err;
    ASSERT_TRUE(exited_ok(r)) << r.err;
    size_t handler = 0, later = 0;
    for (const auto& c : copies(only_trace(r))) {
      if (c.bytes == 77) {
        ++handler;
        if (!under_sanitizer()) EXPECT_FALSE(c.flags & kFlagStackCaptured);  // known as a handler's (trampoline)
      } else {
        ++later;
        EXPECT_EQ(c.src_memory, static_cast<uint8_t>(MemoryKind::Pageable));
        EXPECT_TRUE(c.flags & kFlagStackCaptured);
      }
    }
    EXPECT_EQ(handler, 3u);
    EXPECT_EQ(later, 15u);
  }
}

// Item 3: the program sees exactly the handlers it installed (sigaction, signal, sysv_signal, sigset
// report the program's own functions; System V semantics still reset the handler), although the
// kernel holds the library's trampoline.
TEST(HostileApp, SignalApiReportsTheProgramsOwnHandlers) {
  if (under_sanitizer()) GTEST_SKIP() << "the sanitizer runtime implements signal() itself (other flags than glibc's)";
  AppRun bare = run({"sig_api"}, {}, "", false);
  AppRun r = run({"sig_api"});
  ASSERT_TRUE(exited_ok(bare)) << bare.err;
  EXPECT_EQ(bare.out,
            "sigaction: h1 1, siginfo 1\nsignal: returned h1 1\nnow h2 1, restart 1, siginfo 0\n"
            "sysv_signal: returned h2 1\nafter one delivery: h3 ran 1, reset to default 1\n"
            "sigset: returned default 1\nh2 ran 1, signal returned h2 1, handler copies 1\n");
  EXPECT_EQ(r.out, bare.out) << r.err;
  EXPECT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(copies_by_size(only_trace(r))[77], 1u);
}

// Item 4: a thread with a pending pthread_cancel makes the process's first CUDA call: no SIGABRT;
// it is cancelled where it would be without the library (at its next cancellation point, or inside
// the driver call when that is one: FAKE_CUDA_CANCEL_POINT=1).
TEST(HostileApp, PendingCancellationAtTheFirstCall) {
  for (bool inside : {false, true}) {
    SCOPED_TRACE(inside ? "cancellation point inside the driver call" : "after the call");
    std::vector<std::string> env;
    if (inside) env.push_back("FAKE_CUDA_CANCEL_POINT=1");
    AppRun bare = run({"cancel"}, env, "", false);
    AppRun r = run({"cancel"}, env);
    EXPECT_EQ(bare.out, "thread cancelled\nmain copies done\n") << bare.err;
    EXPECT_EQ(r.out, bare.out) << r.err;
    EXPECT_TRUE(exited_ok(r)) << describe_status(r.status) << r.err;
    auto by = copies_by_size(only_trace(r));
    EXPECT_EQ(by[64], inside ? 5u : 6u);  // the thread's copy returned only when not cancelled inside it
  }
}

// Item 5: five copies of a runtime loaded RTLD_LOCAL from different paths: each copy's calls reach
// its own functions; the first three are traced at the runtime level (instance slots), the others
// are handed out unwrapped (their driver calls are still recorded).
TEST(HostileApp, EveryRuntimeCopyCallsItsOwnFunctions) {
  std::string dir = make_dir();
  std::vector<std::string> args = {"runtimes"};
  for (int i = 0; i < 5; ++i) {
    std::string sub = dir + "/copy" + std::to_string(i);
    mkdir(sub.c_str(), 0755);
    args.push_back(copy_file_to(AW_FAKE_CUDART, sub + "/libcudart.so.13"));
  }
  AppRun bare = run(args, {}, "", false);
  AppRun r = run(args);
  ASSERT_TRUE(exited_ok(bare)) << bare.err;
  EXPECT_EQ(bare.out,
            "runtime 0 served 2 calls\nruntime 1 served 3 calls\nruntime 2 served 4 calls\n"
            "runtime 3 served 5 calls\nruntime 4 served 6 calls\n");
  EXPECT_EQ(r.out, bare.out) << r.err;
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  std::map<uint64_t, size_t> memsets;
  for (const auto& m : t.all<CopyRecord>(RecordType::Memset)) {
    EXPECT_EQ(m.api, static_cast<uint16_t>(Api::cudaMemset));
    EXPECT_TRUE(m.flags & kFlagRuntimeOnly);
    ++memsets[m.bytes];
  }
  EXPECT_EQ(memsets, (std::map<uint64_t, size_t>{{100, 1}, {101, 2}, {102, 3}}));
  std::map<uint64_t, uint16_t> api_by_size;
  for (const auto& c : copies(t)) {
    if (c.bytes < 1000) continue;
    EXPECT_EQ(api_by_size.count(c.bytes), 0u) << "two records of one call of " << c.bytes << " bytes";
    api_by_size[c.bytes] = c.api;
    EXPECT_EQ(c.driver_fn, static_cast<uint16_t>(Api::cuMemcpyHtoDAsync_v2));
  }
  const auto rt = static_cast<uint16_t>(Api::cudaMemcpyAsync), drv = static_cast<uint16_t>(Api::cuMemcpyHtoDAsync_v2);
  EXPECT_EQ(api_by_size, (std::map<uint64_t, uint16_t>{{1000, rt}, {1001, rt}, {1002, rt}, {1003, drv}, {1004, drv}}));
}

// Launches through a shared runtime: the in-runtime cuLaunchKernel fills the runtime call's record,
// before the real call once the kernel's name is cached (the second and later launches of a
// kernel: hook_entry.h, prefilled wrappers), after it otherwise; the records are the same either
// way. With FAKE_CUDA_LAUNCH_NESTED the driver's launch makes a copy through its own exported entry
// point, inside the real function that the prefilled wrapper jumped to: not an application call.
TEST(RuntimeRecords, RuntimeLaunchRecordsFilledBeforeAndAfterTheCall) {
  std::string dir = make_dir();
  std::string lib = copy_file_to(AW_FAKE_CUDART, dir + "/libcudart.so.13");
  for (bool nested : {false, true}) {
    SCOPED_TRACE(nested ? "nested" : "plain");
    std::vector<std::string> env;
    if (nested) env.push_back("FAKE_CUDA_LAUNCH_NESTED=1");
    AppRun bare = run({"rt_launch", lib}, env, "", false);
    AppRun r = run({"rt_launch", lib}, env);
    EXPECT_EQ(bare.out, "launches ok, the last 98\n") << bare.err;
    EXPECT_EQ(r.out, bare.out) << r.err;
    ASSERT_TRUE(exited_ok(r)) << r.err;
    Trace t = only_trace(r);
    EXPECT_EQ(copies(t).size(), 0u);
    auto l = t.all<LaunchRecord>(RecordType::Launch);
    ASSERT_EQ(l.size(), 7u);
    std::map<std::string, uint32_t> ids;
    for (const auto& rec : t.records)
      if (rec.type() == RecordType::String) {
        const auto* sr = reinterpret_cast<const StringRecord*>(rec.bytes.data());
        ids[std::string(rec.bytes.data() + sizeof(StringRecord), sr->len)] = sr->string_id;
      }
    ASSERT_EQ(ids.size(), 2u);
    struct Want {
      const char* name;
      uint32_t grid[3], block[3], shared;
      uint64_t stream;
      StreamKind kind;
      bool first;
    };
    const Want want[] = {
        {"_Z5firstv", {4, 2, 1}, {128, 1, 1}, 0, 0, StreamKind::LegacyDefault, true},
        {"_Z5firstv", {4, 2, 1}, {128, 1, 1}, 0, 0, StreamKind::LegacyDefault, false},
        {"_Z5firstv", {4, 2, 1}, {128, 1, 1}, 0, 0, StreamKind::LegacyDefault, false},
        {"_Z6secondv", {7, 5, 3}, {32, 8, 2}, 1024, 0x1230, StreamKind::Explicit, true},
        {"_Z6secondv", {7, 5, 3}, {32, 8, 2}, 1024, 0x1230, StreamKind::Explicit, false},
        {"_Z5firstv", {4, 2, 1}, {128, 1, 1}, 0, 2, StreamKind::PerThreadDefault, false},
        {nullptr, {1, 1, 1}, {1, 1, 1}, 0, 0, StreamKind::LegacyDefault, false},
    };
    for (size_t i = 0; i < 7; ++i) {
      SCOPED_TRACE(i);
      const Want& w = want[i];
      EXPECT_EQ(l[i].api, static_cast<uint16_t>(Api::cudaLaunchKernel));
      EXPECT_EQ(l[i].driver_fn, static_cast<uint16_t>(Api::cuLaunchKernel));
      EXPECT_EQ(l[i].result, i == 6 ? 98 : 0);
      EXPECT_EQ(l[i].flags & (kFlagInFlight | kFlagRuntimeOnly | kFlagPerThreadEntry), 0u);
      EXPECT_EQ((l[i].flags & kFlagFirstLaunch) != 0, w.first);
      EXPECT_EQ(l[i].kernel_name_id, w.name ? ids[w.name] : 0u);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(l[i].grid[k], w.grid[k]);
        EXPECT_EQ(l[i].block[k], w.block[k]);
      }
      EXPECT_EQ(l[i].shared_mem_bytes, w.shared);
      EXPECT_EQ(l[i].stream, w.stream);
      EXPECT_EQ(l[i].stream_kind, static_cast<uint8_t>(w.kind));
      EXPECT_GE(l[i].end_ns, l[i].start_ns);
    }
  }
}

// Copies through a shared runtime from and to a pinned buffer: the in-runtime driver copy fills
// the runtime call's record before the real call once the buffer is the thread's last pinned hit
// (the second and later copies: hook_entry.h, prefilled wrappers), after it otherwise (the first;
// one the runtime makes by a tail call, whose return address is our runtime wrapper's; a pageable
// source, which also gets its stack and evidence); the records are the same every way.
TEST(RuntimeRecords, RuntimeCopyRecordsFilledBeforeAndAfterTheCall) {
  std::string dir = make_dir();
  std::string lib = copy_file_to(AW_FAKE_CUDART, dir + "/libcudart.so.13");
  // No stack for a copy that blocked (a slow first call, a sanitizer's): only the policy's.
  const std::vector<std::string> env = {"ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=10000000"};
  AppRun bare = run({"rt_copy", lib}, env, "", false);
  AppRun r = run({"rt_copy", lib}, env);
  EXPECT_EQ(bare.out, "copies ok\n") << bare.err;
  EXPECT_EQ(r.out, bare.out) << r.err;
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto c = copies(only_trace(r));
  ASSERT_EQ(c.size(), 7u);
  const uint64_t bytes[] = {100, 101, 102, 200, 201, 250, 300};
  for (size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    const bool to_host = i == 3 || i == 4, pageable = i == 6;
    EXPECT_EQ(c[i].api, static_cast<uint16_t>(Api::cudaMemcpyAsync));
    EXPECT_EQ(c[i].driver_fn, static_cast<uint16_t>(to_host ? Api::cuMemcpyDtoHAsync_v2 : Api::cuMemcpyHtoDAsync_v2));
    EXPECT_EQ(c[i].result, 0);
    EXPECT_EQ(c[i].bytes, bytes[i]);
    EXPECT_EQ(c[i].direction, static_cast<uint8_t>(to_host ? Direction::DtoH : Direction::HtoD));
    const auto host = static_cast<uint8_t>(pageable ? MemoryKind::Pageable : MemoryKind::Pinned);
    const auto device = static_cast<uint8_t>(MemoryKind::Device);
    EXPECT_EQ(c[i].src_memory, to_host ? device : host);
    EXPECT_EQ(c[i].dst_memory, to_host ? host : device);
    EXPECT_EQ(c[i].stream, i < 3 ? 0x5670u : 0u);
    EXPECT_EQ(c[i].stream_kind, static_cast<uint8_t>(i < 3 ? StreamKind::Explicit : StreamKind::LegacyDefault));
    EXPECT_EQ(c[i].flags & (kFlagInFlight | kFlagRuntimeOnly | kFlagPerThreadEntry | kFlagSynchronousApi), 0u);
    // Only the pageable copy has a stack and the evidence of whether it completed.
    EXPECT_EQ((c[i].flags & kFlagStackCaptured) != 0, pageable);
    EXPECT_EQ((c[i].flags & kFlagEvidenceChecked) != 0, pageable);
  }
}

// Item 5: a runtime unloaded and loaded again at another address: the new copy's function is
// called, not the unloaded one's (before: SIGSEGV).
TEST(HostileApp, RuntimeUnloadedAndLoadedElsewhere) {
  std::string dir = make_dir();
  std::string lib = copy_file_to(AW_FAKE_CUDART, dir + "/libcudart.so.13");
  AppRun bare = run({"reload", lib}, {}, "", false);
  AppRun r = run({"reload", lib});
  EXPECT_EQ(bare.out, "first load served 1\nloaded again elsewhere\nsecond load served 1\n") << bare.err;
  EXPECT_EQ(r.out, bare.out) << r.err;
  EXPECT_TRUE(exited_ok(r)) << describe_status(r.status);
  auto m = only_trace(r).all<CopyRecord>(RecordType::Memset);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].bytes, 10u);
  EXPECT_EQ(m[1].bytes, 11u);
}

// Item 6: RLIMIT_NOFILE with one descriptor free when the first CUDA call starts, which the driver
// needs: the call succeeds as without the library. The trace is traced from the file thread's own
// table; where unshare is denied there is no room for it: one warning, no trace, the program as bare.
TEST(HostileApp, LastFreeDescriptorLeftToTheDriver) {
  if (under_sanitizer()) GTEST_SKIP() << "LeakSanitizer needs descriptors at exit: the program fails bare";
  for (const FdMode& m : kFdModes) {
    SCOPED_TRACE(m.name);
    std::vector<std::string> env = m.env;
    env.push_back("FAKE_CUDA_NEEDS_FD=1");
    AppRun bare = run({"nofile"}, env, "", false);
    if (skipped_for_seccomp(bare)) GTEST_SKIP() << "seccomp filters not available";
    AppRun r = run({"nofile"}, env);
    EXPECT_EQ(bare.out, "alloc result 0\ncopies done; a further open fails (EMFILE)\n") << bare.err;
    EXPECT_EQ(r.out, bare.out) << r.err;
    EXPECT_TRUE(exited_ok(r)) << r.err;
    if (m.own_table) {
      EXPECT_EQ(copies(only_trace(r)).size(), 10u);
    } else {
      EXPECT_TRUE(r.traces.empty());
      EXPECT_EQ(count_of(r.err, "no free file descriptor"), 1) << r.err;
    }
  }
}

// Item 9: with the trace stopped (RLIMIT_FSIZE), each call through the shared runtime counts once
// (before: twice, once in the runtime wrapper and once in the driver wrapper under it).
TEST(HostileApp, RuntimeCallsAfterTheTraceStoppedCountOnce) {
  AppRun r = run({"runtime_fsize", std::to_string(6 << 20), "200000", AW_FAKE_CUDART});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  size_t runtime_copies = 0;
  for (const auto& c : copies(t)) runtime_copies += c.api == static_cast<uint16_t>(Api::cudaMemcpyAsync);
  EXPECT_GT(t.header.records_lost, 0u);
  EXPECT_EQ(runtime_copies + t.header.records_lost, 200000u);
}

// A file system that stops answering (a hard-mounted NFS server gone): the file's naming (linkat,
// beside the first call) or its truncation (ftruncate, at the end of a trace longer than the first
// segment) never returns. The program runs to its end with its own output and status, at most
// trace_sync::kFileWaitNs (5 s) late, and stderr says why; before the bound both hung for ever.
TEST(HostileApp, FileSystemThatStopsAnsweringNeverHangsTheProgram) {
  struct Case {
    const char* call;
    const char* copies;
    const char* warning;
  };
  for (const Case& c : {Case{"linkat", "10", "was not ready 5 s after it was asked for"},
                        Case{"ftruncate", "20000", "was not released 5 s after the process began to end"}}) {
    SCOPED_TRACE(c.call);
    auto t0 = std::chrono::steady_clock::now();
    AppRun r = run_program("/usr/bin/timeout", {"60", AW_TEST_APP, "stuck_fs", c.call, c.copies});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 21) GTEST_SKIP() << "no seccomp user notification: " << r.err;
    ASSERT_TRUE(exited_ok(r)) << "status " << r.status << " after " << s << " s: " << r.err;
    EXPECT_LT(s, 30.0);
    EXPECT_NE(r.err.find(c.warning), std::string::npos) << r.err;
    if (!strcmp(c.call, "linkat")) {
      EXPECT_EQ(r.out, "copies=10 held=1\n");
      EXPECT_TRUE(r.traces.empty()) << r.err;  // never named: it went with the process
    } else {
      EXPECT_EQ(r.out, "copies=20000 held=0\n");
      Trace t = only_trace(r);  // complete, at its untruncated length (readers go by the blocks)
      EXPECT_EQ(copies(t).size(), 20000u);
      EXPECT_EQ(t.header.closed, kClosedCleanly);
    }
  }
}

// The same bound with the process stopped (SIGSTOP: ^Z, a debugger's breakpoint) for longer than
// it, while its first call's record waits for a file whose linkat is held for 2 s: stopped time is
// not counted (trace_sync::Patience), so the resumed process keeps its trace. A deadline on the
// clock gave up at once on resuming.
TEST(HostileApp, ProcessStoppedWhileItsFileIsMadeKeepsItsTrace) {
  const std::string dir = make_dir();
  pid_t pid = fork();
  if (pid == 0)
    exec_program({AW_TEST_APP, "stuck_fs", "linkat", "10", "2000"}, app_environment({}, dir, true), dir + "/.stdout",
                 dir + "/.stderr");
  usleep(500000);  // the first call returned; its record waits for the file
  kill(pid, SIGSTOP);
  sleep(7);
  kill(pid, SIGCONT);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string out = slurp(dir + "/.stdout"), err = slurp(dir + "/.stderr");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 21) GTEST_SKIP() << "no seccomp user notification: " << err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << err;
  // Held once, or again after the stop interrupted the held call (the kernel restarts it).
  EXPECT_TRUE(out == "copies=10 held=1\n" || out == "copies=10 held=2\n") << out;
  EXPECT_EQ(err.find("not ready"), std::string::npos) << err;
  std::vector<std::string> traces = list_traces(dir);
  ASSERT_EQ(traces.size(), 1u) << err;
  Trace t = aw_test::read_trace(traces[0]);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(copies(t).size(), 10u);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
}

// Item 9: every exec form closes the trace as execve does.
TEST(HostileApp, EveryExecFormClosesTheTrace) {
  for (const char* form : {"execv", "execvp", "execl", "execlp", "execle", "fexecve", "execveat"}) {
    SCOPED_TRACE(form);
    AppRun r = run({"exec_form", form}, {"ASYNCWATCH_OUTPUT_PATTERN=exec-%p.awtrace"});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    ASSERT_EQ(r.traces.size(), 2u) << r.err;
    size_t total = 0;
    for (auto& p : r.traces) {
      Trace t = aw_test::read_trace(p);
      EXPECT_EQ(t.header.closed, kClosedCleanly) << p;
      total += copies(t).size();
    }
    EXPECT_EQ(total, 1u + 5u);
  }
}

// Item 9: a vfork()ed child's _exit(7) shares the parent's memory; it is not the parent's status.
TEST(HostileApp, VforkChildExitStatusIsNotTheParents) {
  AppRun r = run({"vfork_exit"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "child status 7\n");
  Trace t = only_trace(r);
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(t.header.exit_status, 0);  // main returned 0 (on_exit), never the child's 7
  EXPECT_EQ(copies(t).size(), 5u);
}

// Item 10: a child made by a raw clone()/clone3() system call runs no fork handlers; its copy of the
// mapping still shares the parent's blocks. It records nothing (no trace of its own), and the
// parent's trace holds exactly the parent's calls.
TEST(HostileApp, RawCloneChildNeverWritesIntoTheParentsTrace) {
  for (const char* how : {"clone", "clone3"}) {
    SCOPED_TRACE(how);
    AppRun r = run({"clone_child", how});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    if (r.out == "clone3 unsupported\n") continue;
    EXPECT_EQ(r.out, "child ok\n");
    Trace t = only_trace(r);
    EXPECT_EQ(t.header.closed, kClosedCleanly);
    EXPECT_EQ(t.header.records_lost, 0u);
    EXPECT_EQ(copies_by_size(t), (std::map<uint64_t, size_t>{{64, 1000}, {65, 100}}));
  }
}

// A program that returns from main reaches libc's internal exit, not exit(): the status
// comes from the on_exit handler.
TEST(ProcessIdentity, ReturnFromMainStatusIsRecorded) {
  AppRun r = run({"return_status", "42"});
  ASSERT_TRUE(WIFEXITED(r.status)) << describe_status(r.status) << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), 42);
  Trace t = only_trace(r);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.header.closed, kClosedCleanly);
  EXPECT_EQ(t.header.exit_status, 42);
}

// The rank of an MPI/torchrun/Slurm process: %q{VAR} in the output pattern, and the first
// of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID holding a number in the header.
TEST(ProcessIdentity, RankInPatternAndHeader) {
  AppRun r =
      run({"copies", "1"}, {"OMPI_COMM_WORLD_RANK=5", "RANK=not-a-number",
                            "ASYNCWATCH_OUTPUT_PATTERN=job-%q{OMPI_COMM_WORLD_RANK}-%q{UNSET_VAR_X}-%p.awtrace"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  Trace t = only_trace(r);
  ASSERT_TRUE(t.ok) << t.error;
  std::string name = r.traces[0].substr(r.traces[0].rfind('/') + 1);
  EXPECT_EQ(name.rfind("job-5--", 0), 0u) << name;
  EXPECT_EQ(t.header.rank, 5u);
  EXPECT_EQ(t.header.rank_source, static_cast<uint8_t>(asyncwatch::trace::RankSource::OmpiCommWorldRank));
  AppRun none = run({"copies", "1"});
  ASSERT_TRUE(exited_ok(none)) << none.err;
  Trace u = only_trace(none);
  if (!getenv("RANK") && !getenv("OMPI_COMM_WORLD_RANK") && !getenv("PMI_RANK") && !getenv("SLURM_PROCID"))
    EXPECT_EQ(u.header.rank_source, 0u);
}
