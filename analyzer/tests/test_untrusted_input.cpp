// Issue 41: a trace is untrusted input. What a trace names never makes the analyzer read outside
// the source root, block, exceed its budgets, crash on a file that shrinks, or report another
// user's traces of a shared directory unasked.
#include "command_runner.h"
#include "findings/analysis.h"
#include "report/fingerprint.h"
#include "report/source_lines.h"
#include "symbols/debuginfo.h"
#include "symbols/symbolizer.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <link.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

const std::string kGolden = ASYNCWATCH_GOLDEN_DIR;

std::string fresh_dir(const std::string& name) {
  std::string d = tmp_path(name);
  std::filesystem::remove_all(d);
  mkdir(d.c_str(), 0755);
  char real[4096];
  return realpath(d.c_str(), real) ? real : d;
}

Finding site_finding(const std::string& file, int line) {
  Finding f;
  f.id = FindingId::PageableAsyncCopy;
  f.api = "cudaMemcpyAsync";
  f.call_site_known = true;
  f.call_site.file = file;
  f.call_site.line = line;
  f.call_site.function = "run()";
  f.call_site.module = "/opt/app/bin/app";
  return f;
}

}  // namespace

// 1,000 call sites in one large file: the file is opened once for the report, each line right.
TEST(SourceLines, EachFileIsReadOncePerReport) {
  std::string root = fresh_dir("src-once");
  std::string big;
  for (int i = 1; i <= 20000; ++i) big += "  int line_" + std::to_string(i) + " = " + std::to_string(i) + ";\n";
  write_file(root + "/big.cu", big);
  SourceLines lines(root);
  std::vector<Finding> findings;
  for (int i = 1; i <= 1000; ++i) findings.push_back(site_finding(root + "/big.cu", i * 20));
  for (const auto& f : findings) lines.want(f.call_site.file, f.call_site.line);
  std::set<std::string> prints;
  for (const auto& f : findings) prints.insert(finding_fingerprint(f, root, &lines));
  EXPECT_EQ(lines.files_read(), 1u);
  EXPECT_EQ(prints.size(), 1000u);
  EXPECT_EQ(lines.line(root + "/big.cu", 400), "intline_400=400;");
  EXPECT_EQ(lines.files_read(), 1u);
}

// Outside the root (a path, "..", a symlink out of it) nothing is read: the fingerprint is the one
// of the trace's own text; a FIFO, /proc/kmsg or a device never block.
TEST(SourceLines, NothingOutsideTheRootNorAnythingButRegularFiles) {
  std::string root = fresh_dir("src-root");
  std::string outside = fresh_dir("src-outside");
  write_file(outside + "/secret.cu", "123456\n654321\n", 0600);
  ASSERT_EQ(symlink((outside + "/secret.cu").c_str(), (root + "/link.cu").c_str()), 0);
  ASSERT_EQ(mkfifo((root + "/fifo.cu").c_str(), 0600), 0);
  SourceLines lines(root);
  EXPECT_EQ(lines.line(outside + "/secret.cu", 2), "");
  EXPECT_EQ(lines.line(root + "/../" + std::filesystem::path(outside).filename().string() + "/secret.cu", 2), "");
  EXPECT_EQ(lines.line(root + "/link.cu", 2), "");
  EXPECT_EQ(lines.line(root + "/fifo.cu", 1), "");  // would block without O_NONBLOCK
  SourceLines everything("/");
  EXPECT_EQ(everything.line("/proc/kmsg", 1), "");  // size 0: never read (as root it would block)
  EXPECT_EQ(everything.line("/dev/zero", 1), "");
  // The fingerprint of a site outside the root: as if the file did not exist.
  EXPECT_EQ(finding_fingerprint(site_finding(outside + "/secret.cu", 2), root),
            finding_fingerprint(site_finding("/nonexistent/secret.cu", 2), root));
  // Below the root the line is read (the text, not the number, makes the fingerprint).
  write_file(root + "/a.cu", "x\n  cudaMemcpyAsync(a);\n");
  EXPECT_EQ(lines.line(root + "/a.cu", 2), "cudaMemcpyAsync(a);");
}

// A trace that shrinks once mapped (as another process may do it): no SIGBUS; the report says so
// and uses the records before the cut; timeline leaves no temporary file.
TEST(TruncatedWhileRead, ReportAndTimelineSayItAndDoNotCrash) {
  std::string dir = fresh_dir("shrinking");
  std::string trace = dir + "/crashed.awtrace";
  std::filesystem::copy_file(kGolden + "/crashed.awtrace", trace);
  ASSERT_GT(std::filesystem::file_size(trace), 69632u * 2);
  CommandOptions o;
  o.env = {"ASYNCWATCH_TEST_SHRINK_TRACE_TO=69632", "ASYNCWATCH_NO_SYMBOLS=1"};
  CommandResult r = asyncwatch_command({"report", trace}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("the trace was truncated while being read"), std::string::npos) << r.out;
  std::filesystem::copy_file(kGolden + "/crashed.awtrace", trace, std::filesystem::copy_options::overwrite_existing);
  r = asyncwatch_command({"timeline", "-o", dir + "/t.json", trace}, o);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("truncated while being read"), std::string::npos) << r.err;
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"crashed.awtrace", "t.json"}));
  // Cut to nothing: the header reads as zeros, an error that says why, not a signal.
  std::filesystem::copy_file(kGolden + "/crashed.awtrace", trace, std::filesystem::copy_options::overwrite_existing);
  o.env[0] = "ASYNCWATCH_TEST_SHRINK_TRACE_TO=0";
  r = asyncwatch_command({"report", trace}, o);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("truncated while being read"), std::string::npos) << r.err;
}

// `report DIR` leaves out another user's traces unless asked (CI runs as root).
TEST(ForeignTraces, ReportDirSkipsAndNamesThem) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a trace to another uid (CI runs it as root)";
  std::string dir = fresh_dir("foreign");
  std::filesystem::copy_file(kGolden + "/crashed.awtrace", dir + "/mine.awtrace");
  std::filesystem::copy_file(kGolden + "/killed-in-flight.awtrace", dir + "/theirs.awtrace");
  ASSERT_EQ(chown((dir + "/theirs.awtrace").c_str(), 65534, 65534), 0);
  CommandOptions o;
  o.env = {"ASYNCWATCH_NO_SYMBOLS=1"};
  CommandResult r = asyncwatch_command({"report", "--format", "json", dir}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("skipped 1 trace owned by another user: " + dir + "/theirs.awtrace (uid 65534)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("theirs.awtrace"), std::string::npos);
  r = asyncwatch_command({"report", "--format", "json", "--allow-foreign-traces", dir}, o);
  EXPECT_EQ(r.err.find("skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("theirs.awtrace"), std::string::npos);
}

// Budgets: a module over the per-module budget, or over what is left of the report's, is not read
// for symbols, and the note names it and the option.
TEST(DebugInfoBudget, ModuleOverTheBudgetIsNamedAndNotRead) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  ModuleInfo m;
  m.path.assign(exe, static_cast<size_t>(n));
  m.low = 0x10000;
  m.high = 0x20000;
  auto small = make_debug_info_budget(1, 0);
  {
    Symbolizer s({m}, true, {}, small.get());
    s.resolve(0x10800);
    ASSERT_EQ(s.problems().size(), 1u);
    EXPECT_NE(s.problems()[0].find(m.path), std::string::npos) << s.problems()[0];
    EXPECT_NE(s.problems()[0].find("--max-debug-info-mib"), std::string::npos) << s.problems()[0];
  }
  auto total = make_debug_info_budget(0, 1);
  {
    Symbolizer s({m}, true, {}, total.get());
    s.resolve(0x10800);
    ASSERT_EQ(s.problems().size(), 1u);
    EXPECT_NE(s.problems()[0].find("--max-debug-info-total-mib"), std::string::npos) << s.problems()[0];
  }
  EXPECT_EQ(total->used.load(), 0u);
  auto ample = make_debug_info_budget(0, 0);
  Symbolizer s({m}, true, {}, ample.get());
  s.resolve(0x10800);
  EXPECT_TRUE(s.problems().empty());
  EXPECT_GT(ample->used.load(), 0u);  // charged what the estimate says
}

// A .gnu_debuglink that names a FIFO beside the module: the debug-info search skips it without
// blocking (libdw's own search opened it and waited for a writer for ever).
TEST(DebugInfoSearch, DebuglinkNamingAFifoDoesNotBlock) {
  if (std::system("objcopy --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no objcopy";
  std::string dir = fresh_dir("debuglink-fifo");
  // A module without debug information of its own: this test's vendor fixture library.
  std::string lib;
  std::ifstream maps("/proc/self/maps");
  for (std::string l; std::getline(maps, l);)
    if (l.find("libaw_test_vendor.so") != std::string::npos) lib = l.substr(l.find('/'));
  ASSERT_FALSE(lib.empty());
  std::filesystem::copy_file(lib, dir + "/libv.so");
  write_file(dir + "/libv.debug", "not elf");
  ASSERT_EQ(std::system(("objcopy --add-gnu-debuglink=" + dir + "/libv.debug " + dir + "/libv.so").c_str()), 0);
  unlink((dir + "/libv.debug").c_str());
  ASSERT_EQ(mkfifo((dir + "/libv.debug").c_str(), 0600), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a blocked open ends the child with SIGALRM
    ModuleInfo m;
    m.path = dir + "/libv.so";
    m.low = 0x100000;
    m.high = 0x200000;
    m.load_bias = 0x100000;
    Symbolizer s({m});
    s.resolve(0x101010);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// Item 9: totals of absurd durations (crafted traces: three pageable asynchronous copies that
// blocked 2^63 ns each, two processes) add with saturation in JSON as in text: 2^64-1, never a
// wrapped small number.
TEST(AbsurdDurations, JsonTotalsSaturate) {
  std::vector<std::string> traces;
  for (uint64_t pid : {4301u, 4302u}) {
    TraceBuilder b(pid, "/work/app/absurd");
    b.thread_info(1, "absurd");
    uint64_t t = b.header().start_monotonic_ns + kMs;
    for (int i = 0; i < 3; ++i)
      b.event(1, tf::RecordType::Copy,
              TraceBuilder::copy(tf::Api::cudaMemcpyAsync, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                                 tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + (1ull << 63), 64ull << 20,
                                 tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn));
    traces.push_back(write_trace(b, "absurd-" + std::to_string(pid) + ".awtrace"));
  }
  CommandOptions o;
  o.env = {"ASYNCWATCH_NO_SYMBOLS=1"};
  std::vector<std::string> args = {"report", "--format", "json"};
  args.insert(args.end(), traces.begin(), traces.end());
  CommandResult r = asyncwatch_command(args, o);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  size_t seen = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "blocked_ns_total") {
          ++seen;
          EXPECT_TRUE(it.value().is_number_unsigned()) << it.value();
          EXPECT_EQ(it.value().get<uint64_t>(), UINT64_MAX) << it.value();
        }
        walk(it.value());
      }
    } else if (j.is_array()) {
      for (const auto& e : j) walk(e);
    }
  };
  walk(doc);
  EXPECT_GE(seen, 3u);  // each process, the summary, the finding
  r = asyncwatch_command({"report", traces[0], traces[1]}, o);
  EXPECT_EQ(r.status, 0) << r.err;
}

namespace {
[[maybe_unused]] int debug_info_probe(int x) {
  return x * 3 + 1;
}  // an address with a line table (this file is built with -g)
}  // namespace

// Item 3: libdw runs out of memory reading a module's debug information. The command exits 5
// ("the analysis failed"), never 1 (a --fail-on finding), and names the module. Out of memory is
// made by a preloaded malloc that fails libdw's memory blocks only (fail_libdw_alloc.c).
TEST(DebugInfoOutOfMemory, ExitFiveNamingTheModule) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a malloc shim cannot be preloaded ahead of a sanitizer runtime";
#else
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uint64_t*>(out) = info->dlpi_addr;  // the first is the executable
        return 1;
      },
      &bias);
  const auto probe = reinterpret_cast<uint64_t>(&debug_info_probe);
  TraceBuilder b(4310, exe);
  b.thread_info(1, "oom");
  b.module(1, exe, bias, probe & ~0xfffffull, (probe | 0xfffffull) + 1);
  uint32_t s = b.stack(1, {probe + 4});
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cudaMemcpyAsync, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 200 * kMs, 64ull << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
  const std::string trace = write_trace(b, "debug-info-oom.awtrace");
  CommandResult ok = asyncwatch_command({"report", "--fail-on", "error", trace});
  ASSERT_NE(ok.out.find("test_untrusted_input.cpp"), std::string::npos) << "symbolized without the shim:\n" << ok.out;
  CommandOptions o;
  o.env = {std::string("LD_PRELOAD=") + ASYNCWATCH_FAIL_LIBDW_ALLOC};
  CommandResult r = asyncwatch_command({"report", "--fail-on", "error", trace}, o);
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_NE(r.err.find(std::string("out of memory reading the debug information of ") + exe), std::string::npos)
      << r.err;
#endif
}
