#include "log.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace asyncwatch::log {
namespace {

enum Level { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
int g_level = kWarn;
// Descriptor 2 as it was when the library loaded (capture_stderr; on first use if not called).
enum StderrState { kUnknown, kOpen, kClosed };
int g_stderr = kUnknown;
dev_t g_stderr_dev = 0;
ino_t g_stderr_ino = 0;

bool stderr_is_the_same() noexcept {
  if (g_stderr == kUnknown) capture_stderr();
  if (g_stderr != kOpen) return false;
  struct stat st;
  return fstat(2, &st) == 0 && st.st_dev == g_stderr_dev && st.st_ino == g_stderr_ino;
}

void emit(const char* label, const char* fmt, va_list ap) noexcept {
  int saved = errno;
  if (stderr_is_the_same()) {
    char line[1024];
    int n = label ? snprintf(line, sizeof line, "asyncwatch[%d]: %s: ", static_cast<int>(getpid()), label)
                  : snprintf(line, sizeof line, "asyncwatch[%d]: ", static_cast<int>(getpid()));
    size_t len = n > 0 ? static_cast<size_t>(n) : 0;
    int m = vsnprintf(line + len, sizeof line - len - 1, fmt, ap);
    len = m > 0 ? std::min(sizeof line - 2, len + static_cast<size_t>(m)) : len;
    line[len++] = '\n';
    // One system call per line (lines of several threads do not interleave); syscall(), not
    // write(): write is a cancellation point.
    for (size_t off = 0; off < len;) {
      long w = syscall(SYS_write, 2, line + off, len - off);
      if (w <= 0 && errno != EINTR) break;
      if (w > 0) off += static_cast<size_t>(w);
    }
  }
  errno = saved;
}

#define AW_LOG_AT(level, label)    \
  do {                             \
    if (g_level > (level)) return; \
    va_list ap;                    \
    va_start(ap, fmt);             \
    emit(label, fmt, ap);          \
    va_end(ap);                    \
  } while (0)

}  // namespace

void capture_stderr() noexcept {
  struct stat st;
  bool open = fstat(2, &st) == 0;
  g_stderr_dev = open ? st.st_dev : 0;
  g_stderr_ino = open ? st.st_ino : 0;
  g_stderr = open ? kOpen : kClosed;
}

void set_level(const char* level) noexcept {
  static const char* const names[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  for (int i = 0; i <= kOff; ++i)
    if (!strcmp(level, names[i])) g_level = i;
}

void banner(const char* fmt, ...) noexcept { AW_LOG_AT(kCritical, nullptr); }  // any level but "off"
void info(const char* fmt, ...) noexcept { AW_LOG_AT(kInfo, "info"); }
void warn(const char* fmt, ...) noexcept { AW_LOG_AT(kWarn, "warning"); }
void error(const char* fmt, ...) noexcept { AW_LOG_AT(kError, "error"); }

}  // namespace asyncwatch::log
