#include "report/source_lines.h"

#include "report/fingerprint.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

namespace asyncwatch {

namespace {
constexpr off_t kMaxFileBytes = 64 << 20;
constexpr size_t kMaxLineBytes = 4096;
constexpr int kOpenFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// `rel` below the directory `root_fd`: never above it (no "..", no symlink out of it, no
// /proc magic link), never blocking (O_NONBLOCK: a FIFO, a terminal). Without openat2 (Linux <
// 5.6) the real path is checked against the root's and its last component is not followed.
int open_below(int root_fd, const std::string& root, const std::string& rel) {
  open_how how{};
  how.flags = kOpenFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  char real[PATH_MAX];
  if (!realpath((root + "/" + rel).c_str(), real) || path_below(real, root).empty()) return -1;
  return open(real, kOpenFlags | O_NOFOLLOW);
}

std::string normalized(const std::string& text) {
  if (text.size() > kMaxLineBytes) return {};
  std::string out;
  for (unsigned char c : text)
    if (!std::isspace(c)) out += static_cast<char>(c);
  return out;
}
}  // namespace

SourceLines::SourceLines(std::string root) : root_(std::move(root)) {
  if (!root_.empty()) root_fd_ = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

SourceLines::~SourceLines() {
  if (root_fd_ >= 0) close(root_fd_);
}

void SourceLines::want(const std::string& file, int line) {
  if (line > 0 && !file.empty() && !done_.count(file)) wanted_[file].insert(line);
}

std::string SourceLines::line(const std::string& file, int line) {
  if (line <= 0 || file.empty() || root_fd_ < 0) return {};
  auto it = lines_.find({file, line});
  if (it != lines_.end()) return it->second;
  if (done_.count(file)) {
    if (!wanted_[file].insert(line).second) return {};
    done_.erase(file);  // a line not announced: its file once more
  } else {
    wanted_[file].insert(line);
  }
  read(file);
  it = lines_.find({file, line});
  return it == lines_.end() ? std::string() : it->second;
}

void SourceLines::read(const std::string& file) {
  done_.insert(file);
  auto w = wanted_.find(file);
  if (w == wanted_.end()) return;
  std::set<int> want = std::move(w->second);
  wanted_.erase(w);
  std::string path = file;
  if (path[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return;
    path = std::string(cwd) + "/" + path;
  }
  std::string rel = path_below(path, root_);
  if (rel.empty()) return;  // outside the source root: the fingerprint uses the trace alone
  int fd = open_below(root_fd_, root_, rel);
  if (fd < 0) return;
  ++files_read_;
  struct stat st {};
  // Regular files only (not a device, FIFO or socket), of a size known before reading: a /proc
  // file says 0 and is never read (/proc/kmsg would block, or eat the kernel's log).
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > kMaxFileBytes) {
    close(fd);
    return;
  }
  std::vector<char> buf(1 << 20);
  auto next = want.begin();
  int lineno = 1;
  std::string current;
  off_t left = st.st_size;
  while (left > 0 && next != want.end()) {
    ssize_t n = ::read(fd, buf.data(), static_cast<size_t>(std::min<off_t>(left, static_cast<off_t>(buf.size()))));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= n;
    for (ssize_t i = 0; i < n && next != want.end(); ++i) {
      char c = buf[static_cast<size_t>(i)];
      if (c == '\n') {
        if (*next == lineno) {
          lines_[{file, lineno}] = normalized(current);
          ++next;
        }
        current.clear();
        ++lineno;
      } else if (*next == lineno && current.size() <= kMaxLineBytes) {
        current += c;
      }
    }
  }
  if (next != want.end() && *next == lineno && left == 0 && !current.empty())  // the last line, without '\n'
    lines_[{file, lineno}] = normalized(current);
  close(fd);
}

}  // namespace asyncwatch
