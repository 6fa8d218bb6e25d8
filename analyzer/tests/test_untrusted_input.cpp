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

#include <filesystem>
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
