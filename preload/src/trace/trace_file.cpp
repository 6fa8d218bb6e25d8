#include "trace_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "common.h"
#include "config.h"
#include "futex.h"
#include "flight_ring.h"
#include "site_summary.h"
#include "trace_name.h"
#include "trace_writer.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace asyncwatch::trace_file {
namespace {

using namespace asyncwatch::trace;

// What the thread is doing; requesters wait on g_done for a change.
enum ThreadState : int { kNone = 0, kStarting = 1, kIdle = 2, kServing = 3, kGone = 4 };

std::atomic<int> g_thread{kNone};
std::atomic<uint32_t> g_req{0};     // bumped by requesters; the thread sleeps on it
std::atomic<uint32_t> g_done{0};    // bumped by the thread after each step; requesters sleep on it
std::atomic<uint64_t> g_want{0};    // map segments below this, ahead of need
std::atomic<uint64_t> g_need{0};    // a requester waits for the segments below this
std::atomic<uint64_t> g_mapped{0};  // segments [0, g_mapped) are mapped
std::atomic<bool> g_open_req{false};
std::atomic<bool> g_close_req{false};
std::atomic<uint64_t> g_close_bytes{0};
AW_LARGE_ZEROED std::atomic<char*> g_segments[kMaxSegments];
// Bit b of g_retired[seg]: block b of segment `seg` is retired (retire_block). g_released: the
// file thread's own, the retired blocks it has dropped from the mapping. Segments below
// g_release_from are all unmapped. Cleared up to g_mapped when a trace starts or after a fork.
static_assert(kBlocksPerSegment <= 64 && kFirstSegmentBlocks <= 64, "one 64-bit word of retired blocks per segment");
AW_LARGE_ZEROED std::atomic<uint64_t> g_retired[kMaxSegments];
AW_LARGE_ZEROED uint64_t g_released[kMaxSegments];
// The file thread's own: where in a segment whose blocks are all retired a call record was last
// found in flight (in_flight_left), 0 for none.
AW_LARGE_ZEROED uint32_t g_in_flight_at[kMaxSegments];
uint64_t g_release_from = 0;
// Bit b of g_ring_dropped[seg]: ring block b of segment `seg` was let go by its thread
// (drop_ring_block) and waits to leave the process's memory; taken by the file thread's exchange.
AW_LARGE_ZEROED std::atomic<uint64_t> g_ring_dropped[kMaxSegments];
std::atomic<uint64_t> g_ring_drops{0};  // drop_ring_block calls: every 16th (1 MiB of ring) wakes the thread
std::atomic<bool> g_ring_pending{false};
std::atomic<FileHeader*> g_header{nullptr};
std::atomic<pid_t> g_thread_pid{0};    // the process the thread belongs to
std::atomic<pid_t> g_thread_tid{0};    // its kernel task (give_back_thread waits for it to be gone)
std::atomic<bool> g_leave_req{false};  // give_back_thread: end now, leaving the file as it is
constexpr uint64_t kSegmentsKeptOnLeave = 2;
AW_TLS bool tl_starting = false;  // this thread is in start()'s pthread_create (interposed too)

// Owned by the thread while it runs (read by others only after it published kServing or kGone).
int g_fd = -1;
bool g_private = false;
dev_t g_dev = 0;
ino_t g_ino = 0;
// Atomic: the file thread may still be filling the header of an earlier request when the next
// one is made (a fork child's, or a test's).
std::atomic<uint64_t> g_parent_pid{0};
char g_path[PATH_MAX];
char g_error[320];
char g_cmdline[sizeof(FileHeader::command_line)];
bool g_cmdline_set = false;

using trace_sync::futex;
// The thread's sleep: until a request, or until the clock's calibration is due (tsc_clock.h).
void wait_for_request(uint32_t req) noexcept {
  uint64_t ns = tsc_clock::tick();
  // The capture range's end by duration (trace_writer::set_recording_deadline) wakes it too.
  if (uint64_t deadline = trace_writer::recording_deadline()) {
    const uint64_t now = now_ns();
    if (now >= deadline) {
      trace_writer::deadline_passed();
    } else if (ns == 0 || deadline - now < ns) {
      ns = deadline - now;
    }
  }
  if (ns == 0) {
    futex(&g_req, FUTEX_WAIT, req);
    return;
  }
  timespec rel{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  futex(&g_req, FUTEX_WAIT, req, &rel);
}
void bump(std::atomic<uint32_t>* a) noexcept {
  a->fetch_add(1, std::memory_order_acq_rel);
  futex(a, FUTEX_WAKE, INT32_MAX);
}

__attribute__((format(printf, 1, 2))) void set_error(const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
}

// ---- the descriptor -----------------------------------------------------------------------------

struct Dirent64 {  // what getdents64 returns
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// Closes this thread's copies of the application's descriptors (right after unshare): a copy would
// keep the application's pipes, sockets and files open after it closed them.
bool close_inherited() noexcept {
  if (syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return true;
  // Linux < 5.9: the descriptors listed in /proc/thread-self/fd (this thread's table).
  int d = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d < 0) return false;
  char buf[4096];
  for (;;) {
    long n = syscall(SYS_getdents64, d, buf, sizeof buf);
    if (n < 0) {  // the copies cannot be listed (seccomp): they would stay open
      syscall(SYS_close, d);
      return false;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<Dirent64*>(buf + off);
      off += e->reclen;
      char* end;
      long fd = strtol(e->name, &end, 10);
      if (end != e->name && !*end && fd != d) syscall(SYS_close, fd);
    }
  }
  syscall(SYS_close, d);
  return true;
}

// Process-table mode: a high number, below min(RLIMIT_NOFILE, 1024) (the kernel's descriptor table
// need not grow, select() users are unaffected), never 0/1/2, and never the last free number: if
// no other number is free, the application would have none left, so tracing gives up.
bool same_file(int fd, const struct stat& want) noexcept {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino;
}

// `fd` was just opened at the lowest free number (maybe 0/1/2): the copy at a high number is
// kept, the low one closed, each only while it still refers to the trace file `st` (another thread
// of the application may close and reuse numbers meanwhile). -1: no room, or the file was lost.
int place_high(int fd, const struct stat& st) noexcept {
  rlimit rl{};
  long top = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    top = std::min<long>(top, static_cast<long>(rl.rlim_cur));
  int h = -1;
  for (long dist = 1; h < 0 && top - dist >= 3; dist *= 2) h = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(top - dist));
  if (same_file(fd, st)) ::close(fd);
  if (h >= 0 && !same_file(h, st)) h = -1;  // the low number was another file when it was copied
  return h;
}

bool descriptor_is_ours() noexcept {
  if (g_private) return true;
  struct stat st;
  return fstat(g_fd, &st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino;
}

bool fits_rlimit(uint64_t new_size) noexcept {
  rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return true;
  return new_size <= rl.rlim_cur;  // exceeding it would raise SIGXFSZ
}

// Attempt `attempt` of the trace's name (trace_name.h).
void with_suffix(char* out, size_t cap, const char* dir, const char* name, int attempt) noexcept {
  timespec ts{};
  if (attempt >= trace_name::kNumbered) clock_gettime(CLOCK_MONOTONIC, &ts);
  trace_name::candidate(out, cap, dir, name, attempt, getpid(),
                        static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec));
}

// Every name the pattern allows is taken (EEXIST on each): said so, not as "File exists".
void set_name_error(const char* dir, const char* name) noexcept {
  if (errno == EEXIST)
    set_error("cannot create trace file %s/%s: all %d names tried exist", dir, name, trace_name::kAttempts);
  else
    set_error("cannot create trace file %s: %s", g_path, strerror(errno));
}

void copy_str(char* dst, size_t cap, const char* s) noexcept {
  size_t n = std::min(cap - 1, strlen(s));
  memcpy(dst, s, n);
  dst[n] = 0;
}

// The first rank variable that holds a decimal number (no allocation: getenv and a digit loop).
void fill_rank(FileHeader* h) noexcept {
  uint8_t source = 1;
  for (const char* name : trace::kRankVariables) {
    const char* v = getenv(name);
    uint64_t n = 0;
    bool digits = v && *v;
    for (const char* d = v; digits && *d; ++d) {
      if (*d < '0' || *d > '9' || n > 0xffffffffull / 10)
        digits = false;
      else
        n = n * 10 + static_cast<uint64_t>(*d - '0');
    }
    if (digits && n <= 0xffffffffull) {
      h->rank = static_cast<uint32_t>(n);
      h->rank_source = source;
      return;
    }
    ++source;
  }
}

// `exe` and `host`: create_file's (one readlink and one uname for both).
void fill_header(FileHeader* h, const char* exe, const char* host) noexcept {
  memcpy(h->magic, kMagic, sizeof kMagic);
  h->version = kFormatVersion;
  h->header_size = kHeaderSize;
  h->block_size = kBlockSize;
  h->closed = 0;
  h->pid = static_cast<uint64_t>(getpid());
  h->ppid = static_cast<uint64_t>(getppid());
  h->parent_pid_if_forked = g_parent_pid.load(std::memory_order_relaxed);
  // now_ns(), not clock_gettime: the records' clock (the two differ by up to the calibration's
  // bound, docs/interception.md "Times").
  h->start_monotonic_ns = now_ns();
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  h->start_realtime_ns = static_cast<uint64_t>(real.tv_sec) * 1000000000ull + static_cast<uint64_t>(real.tv_nsec);
  h->exit_status = -1;
  fill_rank(h);
  const Config& c = config();
  h->config_flags = config_flags(c);
  h->flight_ring_blocks = c.trace_limit / kBlockSize;
  flight_ring::start(h->flight_ring_blocks);
  site_summary::g_fold_range_ns.store(
      site_summary::fold_range(c.stacks == StackPolicy::All    ? 0
                               : c.stacks == StackPolicy::None ? site_summary::kFoldBelowMaxNs
                                                               : c.launch_stack_threshold_ns),
      std::memory_order_relaxed);
  site_summary::g_mode.store(!c.summary                                               ? site_summary::kOff
                             : flight_ring::g_enabled.load(std::memory_order_relaxed) ? site_summary::kOnRing
                                                                                      : site_summary::kOn,
                             std::memory_order_relaxed);
  h->launch_stack_threshold_ns = c.launch_stack_threshold_ns;
  copy_str(h->hostname, sizeof h->hostname, host);
  copy_str(h->executable, sizeof h->executable, exe);
  if (g_cmdline_set) {
    copy_str(h->command_line, sizeof h->command_line, g_cmdline);
  } else {  // not set by the constructor (unit tests): the kernel's copy
    int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, h->command_line, sizeof h->command_line - 1) : 0;
    if (fd >= 0) ::close(fd);
    for (ssize_t i = 0; i < got; ++i)
      if (!h->command_line[i]) h->command_line[i] = ' ';
    while (got > 0 && h->command_line[got - 1] == ' ') --got;
    h->command_line[got > 0 ? got : 0] = 0;
  }
  size_t used = 0;
  for (const char* name : {"CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS"}) {
    const char* v = getenv(name);
    if (!v || used >= sizeof h->cuda_env - 1) continue;
    int w = snprintf(h->cuda_env + used, sizeof h->cuda_env - used, "%s=%s;", name, v);
    if (w > 0) used = std::min(sizeof h->cuda_env - 1, used + static_cast<size_t>(w));
  }
}

// An unnamed file in `dir` (O_TMPFILE), given its name (link_unnamed) once it is complete, just
// before it is published (name_unnamed): the file is made while the application's first call
// runs, and a process that ends meanwhile (killed, or a handler's _exit or exit) must leave no
// file, not a partial or unclosed one. -1 where the kernel or the file system lacks it, or /proc
// is not there for the link: the file is then created under its name.
int open_unnamed(const char* dir, mode_t mode) noexcept {
  if (access("/proc/thread-self/fd", X_OK) != 0) return -1;
  return ::open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
}

// The unnamed file's name: the first free one of the pattern's (linkat never replaces a name, nor
// follows one that is a symlink). Sets g_path; false when no name could be given (set_error).
bool link_unnamed(int fd, const char* dir, const char* name) noexcept {
  char self[64];
  snprintf(self, sizeof self, "/proc/thread-self/fd/%d", fd);
  for (int attempt = 0; attempt < trace_name::kAttempts; ++attempt) {
    with_suffix(g_path, sizeof g_path, dir, name, attempt);
    if (linkat(AT_FDCWD, self, AT_FDCWD, g_path, AT_SYMLINK_FOLLOW) == 0) return true;
    if (errno != EEXIST) break;
  }
  set_name_error(dir, name);
  g_path[0] = 0;
  return false;
}

// The unnamed file's name pattern (create_file's, with its expansions), until name_unnamed.
AW_LARGE_ZEROED char g_unnamed_name[PATH_MAX];
// The unnamed file's naming against the process's end (settle_unnamed): open until the file
// thread names and publishes it (kNaming, then kNamed) or the ending process refuses it first
// (kNameRefused: never named, the file goes with the process). Also a futex word.
enum NameState : uint32_t { kNameOpen, kNaming, kNamed, kNameRefused };
std::atomic<uint32_t> g_name_state{kNameOpen};
void end_naming() noexcept {
  g_name_state.store(kNamed, std::memory_order_release);
  futex(&g_name_state, FUTEX_WAKE, INT32_MAX);
}

const char* output_dir() noexcept { return config().output_dir.empty() ? "." : config().output_dir.c_str(); }

// Creates the file (never an existing path, never through a symlink: O_TMPFILE then linkat, or
// O_EXCL|O_NOFOLLOW), maps and fills the header. `unnamed_fd`: a file of open_unnamed's already made
// (named later: name_unnamed), or -1. On failure nothing is left behind.
bool create_file(int unnamed_fd) noexcept {
  const Config& c = config();
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  const char* base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  if (!*base) base = "unknown";
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  char name[PATH_MAX];
  if (!expand_output_pattern_to(name, sizeof name, c.output_pattern.c_str(), base, static_cast<long>(getpid()), host,
                                static_cast<long>(time(nullptr)))) {
    set_error("trace file name too long");
    if (unnamed_fd >= 0) ::close(unnamed_fd);
    return false;
  }
  const char* dir = output_dir();
  // (With the thread's own table file_main tried open_unnamed already.)
  int fd = unnamed_fd >= 0 ? unnamed_fd : g_private ? -1 : open_unnamed(dir, c.file_mode);
  const bool unnamed = fd >= 0;
  if (unnamed) {
    with_suffix(g_path, sizeof g_path, dir, name, 0);  // for the messages until it has its name
  } else {
    for (int attempt = 0; attempt < trace_name::kAttempts; ++attempt) {
      with_suffix(g_path, sizeof g_path, dir, name, attempt);
      fd = ::open(g_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, c.file_mode);
      if (fd >= 0 || errno != EEXIST) break;
    }
  }
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE)
      set_error("no free file descriptor for trace file %s", g_path);
    else
      set_name_error(dir, name);
    g_path[0] = 0;
    return false;
  }
  struct stat st;
  bool known = fstat(fd, &st) == 0;
  void* hdr = MAP_FAILED;
  auto undo = [&] {
    if (hdr != MAP_FAILED) munmap(hdr, kHeaderSize);
    if (fd >= 0 && (g_private || (known && same_file(fd, st)))) ::close(fd);
    if (!unnamed && g_path[0]) unlink(g_path);
    g_path[0] = 0;
    return false;
  };
  auto fail = [&](const char* what) {
    set_error("%s %s", what, g_path);
    return undo();
  };
  if (!known) return fail("cannot stat trace file");
  if (!g_private) {
    fd = place_high(fd, st);
    if (fd < 0) return fail("no free file descriptor (RLIMIT_NOFILE) besides the last one for trace file");
    g_dev = st.st_dev;
    g_ino = st.st_ino;
  }
  fchmod(fd, c.file_mode);  // the mode must not depend on the application's umask
  if (!fits_rlimit(kHeaderSize) || posix_fallocate(fd, 0, kHeaderSize) != 0) return fail("cannot allocate trace file");
  hdr = mmap(nullptr, kHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (hdr == MAP_FAILED) return fail("cannot map trace file");
  fill_header(static_cast<FileHeader*>(hdr), exe, host);
  if (unnamed && unnamed_fd >= 0)  // file_main's, made during the first call: named by name_unnamed
    copy_str(g_unnamed_name, sizeof g_unnamed_name, name);
  else if (unnamed && !link_unnamed(fd, dir, name))  // made after the first call: named at once
    return undo();                                   // (link_unnamed said why)
  g_fd = fd;
  g_header.store(static_cast<FileHeader*>(hdr), std::memory_order_release);
  return true;
}

// The first two blocks (the first threads') are written with zeros before they are mapped: their
// pages are then in the page cache, and the application's first records take minor faults. Left
// as fallocate's unwritten extents, each first touch goes through ext4's read path (zero-filled
// readahead: ~20 us a page on the VM); pre-faulting them with MADV_POPULATE_WRITE instead cost the
// file thread 0.15-0.2 ms a process, this ~0.03-0.05 ms. Before the mapping is published: a
// write into the file must never overtake a record. Best effort: the range reads as zeros
// whether or not (or how much of) the write happened.
constexpr uint64_t kFirstSegmentWritten = 2 * kBlockSize;
void write_first_blocks(off_t off) noexcept {
  static_assert(kFirstSegmentWritten <= kFirstSegmentBytes);
  // One zero page, never written, named by every iovec: one fault of the file thread (the shared
  // zero page), not a 16 KiB buffer zeroed on its stack (four faults).
  static constexpr size_t kChunk = 4096;
  alignas(4096) AW_LARGE_ZEROED static char zeros[kChunk];
  iovec iov[kFirstSegmentWritten / kChunk];
  for (iovec& v : iov) v = {zeros, kChunk};
  [[maybe_unused]] ssize_t n = pwritev(g_fd, iov, static_cast<int>(std::size(iov)), off);
}

// Gives the unnamed file (create_file's, with segment 0 mapped or not) its name: the last step
// before it is published, so that a process ending before the trace is ready (a signal handler's
// exit() during the first call: the trace cannot be closed before it is published) leaves no
// file, not one that was never closed. On failure the file and its mappings are released
// (link_unnamed said why).
void discard_unnamed() noexcept {
  if (char* p = g_segments[0].exchange(nullptr)) munmap(p, segment_bytes(0));
  if (FileHeader* h = g_header.exchange(nullptr)) munmap(h, kHeaderSize);
  ::close(g_fd);  // the thread's own table: ours
  g_fd = -1;
}
bool name_unnamed() noexcept {
  if (link_unnamed(g_fd, output_dir(), g_unnamed_name)) return true;
  discard_unnamed();
  return false;
}

// Grows the file by segment `seg` and maps it. posix_fallocate, not ftruncate: a sparse file on a
// full disk would SIGBUS the application on its first store into a hole.
bool map_one(uint64_t seg) noexcept {
  if (seg >= kMaxSegments) {
    set_error("trace file reached its size limit (%llu GiB)",
              static_cast<unsigned long long>(kMaxSegments * kSegmentBytes >> 30));
    return false;
  }
  off_t off = static_cast<off_t>(kHeaderSize + segment_first_block(seg) * kBlockSize);
  const uint64_t bytes = segment_bytes(seg);
  if (!fits_rlimit(static_cast<uint64_t>(off) + bytes)) {
    set_error("trace file would exceed RLIMIT_FSIZE");
    return false;
  }
  if (g_fd < 0) return false;  // given up after an earlier failure (g_error says which)
  if (!descriptor_is_ours()) {
    set_error("the trace file's descriptor %d was closed or replaced by the application", g_fd);
    g_fd = -1;  // not ours any more: never touched again
    return false;
  }
  int rc = posix_fallocate(g_fd, off, static_cast<off_t>(bytes));
  if (rc == 0 && seg == 0) write_first_blocks(off);
  if (rc != 0) {
    set_error("cannot grow trace file: %s", strerror(rc));
    return false;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g_fd, off);
  if (p == MAP_FAILED) {
    set_error("cannot map trace segment: %s", strerror(errno));
    return false;
  }
  g_segments[seg].store(static_cast<char*>(p), std::memory_order_release);
  return true;
}

// Fault the segment in writable in one call instead of one page fault (and ext4 page_mkwrite) per
// 4 KiB inside the application's calls; done after the segment is published, so a writer that
// waited for it goes on at once. Linux >= 5.14; older kernels answer EINVAL and pages fault in.
// Not segment 0: a short process writes a few pages of it (its first two blocks are in the page
// cache already: write_first_blocks), and pre-faulting (then truncating) all of it was most of
// tracing's start-up cost.
void populate(uint64_t seg) noexcept {
  if (char* p = g_segments[seg].load(std::memory_order_acquire)) madvise(p, segment_bytes(seg), MADV_POPULATE_WRITE);
}
// Of segment 0, only the first page of each of the first two blocks: the pages the first two
// writers (the application's first thread and usually one more) store into first, whose write
// fault (an ext4 page_mkwrite each) would otherwise be taken inside the application's first call.
// After the segment is published: a writer that got there first takes its own fault meanwhile.
void populate_first_pages() noexcept {
  char* p = g_segments[0].load(std::memory_order_acquire);
  if (!p) return;
  for (uint64_t b = 0; b < kFirstSegmentWritten / kBlockSize; ++b)
    madvise(p + b * kBlockSize, 4096, MADV_POPULATE_WRITE);
}

constexpr uint64_t all_blocks(uint64_t seg) {
  return segment_blocks(seg) >= 64 ? ~0ull : (1ull << segment_blocks(seg)) - 1;
}

// Where the records of a block (at `block`) end, read by their framing from offset `from` (a record's
// start), and the offset of the first call record still in flight at or after `from` (0: none).
// Flags are read atomically: the thread of an in-flight record stores them last when it completes,
// with release order. Before that its fill sets other flag bits with plain stores (never the
// in-flight bit): not instrumented for ThreadSanitizer, which would report those as a race with
// this read (the hot path keeps its plain stores).
struct BlockRecords {
  uint32_t end;
  uint32_t in_flight;
};
__attribute__((no_sanitize("thread"))) BlockRecords walk_block(const char* block, uint32_t from) noexcept {
  const uint32_t magic = __atomic_load_n(reinterpret_cast<const uint32_t*>(block), __ATOMIC_ACQUIRE);
  if (magic != kBlockMagic && magic != kBlockMagicShared && magic != kBlockMagicRing) return {0, 0};  // never written
  uint32_t off = from;
  for (;;) {  // to the first empty header (the writer's own framing)
    if (off + sizeof(RecordHeader) > kBlockSize) break;
    RecordHeader rh;
    memcpy(&rh, block + off, sizeof rh);
    if (rh.type == 0 || rh.size < sizeof(RecordHeader) || rh.size % 8 || off + rh.size > kBlockSize) break;
    if (record_info(rh.type).call && rh.size >= sizeof(CallHead) &&
        (__atomic_load_n(&reinterpret_cast<const CallHead*>(block + off)->flags, __ATOMIC_ACQUIRE) & kFlagInFlight))
      return {0, off};
    off += rh.size;
  }
  return {off, 0};
}

// The unused rest of each block of a segment whose blocks are all retired (a thread that exited
// after a few records leaves most of its 64 KiB unused) goes back to the file system: a hole
// (FALLOC_FL_PUNCH_HOLE, the file's length kept) reads as the zeros it held, so readers see the
// same trace, and nothing is ever written there again. Where the file system cannot punch holes
// the zeros stay.
void punch_unused(uint64_t seg, const char* p) noexcept {
  const off_t seg_off = static_cast<off_t>(kHeaderSize + segment_first_block(seg) * kBlockSize);
  for (uint64_t b = 0; b < segment_blocks(seg); ++b) {
    const BlockRecords r = walk_block(p + b * kBlockSize, sizeof(BlockHeader));
    if (r.in_flight) continue;  // cannot be (in_flight_left found none), but its `end` is not the records' end
    const uint64_t from = (r.end + 4095ull) & ~4095ull;
    if (from >= kBlockSize) continue;
    if (fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, seg_off + static_cast<off_t>(b * kBlockSize + from),
                  static_cast<off_t>(kBlockSize - from)) != 0 &&
        errno == EOPNOTSUPP)
      return;
  }
}

// Whether a call record of the segment at `p`, whose blocks are all retired, is still in flight:
// a signal handler's calls (or the records a call writes while it runs: its stack) can fill the
// thread's block and retire it while the interrupted call's record, published there, waits for
// its completion, which stores into it. Such a segment stays mapped (its pages dropped) until that
// store: unmapped, it would be a SIGSEGV in the application. The search resumes where it found one
// (g_in_flight_at: the offset in the segment, 0: from the start), so a record that stays in flight
// (a call the thread never returned from) costs one page a wake-up, not a walk of the segment.
bool in_flight_left(uint64_t seg, const char* p) noexcept {
  const uint64_t at = g_in_flight_at[seg];
  for (uint64_t b = at / kBlockSize; b < segment_blocks(seg); ++b) {
    const uint32_t from = b == at / kBlockSize && at ? static_cast<uint32_t>(at % kBlockSize) : sizeof(BlockHeader);
    if (const uint32_t off = walk_block(p + b * kBlockSize, from).in_flight) {
      g_in_flight_at[seg] = static_cast<uint32_t>(b * kBlockSize + off);
      return true;
    }
  }
  g_in_flight_at[seg] = 0;
  return false;
}

// The retired blocks of segment `seg` (at `p`) not dropped from the mapping yet, dropped.
void drop_retired(uint64_t seg, char* p, uint64_t retired) noexcept {
  for (uint64_t fresh = retired & ~g_released[seg]; fresh;) {
    const int first = __builtin_ctzll(fresh);
    const uint64_t from_first = fresh >> first;
    const int run = ~from_first ? __builtin_ctzll(~from_first) : 64 - first;
    madvise(p + static_cast<uint64_t>(first) * kBlockSize, static_cast<size_t>(run) * kBlockSize, MADV_DONTNEED);
    fresh &= ~((run >= 64 ? ~0ull : (1ull << run) - 1) << first);
  }
  g_released[seg] = retired;
}

// Retired blocks out of the process's memory (retire_block). A segment whose blocks are all
// retired is unmapped (no thread holds or can claim a block in it any more: claims only go
// forward) once none of its call records is in flight (in_flight_left), and its dirty pages are
// handed to write-back, so that they become reclaimable page cache rather than memory charged to
// the application until the kernel's timer writes them. The retired blocks of a segment still in
// use (or with a call in flight) are dropped with MADV_DONTNEED, which on a shared file mapping only
// unmaps the pages: the data stays in the page cache and the file, and a late store (an in-flight
// call's completion) faults the page in again, losing nothing. So the crash contract holds
// whatever happens here.
// Ring blocks (flight_ring.h) let go by their threads leave the process's memory the same way
// (MADV_DONTNEED), but their segments stay mapped: a ring block is written again when it is reused.
// A block reused before this runs loses nothing (its stores are in the page cache; the next faults
// the page in again).
void release_ring_blocks(uint64_t mapped) noexcept {
  if (!g_ring_pending.exchange(false, std::memory_order_acq_rel)) return;
  for (uint64_t seg = 0; seg < mapped && seg < kMaxSegments; ++seg) {
    if (!g_ring_dropped[seg].load(std::memory_order_relaxed)) continue;
    uint64_t bits = g_ring_dropped[seg].exchange(0, std::memory_order_acq_rel);
    char* p = g_segments[seg].load(std::memory_order_acquire);
    for (; p && bits; bits &= bits - 1)
      madvise(p + static_cast<uint64_t>(__builtin_ctzll(bits)) * kBlockSize, kBlockSize, MADV_DONTNEED);
  }
}

void release_retired() noexcept {
  const uint64_t mapped = g_mapped.load(std::memory_order_acquire);
  release_ring_blocks(mapped);
  bool lowest = true;  // every segment below `seg` is unmapped
  for (uint64_t seg = g_release_from; seg < mapped; ++seg) {
    char* p = g_segments[seg].load(std::memory_order_acquire);
    if (p) {
      const uint64_t retired = g_retired[seg].load(std::memory_order_acquire);
      if (retired == all_blocks(seg) && !in_flight_left(seg, p)) {
        g_segments[seg].store(nullptr, std::memory_order_release);
        const bool ours = g_fd >= 0 && descriptor_is_ours();
        if (ours) punch_unused(seg, p);
        munmap(p, segment_bytes(seg));
        if (ours)
          sync_file_range(g_fd, static_cast<off_t>(kHeaderSize + segment_first_block(seg) * kBlockSize),
                          static_cast<off_t>(segment_bytes(seg)), SYNC_FILE_RANGE_WRITE);
      } else {
        drop_retired(seg, p, retired);
        lowest = false;
      }
    }
    if (lowest) g_release_from = seg + 1;
  }
}

// The retired-block bookkeeping of a trace that is over (a new one starts, or after a fork).
void forget_retired() noexcept {
  const uint64_t used = std::min(std::max(g_mapped.load(), g_release_from), kMaxSegments);
  for (uint64_t i = 0; i < used; ++i) {
    g_retired[i].store(0, std::memory_order_relaxed);
    g_ring_dropped[i].store(0, std::memory_order_relaxed);
    g_released[i] = 0;
    g_in_flight_at[i] = 0;
  }
  g_ring_pending.store(false);
  g_release_from = 0;
}

// Truncates to `bytes` (kNoTruncate: not at all) and releases the descriptor, only when it is
// still ours.
constexpr uint64_t kNoTruncate = UINT64_MAX;
void release(uint64_t bytes) noexcept {
  if (g_fd >= 0 && descriptor_is_ours()) {
    if (bytes != kNoTruncate && ftruncate(g_fd, static_cast<off_t>(bytes)) != 0) {
      // keep the zero tail; the reader stops at blocks without kBlockMagic
    }
    ::close(g_fd);
  }
  g_fd = -1;
}

// Until the file is asked for (true) or the trace closed first (false).
bool wait_for_open() noexcept {
  for (;;) {
    uint32_t req = g_req.load(std::memory_order_acquire);
    if (g_close_req.load(std::memory_order_acquire)) return false;
    if (g_open_req.load(std::memory_order_acquire)) return true;
    wait_for_request(req);
  }
}

void finish() noexcept {
  g_thread.store(kGone, std::memory_order_release);
  bump(&g_done);
}

void* file_main(void*) {
  prctl(PR_SET_NAME, "asyncwatch-file");  // not pthread_setname_np: that opens a file in the caller's table
  g_thread_tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  // Its own descriptor table: nothing the application does to its descriptors reaches the trace's.
  g_private = false;
  if (unshare(CLONE_FILES) == 0) {
    if (!close_inherited()) {
      // Its copies of the application's descriptors cannot be closed: this thread must go (its
      // table goes with it) and must not trace.
      set_error("cannot release the trace thread's copies of the application's file descriptors");
      finish();
      trace_writer::file_opened(nullptr);
      return nullptr;
    }
    g_private = true;
  }
  tsc_clock::start(g_private);
  g_thread.store(kIdle, std::memory_order_release);
  bump(&g_done);
  // With a table of its own, and where the file can be made unnamed (it then appears whole or not
  // at all), it is made at once, while the application's first call (which started this thread)
  // runs, so that its first record does not wait for it: the descriptor takes no number of the
  // application's. Otherwise only when the first record is written, after that call returned (in
  // the application's table the call may need the last free descriptor number itself). Either
  // way the writer learns of the file at its request (file_opened), and of a failure only then,
  // so that the thread that asked reports it.
  const int unnamed = g_private ? open_unnamed(output_dir(), config().file_mode) : -1;
  const bool eager = unnamed >= 0;
  if (!eager && !wait_for_open()) {
    finish();
    return nullptr;
  }
  // The thread ends; the writer is told at its request (never, when the trace is closed first).
  auto give_up = [eager](FileHeader* header) -> void* {
    const bool asked = !eager || wait_for_open();
    finish();
    if (asked) trace_writer::file_opened(header);
    return nullptr;
  };
  if (!create_file(unnamed)) return give_up(nullptr);
  FileHeader* h = g_header.load(std::memory_order_acquire);
  const bool first_mapped = map_one(0);
  if (eager) {
    uint32_t open = kNameOpen;
    if (!g_name_state.compare_exchange_strong(open, kNaming)) {
      // The process is ending: no trace. A writer may still ask for the file (an exit handler's
      // CUDA call): give_up answers it, so that it records nothing rather than waiting.
      discard_unnamed();
      return give_up(nullptr);
    }
    if (!name_unnamed()) {
      end_naming();
      return give_up(nullptr);
    }
  }
  if (!first_mapped) {
    // Header only: the trace exists and says so; the first block claim fails and reports why.
    release(kHeaderSize);
    if (eager) end_naming();
    return give_up(h);
  }
  g_mapped.store(1, std::memory_order_release);
  g_thread.store(kServing, std::memory_order_release);
  bump(&g_done);
  bool opened = !eager;
  if (eager) {
    trace_writer::file_ready(h);
    end_naming();
  } else {
    trace_writer::file_opened(h);
  }
  populate_first_pages();
  uint64_t ahead_failed_at = UINT64_MAX;  // a segment mapped ahead that failed: retried only when needed
  for (;;) {
    uint32_t req = g_req.load(std::memory_order_acquire);
    if (g_close_req.load(std::memory_order_acquire)) {
      release(g_close_bytes.load());
      finish();
      return nullptr;
    }
    if (g_leave_req.load(std::memory_order_acquire)) {  // its process slot is the application's now
      // One 4 MiB segment past the first stays mapped at least: the threads the program can now
      // start each claim a block of their own.
      for (uint64_t m = g_mapped.load(std::memory_order_relaxed); m < kSegmentsKeptOnLeave && map_one(m); ++m)
        g_mapped.store(m + 1, std::memory_order_release);
      set_error(
          "asyncwatch's file thread ended to leave its process slot to the application (RLIMIT_NPROC): the "
          "trace ends where the file was mapped");
      release(kNoTruncate);
      finish();
      return nullptr;
    }
    if (!opened && g_open_req.load(std::memory_order_acquire)) {  // asked for after it was made
      opened = true;
      trace_writer::file_opened(h);
    }
    uint64_t mapped = g_mapped.load(std::memory_order_relaxed);
    uint64_t need = g_need.load(std::memory_order_acquire);
    uint64_t want = std::max(need, g_want.load(std::memory_order_acquire));
    if (mapped < want && (mapped < need || mapped < ahead_failed_at)) {
      if (map_one(mapped)) {
        g_mapped.store(mapped + 1, std::memory_order_release);
        bump(&g_done);
        populate(mapped);
        continue;
      }
      if (mapped < need) {  // a writer needs it: final. Keep what is mapped; release the file.
        release(kHeaderSize + segment_first_block(mapped) * kBlockSize);
        finish();
        return nullptr;
      }
      ahead_failed_at = mapped;
      continue;
    }
    release_retired();
    wait_for_request(req);
  }
}

}  // namespace

bool start(uint64_t parent_pid) noexcept {
  int st = g_thread.load(std::memory_order_acquire);
  if (st == kStarting || st == kIdle || st == kServing) return false;  // one trace per process at a time
  g_parent_pid.store(parent_pid, std::memory_order_relaxed);           // published by pthread_create
  g_error[0] = 0;
  g_path[0] = 0;
  forget_retired();
  g_want.store(0);
  g_need.store(0);
  g_mapped.store(0);
  g_open_req.store(false);
  g_close_req.store(false);
  g_header.store(nullptr);
  g_name_state.store(kNameOpen);
  g_fd = -1;
  g_leave_req.store(false);
  g_thread_tid.store(0);
  g_thread_pid.store(getpid());
  g_thread.store(kStarting, std::memory_order_release);
  // The thread inherits the mask: no signal of the application's is ever delivered to it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // The default stack size (RLIMIT_STACK, reserved, not committed): glibc carves the process's
  // static TLS out of a thread's stack, and a program that loads cuBLAS has more of it than a
  // small fixed stack holds (pthread_create fails with EINVAL, or the thread overflows at once).
  pthread_t t;
  tl_starting = true;
  int rc = pthread_create(&t, &attr, &file_main, nullptr);
  tl_starting = false;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    set_error("cannot start the trace's file thread: %s", strerror(rc));
    g_thread.store(kGone, std::memory_order_release);
    return false;
  }
  return true;
}

void request_open() noexcept {
  g_open_req.store(true, std::memory_order_release);
  bump(&g_req);
}

char* segment(uint64_t seg) noexcept {
  if (seg >= kMaxSegments) return nullptr;
  char* p = g_segments[seg].load(std::memory_order_acquire);
  if (AW_LIKELY(p)) return p;
  uint64_t cur = g_need.load();
  while (cur < seg + 1 && !g_need.compare_exchange_weak(cur, seg + 1)) {}
  bump(&g_req);
  for (;;) {
    uint32_t d = g_done.load(std::memory_order_acquire);
    if ((p = g_segments[seg].load(std::memory_order_acquire))) return p;
    if (g_thread.load(std::memory_order_acquire) != kServing) return nullptr;
    futex(&g_done, FUTEX_WAIT, d);
  }
}

char* mapped_segment(uint64_t seg) noexcept {
  return seg < kMaxSegments ? g_segments[seg].load(std::memory_order_acquire) : nullptr;
}

void map_ahead(uint64_t count) noexcept {
  uint64_t cur = g_want.load(std::memory_order_relaxed);
  bool raised = false;
  while (cur < count && !(raised = g_want.compare_exchange_weak(cur, count))) {}
  if (raised) bump(&g_req);
}

uint64_t mapped_blocks() noexcept { return segment_first_block(g_mapped.load(std::memory_order_acquire)); }

void wake() noexcept { bump(&g_req); }

void retire_block(uint64_t block) noexcept {
  const uint64_t seg = segment_of_block(block);
  if (seg >= kMaxSegments) return;
  const uint64_t bit = 1ull << (block - segment_first_block(seg));
  const uint64_t was = g_retired[seg].fetch_or(bit, std::memory_order_acq_rel);
  // A whole segment: the file thread unmaps it now (a futex wake once per 4 MiB of trace). Single
  // blocks wait for its next wake-up (a segment mapped ahead, every 1 MiB of trace).
  if ((was | bit) == all_blocks(seg) && was != all_blocks(seg)) bump(&g_req);
}

void drop_ring_block(uint64_t block) noexcept {
  const uint64_t seg = segment_of_block(block);
  if (seg >= kMaxSegments) return;
  g_ring_dropped[seg].fetch_or(1ull << (block - segment_first_block(seg)), std::memory_order_acq_rel);
  g_ring_pending.store(true, std::memory_order_release);
  // Without new segments to map (a ring that has wrapped) the thread would not wake for them.
  if ((g_ring_drops.fetch_add(1, std::memory_order_relaxed) + 1) % 16 == 0) bump(&g_req);
}

namespace {
// Asks the thread to release the file (truncated to `bytes`); false when there is no thread.
bool request_close(uint64_t bytes) noexcept {
  int st = g_thread.load(std::memory_order_acquire);
  if (st == kNone || st == kGone) return false;
  g_close_bytes.store(bytes);
  g_close_req.store(true, std::memory_order_release);
  bump(&g_req);
  return true;
}
}  // namespace

bool settle_unnamed(trace_sync::Patience* patience) noexcept {
  uint32_t s = kNameOpen;
  if (g_name_state.compare_exchange_strong(s, kNameRefused, std::memory_order_acq_rel)) return false;
  // The file thread's linkat and publication: no lock of anyone's held.
  while (s == kNaming && trace_sync::wait_patiently(&g_name_state, kNaming, patience))
    s = g_name_state.load(std::memory_order_acquire);
  return s == kNamed;
}

bool close_at_exit(uint64_t bytes) noexcept {
  if (bytes > kHeaderSize + kFirstSegmentBytes || g_mapped.load(std::memory_order_acquire) > 1 || !g_private)
    return false;
  request_close(kNoTruncate);
  return true;
}

bool close(uint64_t bytes, trace_sync::Patience* patience) noexcept {
  if (!request_close(bytes)) return true;
  for (;;) {
    uint32_t d = g_done.load(std::memory_order_acquire);
    if (g_thread.load(std::memory_order_acquire) == kGone) return true;
    if (!trace_sync::wait_patiently(&g_done, d, patience)) return false;
  }
}

bool give_back_thread() noexcept {
  // A fork child has no file thread; start() failing to make one has none to give.
  if (g_thread_pid.load() != getpid() || tl_starting) return false;
  // A thread still making the file (with a table of its own, a few system calls) gets there first.
  trace_sync::Patience first{1}, patience;
  for (int st; (st = g_thread.load(std::memory_order_acquire)) != kServing;) {
    if (st == kGone && g_leave_req.load(std::memory_order_acquire)) break;  // left for another caller
    if (st != kStarting && st != kIdle) return false;
    const uint32_t d = g_done.load(std::memory_order_acquire);
    if (g_thread.load(std::memory_order_acquire) != st) continue;
    // Not serving within 100 ms: waiting for the first record (the process's table), not given back.
    if (!trace_sync::wait_patiently(&g_done, d, &first)) return false;
  }
  g_leave_req.store(true, std::memory_order_release);
  bump(&g_req);
  for (;;) {
    const uint32_t d = g_done.load(std::memory_order_acquire);
    if (g_thread.load(std::memory_order_acquire) == kGone) break;
    if (!trace_sync::wait_patiently(&g_done, d, &patience)) return false;
  }
  // The slot is free once the kernel released the task (after the thread function returned and
  // glibc's exit path ran): tgkill's ESRCH says so.
  const pid_t tid = g_thread_tid.load(std::memory_order_acquire);
  for (int i = 0; tid > 0 && i < 20000 && syscall(SYS_tgkill, getpid(), tid, 0) == 0; ++i) {
    timespec t{0, 50000};
    nanosleep(&t, nullptr);
  }
  return true;
}

const char* error_text() noexcept { return g_error; }
const char* path() noexcept { return g_path; }
bool private_descriptor() noexcept { return g_private; }

void set_command_line(int argc, char** argv) noexcept {
  size_t used = 0;
  for (int i = 0; argv && i < argc && argv[i]; ++i) {
    size_t len = strlen(argv[i]);
    if (i && used + 1 < sizeof g_cmdline) g_cmdline[used++] = ' ';
    size_t n = std::min(len, sizeof g_cmdline - 1 - used);
    memcpy(g_cmdline + used, argv[i], n);
    used += n;
  }
  g_cmdline[used] = 0;
  g_cmdline_set = argv != nullptr;
}

void forget_after_fork() noexcept {
  bool same_process = g_thread_pid.load() == getpid();
  if (same_process) {
    // Not a real fork (unit tests start a fresh trace this way): let the thread release the file.
    trace_file::close(kNoTruncate);
  } else if (!g_private && g_fd >= 0) {
    // The child's inherited copy of the parent's descriptor. The system call, not close(): that is
    // a cancellation point, and this runs inside the application's fork().
    syscall(SYS_close, g_fd);
  }
  g_fd = -1;
  // Every slot, not up to the first empty one: the child must not keep a mapping of the parent's
  // file (a write through it would land there).
  for (uint64_t i = 0; i < kMaxSegments; ++i) {
    char* p = g_segments[i].load(std::memory_order_relaxed);
    if (!p) continue;
    munmap(p, segment_bytes(i));
    g_segments[i].store(nullptr);
  }
  if (FileHeader* h = g_header.exchange(nullptr)) munmap(h, kHeaderSize);
  forget_retired();
  g_thread.store(kNone);
  g_want.store(0);
  g_need.store(0);
  g_mapped.store(0);
  g_close_req.store(false);
  g_req.store(0);
  g_done.store(0);
  g_path[0] = 0;
  g_error[0] = 0;
}

}  // namespace asyncwatch::trace_file
