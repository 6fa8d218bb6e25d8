#include "report/output_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <fmt/format.h>

namespace asyncwatch {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw OutputError(fmt::format("{}: {}", path, why));
}
std::string err_text(int e) { return std::strerror(e); }

// Standard output is a pipe or socket whose reader has gone (`asyncwatch report | head`, with
// SIGPIPE ignored as a CI runner or Python may leave it): the reader wanted no more, which is
// no error. The stream's errno may be lost on the way: the descriptor is asked (POLLERR).
bool reader_gone(int fd, int e) {
  if (e == EPIPE) return true;
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return false;
  pollfd p{fd, POLLOUT, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

// ---- Where a path leads, resolved one component at a time ----------------------------------

struct Target {
  enum Kind { Missing, Regular, Special, OwnDescriptor, ProcLink, Directory } kind = Missing;
  std::string dir;        // the directory holding it, every symlink resolved (relative to "." or "/")
  std::string name;       // its name in `dir`
  struct stat st {};      // Regular, Special: the target itself
  struct stat dir_st {};  // `dir`
  int fd = -1;            // OwnDescriptor
};

std::string join(const std::string& dir, const std::string& name) { return dir == "/" ? "/" + name : dir + "/" + name; }

std::deque<std::string> split(const std::string& path) {
  std::deque<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string c = path.substr(pos, slash - pos);
    if (!c.empty() && c != ".") out.push_back(c);
    pos = slash + 1;
  }
  return out;
}

bool in_procfs(const std::string& dir) {
  struct statfs s {};
  return statfs(dir.c_str(), &s) == 0 && s.f_type == PROC_SUPER_MAGIC;
}

// "/proc/<our pid>/fd" or "/proc/<our pid>/task/<tid>/fd" (what /proc/self/fd, /dev/fd,
// /proc/thread-self/fd resolve to): the directory of this process's own descriptors.
bool is_own_fd_dir(const std::string& dir) {
  const std::string self = fmt::format("/proc/{}/", getpid());
  if (dir.compare(0, self.size(), self) != 0) return false;
  std::string rest = dir.substr(self.size());
  if (rest == "fd") return true;
  return rest.rfind("task/", 0) == 0 && rest.size() > 8 && rest.compare(rest.size() - 3, 3, "/fd") == 0 &&
         rest.find('/', 5) == rest.size() - 3;
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A symlink is followed only when it belongs to us or to root: one that another user planted
// (in /tmp, say) could otherwise send root's output anywhere.
bool trusted_link(const struct stat& st) { return st.st_uid == geteuid() || st.st_uid == 0; }

// /dev/stdout, /dev/stderr and /dev/fd/N by their names: the command's own descriptor, whatever
// /dev holds. A system or container without those links (a fresh development VM had no
// /dev/stdout) would otherwise get a regular file /dev/stdout, and every later run would replace it.
// -1: not one of those names.
int standard_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  const std::string fd_dir = "/dev/fd/";
  if (path.compare(0, fd_dir.size(), fd_dir) == 0 && all_digits(path.substr(fd_dir.size())))
    return std::stoi(path.substr(fd_dir.size()));
  return -1;
}

// `directory_ok`: the path may name a directory (Target::Directory); else that is an error.
Target resolve(const std::string& path, bool directory_ok = false) {
  if (int fd = standard_descriptor(path); fd >= 0) {
    Target t;
    t.kind = Target::OwnDescriptor;
    t.dir = "/dev";
    t.name = path.substr(5);
    t.fd = fd;
    return t;
  }
  std::deque<std::string> comps = split(path);
  if (comps.empty() && !directory_ok) fail(path, "is a directory");
  std::string cur = path[0] == '/' ? "/" : ".";
  int links = 0;
  bool final_from_link = false;  // the last component came out of a symlink's target
  struct stat cur_st {};
  if (lstat(cur.c_str(), &cur_st) != 0) fail(path, err_text(errno));
  while (!comps.empty()) {
    std::string c = comps.front();
    comps.pop_front();
    const bool last = comps.empty();
    const std::string next = join(cur, c);
    struct stat st {};
    if (lstat(next.c_str(), &st) != 0) {
      int e = errno;
      if (e == ENOENT && last) {
        if (final_from_link) fail(path, "is a symbolic link to a file that does not exist: not followed");
        Target t;
        t.kind = Target::Missing;
        t.dir = cur;
        t.name = c;
        t.dir_st = cur_st;
        return t;
      }
      fail(path, e == ENOENT ? fmt::format("{}: no such directory", next) : fmt::format("{}: {}", next, err_text(e)));
    }
    if (S_ISLNK(st.st_mode)) {
      if (!trusted_link(st))
        fail(path, fmt::format("{} is a symbolic link owned by uid {}, neither you nor root: not followed "
                               "(name the file it points to instead)",
                               next, st.st_uid));
      const bool proc = in_procfs(cur);
      if (proc && last) {
        // A /proc "magic" link (/dev/stdout -> /proc/self/fd/1): what it names may be a pipe
        // or a terminal with no path; it is written in place.
        Target t;
        t.dir = cur;
        t.name = c;
        t.dir_st = cur_st;
        if (is_own_fd_dir(cur) && all_digits(c)) {
          t.kind = Target::OwnDescriptor;
          t.fd = std::stoi(c);
        } else {
          t.kind = Target::ProcLink;
        }
        return t;
      }
      if (++links > 40) fail(path, "too many levels of symbolic links");
      char buf[PATH_MAX];
      ssize_t n = readlink(next.c_str(), buf, sizeof buf - 1);
      if (n <= 0)
        fail(path, fmt::format("{}: cannot read the symbolic link: {}", next, err_text(n < 0 ? errno : EINVAL)));
      std::string target(buf, static_cast<size_t>(n));
      std::deque<std::string> more = split(target);
      if (last) final_from_link = true;
      if (more.empty() && target[0] != '/') fail(path, fmt::format("{}: the symbolic link is empty", next));
      comps.insert(comps.begin(), more.begin(), more.end());
      if (target[0] == '/') {
        cur = "/";
        if (lstat("/", &cur_st) != 0) fail(path, err_text(errno));
      }
      if (comps.empty() && !directory_ok) fail(path, "is a directory");  // a link to "/"
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (last && directory_ok) {
        Target t;
        t.kind = Target::Directory;
        t.dir = cur;
        t.name = c;
        t.st = st;
        t.dir_st = cur_st;
        return t;
      }
      if (last) fail(path, "is a directory");
      cur = next;
      cur_st = st;
      continue;
    }
    if (!last) fail(path, fmt::format("{}: not a directory", next));
    Target t;
    t.kind = S_ISREG(st.st_mode) ? Target::Regular : Target::Special;
    t.dir = cur;
    t.name = c;
    t.st = st;
    t.dir_st = cur_st;
    return t;
  }
  if (!directory_ok) fail(path, "is a directory");
  Target t;  // "/" or "." (or a link to it)
  t.kind = Target::Directory;
  t.dir = cur;
  t.name = ".";
  t.st = cur_st;
  t.dir_st = cur_st;
  return t;
}

// ---- Unpredictable temporary names --------------------------------------------------------

std::string random_suffix() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[12];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, GRND_NONBLOCK);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got < sizeof bytes) {  // no entropy yet (early boot): still unique, and O_EXCL keeps it safe
    static uint64_t counter = 0;
    uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                 (static_cast<uint64_t>(getpid()) << 32) ^ (++counter * 0x9e3779b97f4a7c15ull);
    for (size_t i = got; i < sizeof bytes; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      bytes[i] = static_cast<unsigned char>(x);
    }
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof kChars - 1)];
  return s;
}

// ---- Removing the temporary file when the command is interrupted --------------------------

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct PendingTemp {
  volatile sig_atomic_t armed = 0;
  int dir_fd = -1;
  char name[NAME_MAX + 1] = {};
  struct sigaction old[3] = {};
  bool installed[3] = {};
};
PendingTemp g_pending;

void remove_pending_and_reraise(int sig) {
  if (g_pending.armed) unlinkat(g_pending.dir_fd, g_pending.name, 0);
  g_pending.armed = 0;
  signal(sig, SIG_DFL);
  raise(sig);
}

void arm_cleanup(int dir_fd, const std::string& name) {
  g_pending.dir_fd = dir_fd;
  std::snprintf(g_pending.name, sizeof g_pending.name, "%s", name.c_str());
  g_pending.armed = 1;
  for (size_t i = 0; i < 3; ++i) {
    struct sigaction now {};
    sigaction(kCleanupSignals[i], nullptr, &now);
    g_pending.installed[i] = false;
    if (now.sa_handler == SIG_IGN) continue;  // ignored (nohup, run's child wait): keep it so
    struct sigaction sa {};
    sa.sa_handler = remove_pending_and_reraise;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kCleanupSignals[i], &sa, &g_pending.old[i]) == 0) g_pending.installed[i] = true;
  }
}

void disarm_cleanup() {
  g_pending.armed = 0;
  for (size_t i = 0; i < 3; ++i)
    if (g_pending.installed[i]) {
      sigaction(kCleanupSignals[i], &g_pending.old[i], nullptr);
      g_pending.installed[i] = false;
    }
}

std::FILE* stream_of(int fd, const std::string& path) {
  std::FILE* f = fdopen(fd, "w");
  if (!f) {
    int e = errno;
    close(fd);
    fail(path, fmt::format("cannot write: {}", err_text(e)));
  }
  return f;
}

int connect_socket(const std::string& path, const std::string& shown) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) fail(shown, "is a socket whose path is too long to connect to");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM}) {
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    int e = errno;
    close(fd);
    if (e != EPROTOTYPE) fail(shown, fmt::format("is a socket; cannot connect to it: {}", err_text(e)));
  }
  fail(shown, "is a socket; cannot connect to it");
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (path.empty() || path == "-") {
    mode_ = Mode::Stdout;
    stream_ = stdout;
    return;
  }
  Target t = resolve(path);
  const std::string full = join(t.dir, t.name);
  switch (t.kind) {
    case Target::OwnDescriptor: {
      int fd = fcntl(t.fd, F_DUPFD_CLOEXEC, 3);
      if (fd < 0) fail(path, fmt::format("names descriptor {}, which is not open", t.fd));
      int flags = fcntl(t.fd, F_GETFL);
      if (flags >= 0 && (flags & O_ACCMODE) == O_RDONLY) {
        close(fd);
        fail(path, fmt::format("names descriptor {}, which is open for reading only", t.fd));
      }
      mode_ = Mode::Descriptor;
      stream_ = stream_of(fd, path);
      return;
    }
    case Target::ProcLink: {
      int fd = open(full.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
      if (fd < 0) fail(path, fmt::format("cannot write: {}", err_text(errno)));
      struct stat st {};
      if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) fcntl(fd, F_SETFL, O_APPEND);  // never over what is there
      mode_ = Mode::InPlace;
      stream_ = stream_of(fd, path);
      return;
    }
    case Target::Special: {
      if (S_ISBLK(t.st.st_mode)) fail(path, "is a block device: a report is not written onto it");
      int fd;
      if (S_ISSOCK(t.st.st_mode)) {
        fd = connect_socket(full, path);
      } else {
        fd = open(full.c_str(), O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);  // a FIFO: waits for a reader
        if (fd < 0) fail(path, fmt::format("cannot write: {}", err_text(errno)));
        struct stat st {};
        if (fstat(fd, &st) != 0 || st.st_dev != t.st.st_dev || st.st_ino != t.st.st_ino) {
          close(fd);
          fail(path, "was replaced while being opened");
        }
      }
      mode_ = Mode::InPlace;
      stream_ = stream_of(fd, path);
      return;
    }
    case Target::Directory: fail(path, "is a directory");
    case Target::Regular:
    case Target::Missing: break;
  }

  mode_ = Mode::Replace;
  name_ = t.name;
  dir_fd_ = open(t.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat dst {};
  if (dir_fd_ < 0) fail(path, fmt::format("cannot open its directory {}: {}", t.dir, err_text(errno)));
  if (fstat(dir_fd_, &dst) != 0 || dst.st_dev != t.dir_st.st_dev || dst.st_ino != t.dir_st.st_ino) {
    discard();
    fail(path, fmt::format("its directory {} was replaced while being opened", t.dir));
  }
  if (t.kind == Target::Regular) {
    // Only a file the user may write is replaced (as `> FILE` would need).
    if (faccessat(dir_fd_, name_.c_str(), W_OK, AT_EACCESS) != 0) {
      int e = errno;
      discard();
      fail(path, fmt::format("cannot write: {}", err_text(e)));
    }
    mode_bits_ = t.st.st_mode & 0777;
    keep_owner_ = true;
    uid_ = t.st.st_uid;
    gid_ = t.st.st_gid;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    mode_bits_ = 0666 & ~mask;
  }
  const std::string stem = name_.substr(0, 200);
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp_name_ = "." + stem + "." + random_suffix() + ".tmp";
    fd = openat(dir_fd_, tmp_name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    tmp_name_.clear();
    discard();
    fail(path, fmt::format("cannot create a temporary file in {} to replace it atomically: {}", t.dir, err_text(e)));
  }
  arm_cleanup(dir_fd_, tmp_name_);
  stream_ = fdopen(fd, "w");
  if (!stream_) {
    int e = errno;
    close(fd);
    discard();
    fail(path, fmt::format("cannot write: {}", err_text(e)));
  }
}

OutputFile::~OutputFile() { discard(); }

std::ostream& OutputFile::ostream() {
  if (!ostream_) {
    buffer_ = std::make_unique<Buffer>(stream_);
    ostream_ = std::make_unique<std::ostream>(buffer_.get());
  }
  return *ostream_;
}

void OutputFile::discard() noexcept {
  ostream_.reset();
  buffer_.reset();
  if (stream_ && stream_ != stdout) std::fclose(stream_);
  stream_ = nullptr;
  if (!tmp_name_.empty()) {
    unlinkat(dir_fd_, tmp_name_.c_str(), 0);
    tmp_name_.clear();
    disarm_cleanup();
  }
  if (dir_fd_ >= 0) close(dir_fd_);
  dir_fd_ = -1;
}

void OutputFile::commit() {
  if (!stream_) throw OutputError(fmt::format("{}: already closed", path_));
  const std::string shown = mode_ == Mode::Stdout ? std::string("standard output") : path_;
  errno = 0;
  bool ok = (!ostream_ || ostream_->flush().good()) && std::fflush(stream_) == 0 && !std::ferror(stream_);
  ostream_.reset();
  buffer_.reset();
  int e = errno;
  if (mode_ == Mode::Stdout) {
    const int fd = fileno(stream_);
    stream_ = nullptr;
    if (!ok && !reader_gone(fd, e)) fail(shown, fmt::format("cannot write: {}", err_text(e ? e : EIO)));
    return;
  }
  if (ok && mode_ == Mode::Replace) {
    int fd = fileno(stream_);
    // root keeps the file's owner; anyone else keeps its group where allowed (as `cp -p` does).
    if (keep_owner_ && fchown(fd, geteuid() == 0 ? uid_ : static_cast<uid_t>(-1), gid_) != 0) {
      // best effort: the file is then the caller's, with the caller's group
    }
    if (fchmod(fd, mode_bits_) != 0) {
      ok = false;
      e = errno;
    }
  }
  errno = 0;
  if (std::fclose(stream_) != 0 && ok) {
    ok = false;
    e = errno;
  }
  stream_ = nullptr;
  if (!ok) {
    discard();
    fail(shown, fmt::format("cannot write: {}", err_text(e ? e : EIO)));
  }
  if (mode_ != Mode::Replace) return;
  if (renameat(dir_fd_, tmp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    e = errno;
    discard();
    fail(shown, fmt::format("cannot replace it: {}", err_text(e)));
  }
  tmp_name_.clear();
  disarm_cleanup();
  discard();
}

int open_output_directory(const std::string& path, bool* created) {
  *created = false;
  Target t = resolve(path, true);
  const std::string full = t.name == "." ? t.dir : join(t.dir, t.name);
  if (t.kind == Target::Missing) {
    if (mkdir(full.c_str(), 0755) != 0) {
      if (errno == EEXIST) return open_output_directory(path, created);  // made meanwhile: check it again
      fail(path, fmt::format("cannot create the directory: {}", err_text(errno)));
    }
    *created = true;
    if (lstat(full.c_str(), &t.st) != 0) fail(path, err_text(errno));
  } else if (t.kind != Target::Directory) {
    fail(path, "is not a directory");
  }
  int fd = open(full.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail(path, fmt::format("cannot open the directory: {}", err_text(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_dev != t.st.st_dev || st.st_ino != t.st.st_ino) {
    close(fd);
    fail(path, "was replaced while being opened");
  }
  return fd;
}

}  // namespace asyncwatch
