// Output files: OutputFile (output_file.h) and the commands that use
// it (`timeline -o`, `report -o`, `run --report-output`, run's trace directory). Each target is
// checked with stat afterwards: a device, FIFO, socket or symlink is never replaced; a regular
// file is replaced atomically with its mode kept; a symlink planted by another user is refused.
#include "command_runner.h"
#include "report/output_file.h"
#include "test_util.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <regex>
#include <set>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

const std::string kGolden = ASYNCWATCH_GOLDEN_DIR;
const std::string kTrace = kGolden + "/seed-pageable.awtrace";

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.insert(n);
    }
    closedir(d);
  }
  return out;
}

// A fresh directory of its own for one test.
std::string test_dir(const std::string& name, mode_t mode = 0755) {
  std::string d = tmp_path(name);
  std::filesystem::remove_all(d);
  mkdir(d.c_str(), mode);
  chmod(d.c_str(), mode);
  return d;
}

struct stat stat_of(const std::string& p) {
  struct stat st {};
  lstat(p.c_str(), &st);
  return st;
}

bool same_node(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_mode == b.st_mode && a.st_rdev == b.st_rdev;
}

bool looks_like_timeline(const std::string& s) {
  return s.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0) == 0 && s.size() > 100 &&
         s.compare(s.size() - 3, 3, "]}\n") == 0;
}

}  // namespace

TEST(OutputFile, DashIsStandardOutput) {
  OutputFile a("-");
  EXPECT_EQ(a.mode(), OutputFile::Mode::Stdout);
  EXPECT_EQ(a.stream(), stdout);
  OutputFile b("");
  EXPECT_EQ(b.mode(), OutputFile::Mode::Stdout);
  auto r = asyncwatch_command({"report", "-o", "-", kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("warning: cudaMemcpyAsync"), std::string::npos) << r.out;
  r = asyncwatch_command({"timeline", "-o", "-", kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(looks_like_timeline(r.out));
}

TEST(OutputFile, NewFileAppearsWholeWithTheUmaskMode) {
  std::string d = test_dir("new-file");
  mode_t old = umask(027);
  {
    OutputFile f(d + "/out.txt");
    EXPECT_EQ(f.mode(), OutputFile::Mode::Replace);
    std::fputs("hello\n", f.stream());
    // Until commit() the name does not exist; only the temporary file, with its unpredictable name.
    auto names = entries(d);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_TRUE(std::regex_match(*names.begin(), std::regex(R"(\.out\.txt\.[A-Za-z0-9]{12}\.tmp)"))) << *names.begin();
    EXPECT_EQ(stat_of(d + "/" + *names.begin()).st_mode & 0777, 0600u);
    f.commit();
  }
  umask(old);
  EXPECT_EQ(read_file(d + "/out.txt"), "hello\n");
  EXPECT_EQ(stat_of(d + "/out.txt").st_mode & 0777, 0640u);
  EXPECT_EQ(entries(d), std::set<std::string>{"out.txt"});
}

TEST(OutputFile, ExistingFileIsReplacedAtomicallyAndKeepsItsMode) {
  std::string d = test_dir("replace");
  std::string p = d + "/report.json";
  write_file(p, "old content that is longer than the new one\n", 0604);
  struct stat before = stat_of(p);
  int reader = open(p.c_str(), O_RDONLY);  // a reader of the old file keeps seeing it whole
  ASSERT_GE(reader, 0);
  auto r = asyncwatch_command({"report", "--format", "json", "-o", p, kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  struct stat after = stat_of(p);
  EXPECT_TRUE(S_ISREG(after.st_mode));
  EXPECT_NE(after.st_ino, before.st_ino) << "replaced by rename, not rewritten in place";
  EXPECT_EQ(after.st_mode & 07777, 0604u);
  EXPECT_EQ(read_all(reader), "old content that is longer than the new one\n");
  close(reader);
  std::string text = read_file(p);
  EXPECT_EQ(text.rfind("{\n  \"schema\": \"asyncwatch-report\"", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(entries(d), std::set<std::string>{"report.json"});  // no temporary file left
  // timeline -o onto an existing file: the same.
  r = asyncwatch_command({"timeline", "-o", p, kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(looks_like_timeline(read_file(p)));
  EXPECT_EQ(stat_of(p).st_mode & 07777, 0604u);
  EXPECT_EQ(entries(d), std::set<std::string>{"report.json"});
}

TEST(OutputFile, FailureOrAbandonLeavesTheTargetAndNoTemporaryFile) {
  std::string d = test_dir("abandon");
  std::string p = d + "/out.json";
  write_file(p, "keep me\n");
  {
    OutputFile f(p);
    std::fputs("partial", f.stream());
  }  // no commit
  EXPECT_EQ(read_file(p), "keep me\n");
  EXPECT_EQ(entries(d), std::set<std::string>{"out.json"});
  // A command that fails (no trace could be read) leaves it too.
  auto r = asyncwatch_command({"timeline", "-o", p, kGolden + "/not-a-trace.awtrace"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(read_file(p), "keep me\n");
  r = asyncwatch_command({"report", "-o", p, kGolden + "/not-a-trace.awtrace"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(read_file(p), "keep me\n");
  EXPECT_EQ(entries(d), std::set<std::string>{"out.json"});
}

TEST(OutputFile, InterruptedCommandRemovesItsTemporaryFile) {
  std::string d = test_dir("interrupted");
  std::string p = d + "/out.json";
  write_file(p, "keep me\n");
  pid_t pid = fork();
  if (pid == 0) {
    OutputFile f(p);
    std::fputs("partial", f.stream());
    std::fflush(f.stream());
    raise(SIGTERM);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM) << st;
  EXPECT_EQ(read_file(p), "keep me\n");
  EXPECT_EQ(entries(d), std::set<std::string>{"out.json"});
}

TEST(OutputFile, TemporaryNamesAreUnpredictable) {
  std::string d = test_dir("names");
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    OutputFile f(d + "/x");
    auto names = entries(d);
    for (const auto& n : names)
      if (n != "x") seen.insert(n);
    f.commit();
  }
  EXPECT_EQ(seen.size(), 20u);
}

// `timeline -o /dev/null` once renamed a regular file over the system's /dev/null. On a
// character device made for the test (the same major/minor as /dev/null), stat must show the
// very same node afterwards.
TEST(OutputFile, TimelineOntoACharacterDeviceLeavesTheDevice) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a character device needs root";
  std::string d = test_dir("chardev");
  std::string dev = d + "/null";
  ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  struct stat before = stat_of(dev);
  for (auto args :
       {std::vector<std::string>{"timeline", "-o", dev, kTrace}, std::vector<std::string>{"report", "-o", dev, kTrace},
        std::vector<std::string>{"report", "--format", "json", "-o", dev, kTrace}}) {
    auto r = asyncwatch_command(args);
    EXPECT_EQ(r.status, 0) << args[0] << ": " << r.err;
    struct stat after = stat_of(dev);
    EXPECT_TRUE(S_ISCHR(after.st_mode));
    EXPECT_TRUE(same_node(before, after)) << "the device node was replaced";
  }
  EXPECT_EQ(entries(d), std::set<std::string>{"null"});
  // A block device is refused, never written (the node is made, nothing opens it).
  std::string blk = d + "/blk";
  ASSERT_EQ(mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 200)), 0) << std::strerror(errno);
  auto r = asyncwatch_command({"report", "-o", blk, kTrace});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a block device"), std::string::npos) << r.err;
  EXPECT_TRUE(S_ISBLK(stat_of(blk).st_mode));
}

// The same on the path /dev/null itself, inside a private mount namespace whose /dev is a
// tmpfs holding its own /dev/null: nothing outside the test can be touched.
TEST(OutputFile, TimelineOntoDevNullInAPrivateMountNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "a private /dev (mount namespace, tmpfs, mknod) needs root";
  int result[2];
  ASSERT_EQ(pipe(result), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(result[0]);
    auto say = [&](const std::string& s) {
      if (write(result[1], s.data(), s.size()) < 0) {}
      _exit(0);
    };
    if (unshare(CLONE_NEWNS) != 0) say("SKIP unshare(CLONE_NEWNS): " + std::string(std::strerror(errno)));
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      say("SKIP private mounts: " + std::string(std::strerror(errno)));
    if (mount("aw-test-dev", "/dev", "tmpfs", 0, "mode=0755,size=1m") != 0)
      say("SKIP tmpfs on /dev: " + std::string(std::strerror(errno)));
    if (mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)) != 0) say("SKIP mknod: " + std::string(std::strerror(errno)));
    struct stat before = stat_of("/dev/null");
    auto r = asyncwatch_command({"timeline", "-o", "/dev/null", kTrace});
    struct stat after = stat_of("/dev/null");
    std::string verdict;
    if (r.status != 0) verdict += "exit " + std::to_string(r.status) + ": " + r.err + "; ";
    if (!S_ISCHR(after.st_mode) || !same_node(before, after)) verdict += "/dev/null is no longer the device; ";
    if (entries("/dev") != std::set<std::string>{"null"}) verdict += "something was left in /dev; ";
    say(verdict.empty() ? "OK" : verdict);
  }
  close(result[1]);
  std::string verdict = read_all(result[0]);
  close(result[0]);
  waitpid(pid, nullptr, 0);
  if (verdict.rfind("SKIP ", 0) == 0) GTEST_SKIP() << verdict.substr(5);
  EXPECT_EQ(verdict, "OK");
}

TEST(OutputFile, FifoIsWrittenInPlaceForItsReader) {
  std::string d = test_dir("fifo");
  std::string fifo = d + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  struct stat before = stat_of(fifo);
  int fifo_node = open(fifo.c_str(), O_PATH | O_CLOEXEC);  // the FIFO itself, whatever its name becomes
  int got[2];
  ASSERT_EQ(pipe(got), 0);
  pid_t reader = fork();
  if (reader == 0) {  // another process reads the FIFO and hands back what it read
    close(got[0]);
    int fd = open(fifo.c_str(), O_RDONLY);
    std::string s = read_all(fd);
    if (write(got[1], s.data(), s.size()) < 0) {}
    _exit(0);
  }
  close(got[1]);
  auto r = asyncwatch_command({"timeline", "-o", fifo, kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  // Should the command not have opened the FIFO, this lets the reader finish (it reads nothing).
  int release = open(("/proc/self/fd/" + std::to_string(fifo_node)).c_str(), O_WRONLY | O_NONBLOCK);
  if (release >= 0) close(release);
  close(fifo_node);
  std::string text = read_all(got[0]);
  close(got[0]);
  waitpid(reader, nullptr, 0);
  EXPECT_TRUE(looks_like_timeline(text)) << text.substr(0, 200);
  EXPECT_TRUE(same_node(before, stat_of(fifo)));
  EXPECT_EQ(entries(d), std::set<std::string>{"pipe"});
}

TEST(OutputFile, UnixSocketIsConnectedTo) {
  std::string d = test_dir("socket");
  std::string path = d + "/sock";
  int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  ASSERT_EQ(listen(srv, 1), 0);
  struct stat before = stat_of(path);
  std::string text;
  std::thread server([&] {
    int c = accept(srv, nullptr, nullptr);
    if (c >= 0) {
      text = read_all(c);
      close(c);
    }
  });
  auto r = asyncwatch_command({"report", "-o", path, kTrace});
  if (text.empty()) {  // should the command not have connected, this lets accept() return
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {}
    close(c);
  }
  server.join();
  close(srv);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(text.find("warning: cudaMemcpyAsync"), std::string::npos) << text;
  EXPECT_TRUE(same_node(before, stat_of(path)));
}

// /dev/stdout and /proc/self/fd/1 name the command's own descriptor: written there directly,
// at the shell's offset, even when it is a regular file (the file is not replaced or truncated).
TEST(OutputFile, DevStdoutIsTheCommandsOwnDescriptor) {
  std::string d = test_dir("stdout");
  for (const char* name : {"/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"}) {
    std::string p = d + "/captured";
    write_file(p, "first line\n");
    int fd = open(p.c_str(), O_WRONLY | O_APPEND);
    struct stat before = stat_of(p);
    CommandOptions o;
    o.stdout_fd = fd;
    auto r = asyncwatch_command({"report", "-o", name, kTrace}, o);
    close(fd);
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
    std::string text = read_file(p);
    EXPECT_EQ(text.rfind("first line\nasyncwatch: pid", 0), 0u) << name << ": " << text.substr(0, 100);
    EXPECT_EQ(stat_of(p).st_ino, before.st_ino) << name;
    EXPECT_EQ(entries(d), std::set<std::string>{"captured"});
  }
}

// The standard names are descriptors by their names, not by what /dev holds (a system without
// /dev/stdout got a regular file /dev/stdout from `report -o /dev/stdout`, replaced at every later
// run): a descriptor that is not open is an error that says so, and nothing is created.
TEST(OutputFile, DevFdOfAClosedDescriptorIsAnError) {
  const int fd = 987;  // no descriptor of the command's has that number
  const std::string name = "/dev/fd/" + std::to_string(fd);
  auto r = asyncwatch_command({"report", "-o", name, kTrace});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(name + ": names descriptor " + std::to_string(fd) + ", which is not open"), std::string::npos)
      << r.err;
}

TEST(OutputFile, SymlinkToARegularFileReplacesTheTargetNotTheLink) {
  std::string d = test_dir("symlink");
  std::string target = d + "/real-report.txt", link = d + "/latest.txt";
  write_file(target, "old\n", 0640);
  ASSERT_EQ(symlink("real-report.txt", link.c_str()), 0);
  struct stat before = stat_of(target);
  auto r = asyncwatch_command({"report", "-o", link, kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(S_ISLNK(stat_of(link).st_mode)) << "the link must stay a link";
  char buf[256] = {};
  ASSERT_GT(readlink(link.c_str(), buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "real-report.txt");
  struct stat after = stat_of(target);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  EXPECT_NE(read_file(target).find("warning: cudaMemcpyAsync"), std::string::npos);
  EXPECT_EQ(entries(d), (std::set<std::string>{"latest.txt", "real-report.txt"}));
  // Through a symlinked directory, and a link to a link in another directory.
  std::string sub = d + "/sub";
  mkdir(sub.c_str(), 0755);
  ASSERT_EQ(symlink("sub", (d + "/sublink").c_str()), 0);
  ASSERT_EQ(symlink("../latest.txt", (sub + "/up").c_str()), 0);
  r = asyncwatch_command({"timeline", "-o", d + "/sublink/new.json", kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(looks_like_timeline(read_file(sub + "/new.json")));
  r = asyncwatch_command({"timeline", "-o", sub + "/up", kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(looks_like_timeline(read_file(target)));
  EXPECT_TRUE(S_ISLNK(stat_of(sub + "/up").st_mode));
  EXPECT_EQ(entries(sub), (std::set<std::string>{"new.json", "up"}));
  EXPECT_EQ(entries(d), (std::set<std::string>{"latest.txt", "real-report.txt", "sub", "sublink"}));
}

TEST(OutputFile, DanglingSymlinkDirectoryAndMissingDirectoryAreRefused) {
  std::string d = test_dir("refused");
  ASSERT_EQ(symlink("nowhere.txt", (d + "/dangling").c_str()), 0);
  auto r = asyncwatch_command({"report", "-o", d + "/dangling", kTrace});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("a symbolic link to a file that does not exist"), std::string::npos) << r.err;
  r = asyncwatch_command({"report", "-o", d, kTrace});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  r = asyncwatch_command({"timeline", "-o", d + "/no/such/dir/out.json", kTrace});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no such directory"), std::string::npos) << r.err;
  EXPECT_EQ(entries(d), std::set<std::string>{"dangling"});
}

// Root writes its output into a world-writable directory where another user
// (uid 65534) planted symlinks: at the output's name (refused: the victim is untouched) and at
// the old predictable temporary name FILE.tmp (ignored: the output is written, the link and its
// victim are untouched). The directory is 0777 without the sticky bit, so the kernel's
// protected_symlinks does not help: asyncwatch itself must refuse.
TEST(OutputFile, SymlinksPlantedByAnotherUserAreNeverFollowed) {
  std::string d = test_dir("planted", 0777);
  std::string victim = tmp_path("planted-victim");
  write_file(victim, "root's file\n", 0644);
  bool ok = false;
  std::string why = as_unprivileged_user(
      [&] {
        return symlink(victim.c_str(), (d + "/report.txt").c_str()) == 0 &&
               symlink(victim.c_str(), (d + "/timeline.json.tmp").c_str()) == 0 &&
               symlink(victim.c_str(), (d + "/sub").c_str()) == 0;
      },
      &ok);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_TRUE(ok) << "the attacker could not plant its links";
  ASSERT_EQ(stat_of(d + "/report.txt").st_uid, kNobody);

  auto r = asyncwatch_command({"report", "-o", d + "/report.txt", kTrace});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a symbolic link owned by uid 65534, neither you nor root: not followed"), std::string::npos)
      << r.err;
  r = asyncwatch_command({"timeline", "-o", d + "/timeline.json", kTrace});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(looks_like_timeline(read_file(d + "/timeline.json")));
  r = asyncwatch_command({"report", "-o", d + "/sub/x", kTrace});  // a planted directory link
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("owned by uid 65534"), std::string::npos) << r.err;

  EXPECT_EQ(read_file(victim), "root's file\n");
  EXPECT_TRUE(S_ISLNK(stat_of(d + "/report.txt").st_mode));
  EXPECT_TRUE(S_ISLNK(stat_of(d + "/timeline.json.tmp").st_mode));
  EXPECT_EQ(entries(d), (std::set<std::string>{"report.txt", "sub", "timeline.json", "timeline.json.tmp"}));
}

// ---- run: the trace directory ----------------------------------------------------------------

namespace {
// `run` with a stand-in program: it "writes" a copy of TRACE as its trace (the preload library
// is replaced by a file ld.so refuses to load, with a warning), then exits 0.
CommandResult run_copying(const std::string& cwd, const std::vector<std::string>& run_args, const std::string& trace,
                          const std::string& extra_shell = "") {
  CommandOptions o;
  o.cwd = cwd;
  o.env = {"ASYNCWATCH_PRELOAD_LIB=" + kGolden + "/compare_golden.cmake"};
  std::vector<std::string> args{"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  args.insert(args.end(),
              {"--", "sh", "-c", "cp '" + trace + "' \"$ASYNCWATCH_OUTPUT_DIR/x-$$.awtrace\"" + extra_shell});
  return asyncwatch_command(args, o);
}

std::string stamp_now(int plus_seconds) {
  std::time_t t = std::time(nullptr) + plus_seconds;
  std::tm tm{};
  localtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, "%Y%m%d-%H%M%S", &tm);
  return s;
}
}  // namespace

TEST(RunDirectory, DefaultDirectoryIsNewPrivateAndUnpredictable) {
  std::string d = test_dir("run-default");
  auto a = run_copying(d, {"--fail-on", "pageable-async-copy"}, kTrace);
  auto b = run_copying(d, {"--fail-on", "pageable-async-copy"}, kTrace);
  EXPECT_EQ(a.status, 1) << a.err;
  EXPECT_EQ(b.status, 1) << b.err;
  auto names = entries(d);
  ASSERT_EQ(names.size(), 2u);
  for (const auto& n : names) {
    EXPECT_TRUE(std::regex_match(n, std::regex(R"(asyncwatch-sh-\d{8}-\d{6}-[A-Za-z0-9]{6})"))) << n;
    struct stat st = stat_of(d + "/" + n);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u) << n;
    EXPECT_EQ(entries(d + "/" + n).size(), 1u);
  }
}

// In a world-writable directory another user planted, at every name the old
// `run` would have chosen (asyncwatch-sh-TIME and -2 ... -9 for the next seconds), symlinks to
// a directory of its own holding a harmless trace (seed-pinned: no finding), and dangling ones.
// The old `run` adopted such a link: the swapped trace made --fail-on exit 0 instead of 1.
TEST(RunDirectory, PlantedPredictableDirectoriesAreNeverAdopted) {
  std::string d = test_dir("run-planted", 0777);
  std::string mine = test_dir("run-planted-home", 0777) + "/mine";  // made by the attacker
  bool ok = false;
  std::vector<std::string> planted;
  for (int s = 0; s < 6; ++s)
    for (int i = 1; i <= 9; ++i) {
      std::string base = "asyncwatch-sh-" + stamp_now(s);
      planted.push_back(i == 1 ? base : base + "-" + std::to_string(i));
    }
  std::string why = as_unprivileged_user(
      [&] {
        if (mkdir(mine.c_str(), 0777) != 0) return false;
        std::string pinned = read_file(kGolden + "/seed-pinned.awtrace");
        write_file(mine + "/planted.awtrace", pinned);
        for (size_t k = 0; k < planted.size(); ++k) {
          std::string to = k % 2 ? mine : mine + "/missing";  // a real directory, or dangling
          if (symlink(to.c_str(), (d + "/" + planted[k]).c_str()) != 0) return false;
        }
        return true;
      },
      &ok);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_TRUE(ok) << "the attacker could not plant its links";

  auto r = run_copying(d, {"--fail-on", "pageable-async-copy"}, kTrace);
  EXPECT_EQ(r.status, 1) << "the report must be of the program's own trace\n" << r.out << r.err;
  EXPECT_NE(r.out.find("warning: cudaMemcpyAsync (device to host, 2.0 GiB)"), std::string::npos) << r.out;
  std::string created;
  for (const auto& n : entries(d)) {
    struct stat st = stat_of(d + "/" + n);
    if (S_ISLNK(st.st_mode)) {
      EXPECT_EQ(st.st_uid, kNobody) << n;
      continue;
    }
    EXPECT_TRUE(created.empty()) << "a second directory " << n;
    created = n;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
  }
  EXPECT_FALSE(created.empty());
  EXPECT_EQ(entries(d).size(), planted.size() + 1);
  EXPECT_EQ(entries(mine), std::set<std::string>{"planted.awtrace"}) << "nothing may be written to the attacker's";
  // `run -o` onto the attacker's link is refused too.
  r = run_copying(d, {"-o", d + "/" + planted[1]}, kTrace);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("owned by uid 65534"), std::string::npos) << r.err;
  EXPECT_EQ(entries(mine), std::set<std::string>{"planted.awtrace"});
}

// The traces are read from the directory `run` created: if the program (or anyone) moves it away
// and puts another at its name, nothing from the new one is reported.
TEST(RunDirectory, DirectoryReplacedDuringTheRunIsRefused) {
  std::string d = test_dir("run-swapped");
  std::string pinned = kGolden + "/seed-pinned.awtrace";
  auto r = run_copying(d, {}, kTrace,
                       " && mv \"$ASYNCWATCH_OUTPUT_DIR\" \"$ASYNCWATCH_OUTPUT_DIR.moved\" && mkdir "
                       "\"$ASYNCWATCH_OUTPUT_DIR\" && cp '" +
                           pinned + "' \"$ASYNCWATCH_OUTPUT_DIR/\"");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("was replaced while the program ran"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunDirectory, ReportOutputUsesTheSameHelper) {
  std::string d = test_dir("run-report-output");
  std::string p = d + "/report.txt";
  write_file(p, "old\n", 0620);
  auto r = run_copying(d, {"-o", d + "/traces", "--report-output", p}, kTrace);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(read_file(p).find("warning: cudaMemcpyAsync"), std::string::npos);
  EXPECT_EQ(stat_of(p).st_mode & 07777, 0620u);
  EXPECT_EQ(entries(d), (std::set<std::string>{"report.txt", "traces"}));
  r = run_copying(d, {"-o", d + "/traces2", "--report-output", "-"}, kTrace);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("warning: cudaMemcpyAsync"), std::string::npos);
}
