#include "trace_writer.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "config.h"
#include "log.h"

namespace asyncwatch::trace_writer {
namespace {

using namespace asyncwatch::trace;

// The file grows by segments of this size (posix_fallocate + one mmap each), so a block claim
// needs the mutex only once per kBlocksPerSegment blocks.
constexpr uint64_t kSegmentBytes = 4ull << 20;
constexpr uint64_t kBlocksPerSegment = kSegmentBytes / kBlockSize;
constexpr uint64_t kMaxSegments = 16384;  // 64 GiB of trace
constexpr uint64_t kClosedBit = 1ull << 63;

enum State : int { kNotOpen = 0, kActive = 1, kOff = 2, kClosed = 3 };

std::atomic<int> g_state{kNotOpen};
std::atomic<uint32_t> g_generation{1};
// Next block index; kClosedBit set once closed so that no later claim can extend the file past
// the size it was truncated to.
std::atomic<uint64_t> g_claim{0};
std::atomic<uint64_t> g_allocated_blocks{0};
std::atomic<char*> g_segments[kMaxSegments];
FileHeader* g_header = nullptr;
int g_fd = -1;
uint64_t g_parent_pid = 0;
std::string* g_path = nullptr;  // leaked on purpose: used from exit paths
std::atomic<bool> g_warned{false};
OpenedCallback g_opened_cb = nullptr;

// Leaked on purpose (used during exit); re-initialized in a forked child in case another thread
// held it at fork time. A function, not a global object: wrappers may run before static init.
std::mutex& writer_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

void warn_once(const std::string& msg) {
  if (!g_warned.exchange(true)) log::warn(msg + "; asyncwatch stops recording for this process");
}

std::string read_small_file(const char* p) {
  std::string out;
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && out.size() < 65536) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(cap - 1, s.size());
  memcpy(dst, s.data(), n);
  dst[n] = 0;
}

std::string exe_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

// Inserts ".N" before the extension: asyncwatch-app-12.awtrace -> asyncwatch-app-12.1.awtrace.
std::string with_suffix(const std::string& name, int n) {
  auto dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return name + "." + std::to_string(n);
  return name.substr(0, dot) + "." + std::to_string(n) + name.substr(dot);
}

bool fits_rlimit(uint64_t new_size) {
  rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return true;
  return new_size <= rl.rlim_cur;  // exceeding it would raise SIGXFSZ in the application
}

void fill_header(FileHeader* h) {
  memcpy(h->magic, kMagic, sizeof kMagic);
  h->version = kFormatVersion;
  h->header_size = kHeaderSize;
  h->block_size = kBlockSize;
  h->closed = 0;
  h->pid = static_cast<uint64_t>(getpid());
  h->ppid = static_cast<uint64_t>(getppid());
  h->parent_pid_if_forked = g_parent_pid;
  timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  h->start_monotonic_ns = static_cast<uint64_t>(mono.tv_sec) * 1000000000ull + static_cast<uint64_t>(mono.tv_nsec);
  h->start_realtime_ns = static_cast<uint64_t>(real.tv_sec) * 1000000000ull + static_cast<uint64_t>(real.tv_nsec);
  h->exit_status = -1;
  const Config& c = config();
  h->config_flags = config_flags(c);
  h->launch_stack_threshold_ns = c.launch_stack_threshold_ns;
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  copy_str(h->hostname, sizeof h->hostname, host);
  copy_str(h->executable, sizeof h->executable, exe_path());
  std::string cmd = read_small_file("/proc/self/cmdline");
  while (!cmd.empty() && cmd.back() == 0) cmd.pop_back();
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  copy_str(h->command_line, sizeof h->command_line, cmd);
  std::string env;
  for (const char* name : {"CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS"}) {
    if (const char* v = getenv(name)) env += std::string(name) + "=" + v + ";";
  }
  copy_str(h->cuda_env, sizeof h->cuda_env, env);
}

// Called with g_mutex held.
bool open_locked() {
  const Config& c = config();
  std::string exe = exe_path();
  std::string base = exe.substr(exe.rfind('/') + 1);
  if (base.empty()) base = "unknown";
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  std::string name = expand_output_pattern(c.output_pattern, base, static_cast<long>(getpid()), host,
                                           static_cast<long>(time(nullptr)));
  std::string dir = c.output_dir.empty() ? "." : c.output_dir;
  int fd = -1;
  std::string full;
  for (int attempt = 0; attempt < 100; ++attempt) {
    full = dir + "/" + (attempt ? with_suffix(name, attempt) : name);
    // O_EXCL: never reuse (or follow, even a dangling symlink) an existing path; O_NOFOLLOW for
    // kernels that would otherwise follow a symlink in the last component.
    fd = open(full.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, c.file_mode);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) {
    warn_once("cannot create trace file " + full + ": " + strerror(errno));
    return false;
  }
  // The mode must not depend on the application's umask.
  fchmod(fd, c.file_mode);
  if (!fits_rlimit(kHeaderSize) || posix_fallocate(fd, 0, kHeaderSize) != 0) {
    warn_once("cannot allocate trace file " + full);
    close(fd);
    unlink(full.c_str());
    return false;
  }
  void* hdr = mmap(nullptr, kHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (hdr == MAP_FAILED) {
    warn_once("cannot map trace file " + full + ": " + strerror(errno));
    close(fd);
    unlink(full.c_str());
    return false;
  }
  g_header = static_cast<FileHeader*>(hdr);
  fill_header(g_header);
  g_fd = fd;
  if (!g_path) g_path = new std::string;
  *g_path = full;
  g_claim.store(0);
  g_allocated_blocks.store(0);
  if (!c.quiet) log::banner("tracing to " + full);
  return true;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Grows the file by segment `seg` and maps it. `quiet`: a failure is not reported (the mapping
// thread works ahead; the writer that really needs the segment retries and reports). `populate`:
// fault the whole segment in writable now (see below); the mapping thread does it after the
// segment is published, outside the lock.
bool map_segment(uint64_t seg, bool quiet, bool populate) {
  if (seg >= kMaxSegments) return false;
  if (g_segments[seg].load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(writer_mutex());
  if (g_segments[seg].load(std::memory_order_acquire)) return true;
  if (g_state.load() != kActive) return false;
  off_t off = static_cast<off_t>(kHeaderSize + seg * kSegmentBytes);
  // posix_fallocate, not ftruncate: a sparse file on a full disk would SIGBUS the application
  // on its first store into a hole.
  if (!fits_rlimit(static_cast<uint64_t>(off) + kSegmentBytes)) {
    if (!quiet) warn_once("trace file would exceed RLIMIT_FSIZE");
    return false;
  }
  int rc = posix_fallocate(g_fd, off, static_cast<off_t>(kSegmentBytes));
  if (rc != 0) {
    if (!quiet) warn_once(std::string("cannot grow trace file: ") + strerror(rc));
    return false;
  }
  void* p = mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, g_fd, off);
  if (p == MAP_FAILED) {
    if (!quiet) warn_once(std::string("cannot map trace segment: ") + strerror(errno));
    return false;
  }
  // Fault the whole segment in writable in one call instead of one page fault (and ext4
  // page_mkwrite) per 4 KiB inside the application's calls. Linux >= 5.14; older kernels answer
  // EINVAL and the pages fault in on first use. Done here only when no mapping thread prepared
  // the segment ahead of time: the cost (~2.5-3 us per 4 KiB page on the build VM, i.e. ~50 ns
  // per 80-byte record) then lands in the call that crosses into the segment.
  if (populate) madvise(p, kSegmentBytes, MADV_POPULATE_WRITE);
  g_segments[seg].store(static_cast<char*>(p), std::memory_order_release);
  uint64_t blocks = (seg + 1) * kBlocksPerSegment;
  uint64_t cur = g_allocated_blocks.load();
  while (cur < blocks && !g_allocated_blocks.compare_exchange_weak(cur, blocks)) {
  }
  return true;
}

// ---- the mapping thread -------------------------------------------------------------------
// Growing, mapping and populating a segment costs milliseconds (1024 page faults' worth); done
// inline, that lands in whichever application call crosses into the segment. Once a process has
// written a quarter of its first segment (1 MiB of trace: short runs never get here), one
// background thread prepares each next segment while the current one fills, so writers find it
// mapped and faulted in. Writers ask for it when a claim passes that quarter of a segment (once
// per 64 blocks); the thread sleeps on a futex in between. It runs no application code, has
// every signal blocked, and gives up for good on its first failure (writers then map inline, as
// without it). A forked child starts its own for its own trace.
constexpr uint64_t kRequestAtBlock = kBlocksPerSegment / 4;
enum MapperState : int { kMapperNone = 0, kMapperRunning = 1, kMapperGaveUp = 2 };
std::atomic<uint32_t> g_map_request{0};  // the thread should map segments below this index
std::atomic<int> g_mapper{kMapperNone};

long futex_call(std::atomic<uint32_t>* addr, int op, uint32_t val) noexcept {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op | FUTEX_PRIVATE_FLAG, val, nullptr, nullptr, 0);
}

void* mapper_main(void* arg) {
  const uint32_t gen = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  uint64_t next = 0;  // first segment this thread has not seen mapped
  for (;;) {
    uint32_t want = g_map_request.load(std::memory_order_acquire);
    if (g_state.load(std::memory_order_acquire) != kActive || g_generation.load() != gen) break;
    bool failed = false;
    for (; next < want && !failed; ++next) {
      if (g_segments[next].load(std::memory_order_acquire)) continue;
      failed = !map_segment(next, /*quiet=*/true, /*populate=*/false);
      if (!failed) madvise(g_segments[next].load(), kSegmentBytes, MADV_POPULATE_WRITE);
    }
    if (failed) break;
    futex_call(&g_map_request, FUTEX_WAIT, want);  // returns at once if the request moved on
  }
  if (g_generation.load() == gen) g_mapper.store(kMapperGaveUp);
  return nullptr;
}

// Started by the first request, from a writer's claim_block.
bool start_mapper() noexcept {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread inherits the mask: no signal of the app's lands in it
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 << 10);
  pthread_t t;
  bool ok = pthread_create(&t, &attr, &mapper_main, reinterpret_cast<void*>(static_cast<uintptr_t>(g_generation.load()))) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (ok) pthread_setname_np(t, "asyncwatch-map");
  return ok;
}

// A writer claimed block `idx` of segment `seg`: a quarter into a segment, have the next one prepared.
void request_ahead(uint64_t idx, uint64_t seg) noexcept {
  if (idx % kBlocksPerSegment != kRequestAtBlock || seg + 1 >= kMaxSegments) return;
  int st = g_mapper.load(std::memory_order_relaxed);
  if (st == kMapperGaveUp) return;
  uint32_t want = static_cast<uint32_t>(seg + 2);
  uint32_t cur = g_map_request.load(std::memory_order_relaxed);
  while (cur < want && !g_map_request.compare_exchange_weak(cur, want)) {
  }
  if (st == kMapperNone) {
    int expected = kMapperNone;
    if (g_mapper.compare_exchange_strong(expected, kMapperRunning) && !start_mapper()) {
      g_mapper.store(kMapperGaveUp);  // e.g. a sandbox without clone: writers map inline
    }
    return;
  }
  futex_call(&g_map_request, FUTEX_WAKE, 1);
}

}  // namespace

bool ensure_open() noexcept {
  int s = g_state.load(std::memory_order_acquire);
  if (AW_LIKELY(s == kActive)) return true;
  if (s != kNotOpen) return false;
  ErrnoKeeper keep;
  bool opened = false;
  try {
    std::lock_guard<std::mutex> lock(writer_mutex());
    if (g_state.load() == kNotOpen) {
      if (config().disabled) {
        g_state.store(kOff);
      } else if (open_locked()) {
        g_state.store(kActive, std::memory_order_release);
        opened = true;
      } else {
        g_state.store(kOff);
      }
    }
  } catch (...) {
    g_state.store(kOff);
  }
  if (opened && g_opened_cb) g_opened_cb();
  return g_state.load(std::memory_order_acquire) == kActive;
}

bool is_active() noexcept { return g_state.load(std::memory_order_acquire) == kActive; }

char* claim_block(uint64_t* index_out) noexcept {
  if (!is_active()) return nullptr;
  uint64_t idx = g_claim.load(std::memory_order_relaxed);
  do {
    if (idx & kClosedBit) return nullptr;
  } while (!g_claim.compare_exchange_weak(idx, idx + 1, std::memory_order_acq_rel));
  uint64_t seg = idx / kBlocksPerSegment;
  bool ok;
  try {
    ok = map_segment(seg, /*quiet=*/false, /*populate=*/true);
  } catch (...) {
    ok = false;
  }
  if (ok) request_ahead(idx, seg);
  if (!ok) {
    // Tracing stops for good; the file stays readable up to here. Only an active trace becomes
    // "stopped": a claim that raced with a clean close must leave it closed (else every later
    // call would count as lost).
    int active = kActive;
    g_state.compare_exchange_strong(active, kOff);
    return nullptr;
  }
  // Mirror the count into the mapping so a crashed process's header tells how far to read.
  uint64_t cur = __atomic_load_n(&g_header->blocks_claimed, __ATOMIC_RELAXED);
  while (cur < idx + 1 &&
         !__atomic_compare_exchange_n(&g_header->blocks_claimed, &cur, idx + 1, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  *index_out = idx;
  return g_segments[seg].load(std::memory_order_acquire) + (idx % kBlocksPerSegment) * kBlockSize;
}

void count_lost(uint64_t n) noexcept {
  if (g_header) __atomic_fetch_add(&g_header->records_lost, n, __ATOMIC_RELAXED);
}

void count_lost_if_stopped() noexcept {
  // Only after an output failure stopped an open trace (its header stays mapped); not before the
  // trace was opened, not when it could not be opened (no header), not after a clean close.
  if (g_state.load(std::memory_order_acquire) == kOff && g_header && !config().disabled) count_lost(1);
}

uint32_t generation() noexcept { return g_generation.load(std::memory_order_acquire); }

void note_pause(bool paused, uint64_t now) noexcept {
  std::lock_guard<std::mutex> lock(writer_mutex());
  int s = g_state.load();
  if (!g_header || (s != kActive && s != kOff)) return;
  if (paused) {
    __atomic_fetch_add(&g_header->pause_count, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&g_header->paused_since_ns, now, __ATOMIC_RELEASE);
    return;
  }
  uint64_t since = __atomic_load_n(&g_header->paused_since_ns, __ATOMIC_ACQUIRE);
  if (!since) return;
  __atomic_fetch_add(&g_header->paused_ns, now > since ? now - since : 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_header->paused_since_ns, 0, __ATOMIC_RELEASE);
}

void close_clean(int exit_status) noexcept {
  ErrnoKeeper keep;
  std::lock_guard<std::mutex> lock(writer_mutex());
  int s = g_state.load();
  if (!g_header || (s != kActive && s != kOff)) return;
  // A vfork()ed child calling _exit shares our memory: closing would close the parent's trace.
  if (g_header->pid != static_cast<uint64_t>(getpid())) return;
  uint64_t claimed = g_claim.fetch_or(kClosedBit) & ~kClosedBit;
  uint64_t used = std::min(claimed, g_allocated_blocks.load());
  g_state.store(kClosed);
  // Atomic: a thread whose claim was counted before the close may still be in claim_block's
  // compare-and-swap on this field (it never raises it past `used`).
  __atomic_store_n(&g_header->blocks_claimed, used, __ATOMIC_RELAXED);
  g_header->end_monotonic_ns = now_ns();
  g_header->exit_status = exit_status;
  if (uint64_t since = g_header->paused_since_ns) {  // closed while paused: the pause ends here
    g_header->paused_ns += g_header->end_monotonic_ns > since ? g_header->end_monotonic_ns - since : 0;
    g_header->paused_since_ns = 0;
  }
  // Threads still running keep writing into their claimed blocks, all below `used`; nothing
  // can be claimed past it any more, so the truncation cannot SIGBUS anyone.
  if (ftruncate(g_fd, static_cast<off_t>(kHeaderSize + used * kBlockSize)) != 0) {
    // keep the zero tail; the reader stops at blocks without kBlockMagic
  }
  __atomic_store_n(&g_header->closed, kClosedCleanly, __ATOMIC_RELEASE);
}

// Not in a vfork()ed child: it shares our memory, and its exec says nothing about this process.
void prepare_exec() noexcept {
  if (!g_header || g_state.load() != kActive || g_header->pid != static_cast<uint64_t>(getpid())) return;
  g_header->end_monotonic_ns = now_ns();
  __atomic_store_n(&g_header->closed, kClosedCleanly, __ATOMIC_RELEASE);
}

void exec_failed() noexcept {
  if (!g_header || g_state.load() != kActive || g_header->pid != static_cast<uint64_t>(getpid())) return;
  g_header->end_monotonic_ns = 0;
  __atomic_store_n(&g_header->closed, 0u, __ATOMIC_RELEASE);
}

void after_fork_child(uint64_t parent_pid) noexcept {
  // Only this thread exists now. The parent's mapping must go: a write through it would land
  // in the parent's file.
  new (&writer_mutex()) std::mutex;
  // Every slot, not up to the first empty one: segments are mapped by whichever thread needs
  // one first (or by the mapping thread), so a later segment can be mapped behind a gap.
  for (uint64_t i = 0; i < kMaxSegments; ++i) {
    char* p = g_segments[i].load(std::memory_order_relaxed);
    if (!p) continue;
    munmap(p, kSegmentBytes);
    g_segments[i].store(nullptr);
  }
  if (g_header) munmap(g_header, kHeaderSize);
  g_header = nullptr;
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  g_claim.store(0);
  g_allocated_blocks.store(0);
  g_map_request.store(0);
  g_mapper.store(kMapperNone);  // threads do not survive fork; the child starts its own when needed
  g_parent_pid = parent_pid;
  g_warned.store(false);
  int s = g_state.load();
  g_state.store(s == kActive || s == kClosed || s == kNotOpen ? kNotOpen : s);
  if (config().disabled) g_state.store(kOff);
  g_generation.fetch_add(1);
}

void disable() noexcept { g_state.store(kOff); }

std::string path() { return g_path ? *g_path : std::string(); }

void set_opened_callback(OpenedCallback cb) noexcept { g_opened_cb = cb; }

}  // namespace asyncwatch::trace_writer
