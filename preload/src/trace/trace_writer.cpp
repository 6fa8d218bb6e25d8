#include "trace_writer.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "config.h"
#include "log.h"
#include "futex.h"
#include "trace_file.h"

namespace asyncwatch::trace_writer {

GenerationPage g_generation_page;  // .bss: a private anonymous mapping, as WIPEONFORK needs

std::atomic<uint32_t> g_not_recording{kNotActive};

void set_paused_bit(bool paused) noexcept {
  if (paused)
    g_not_recording.fetch_or(kPaused, std::memory_order_acq_rel);
  else
    g_not_recording.fetch_and(~uint32_t{kPaused}, std::memory_order_acq_rel);
}

namespace {

using namespace asyncwatch::trace;

constexpr uint64_t kClosedBit = 1ull << 63;

// kStarting: a thread of the application is starting the file thread (it is in the library's own
// code meanwhile, so a signal handler on it never waits for this). kReady: the file thread runs,
// the file is not created yet. kOpening: the file thread creates it, and ends kOpening itself
// (file_opened): nobody ever waits for an application thread to finish a step.
// kOff: tracing stopped after a failure (the header, if any, stays mapped and counts the calls
// lost from then on), or disabled. kForeign: a child made without fork handlers; nothing of the
// parent's trace may be touched in it.
enum State : uint32_t { kNotOpen = 0, kStarting, kReady, kOpening, kActive, kOff, kClosing, kClosed, kForeign };

std::atomic<uint32_t> g_state{kNotOpen};  // also a futex word (waiting for kStarting/kOpening to end)

// Keeps kNotActive of g_not_recording equal to (g_state != kActive) after every change of g_state
// (re-read until stable: of two racing changes, the later mirror sees the later state).
void mirror_state() noexcept {
  for (;;) {
    uint32_t s = g_state.load(std::memory_order_acquire);
    if (s == kActive)
      g_not_recording.fetch_and(~uint32_t{kNotActive}, std::memory_order_acq_rel);
    else
      g_not_recording.fetch_or(kNotActive, std::memory_order_acq_rel);
    if (g_state.load(std::memory_order_acquire) == s) return;
  }
}
// Next block index; kClosedBit set once closed so that no later claim can extend the file past
// the size it was truncated to.
std::atomic<uint64_t> g_claim{0};
std::atomic<FileHeader*> g_header{nullptr};
std::atomic<uint64_t> g_lost_pending{0};  // counted before the header existed
// The file thread made the file and published its header (file_ready), maybe before it was asked
// for: the state is then still kReady (or kOpening) until a writer takes it. A 32-bit word, not a
// bool: with std::atomic<bool> the TSan job (GCC 12, Debug) reported the file's path, written
// before the release store, as racing with its read after the acquire load that saw the store
// (every run of TraceWriterTest); with this word it reports nothing (12 of 12 runs).
std::atomic<uint32_t> g_file_ready{0};
uint64_t g_parent_pid = 0;
std::atomic<bool> g_warned{false};
OpenedCallback g_opened_cb = nullptr;

// The generation lives alone in a page marked MADV_WIPEONFORK: a child created by fork() gets it
// zeroed (our atfork child handler sets a new one), and so does a child created by a raw
// clone()/clone3() syscall, which runs no fork handlers: there it stays 0, which the write path
// notices (it compares the generation on every record anyway), so such a child never writes into
// the parent's blocks, which its copy of the mapping still shares with the parent.
GenerationPage& g_page = g_generation_page;
uint32_t g_generation_shadow = 0;   // not wiped: the next generation is computed from it
std::atomic<pid_t> g_owner_pid{0};  // the process the generation was set for
bool g_page_wiped_on_fork = false;  // madvise(MADV_WIPEONFORK) succeeded

using trace_sync::futex;
void set_state(uint32_t s) noexcept {
  g_state.store(s, std::memory_order_release);
  mirror_state();
  futex(&g_state, FUTEX_WAKE, INT32_MAX);
}
// The state from `from` to `to` if it is still `from` (set_state's publication and wake-up).
bool move_state(uint32_t from, uint32_t to) noexcept {
  if (!g_state.compare_exchange_strong(from, to)) return false;
  mirror_state();
  futex(&g_state, FUTEX_WAKE, INT32_MAX);
  return true;
}
// Until the state is not `busy`, or until `patience` (if any) runs out.
uint32_t wait_while(uint32_t busy, trace_sync::Patience* patience = nullptr) noexcept {
  uint32_t s;
  while ((s = g_state.load(std::memory_order_acquire)) == busy &&
         trace_sync::wait_patiently(&g_state, busy, patience)) {}
  return s;
}

void warn_once(const char* what) noexcept {
  if (!g_warned.exchange(true)) log::warn("%s; asyncwatch stops recording for this process", what);
}

void add_lost(FileHeader* h, uint64_t n) noexcept {
  if (n) __atomic_fetch_add(&h->records_lost, n, __ATOMIC_RELAXED);
}

// Starts the file thread (NotOpen -> Starting -> Ready), from the thread that won the state.
void start_file_thread() noexcept {
  uint32_t expected = kNotOpen;
  if (!g_state.compare_exchange_strong(expected, kStarting)) return;
  if (trace_file::start(g_parent_pid)) {
    // Not a plain store: the thread may already have given up (kOff), which must stay.
    move_state(kStarting, kReady);
  } else {
    set_state(kOff);
    warn_once(trace_file::error_text());
  }
}

}  // namespace

void init_process() noexcept {
  pid_t self = getpid();
  pid_t expected = 0;
  if (g_owner_pid.compare_exchange_strong(expected, self)) {
    g_page_wiped_on_fork = madvise(&g_page, sizeof g_page, MADV_WIPEONFORK) == 0;
    g_page.generation.store(++g_generation_shadow, std::memory_order_release);
    return;
  }
  while (g_page.generation.load(std::memory_order_acquire) == 0 && g_owner_pid.load() == self) {}
}

// Config flags learnt after the start (kConfigNvtx): ORed into every header opened from now on.
std::atomic<uint32_t> g_late_config_flags{0};

void add_config_flags(uint32_t flags) noexcept {
  g_late_config_flags.fetch_or(flags, std::memory_order_relaxed);
  if (FileHeader* h = g_header.load(std::memory_order_acquire))
    __atomic_fetch_or(&h->config_flags, flags, __ATOMIC_RELAXED);
}

// Pause and capture state kept in memory as well as in the header: it may change before the
// header exists, and file_ready copies it there.
struct CaptureState {
  std::atomic<uint64_t> paused_since{0};  // start of the pause in progress, else 0
  std::atomic<uint64_t> pauses{0};        // pauses begun before the header existed
  uint8_t mode = 0;
  uint64_t delay_ns = 0, duration_ns = 0;
  std::atomic<uint64_t> ranges{0}, first_start{0}, last_start{0}, last_end{0};
};
CaptureState g_capture;
std::atomic<uint64_t> g_deadline{0};

void copy_capture_range(FileHeader* h) noexcept {
  __atomic_store_n(&h->capture_ranges, g_capture.ranges.load(), __ATOMIC_RELAXED);
  __atomic_store_n(&h->capture_first_start_ns, g_capture.first_start.load(), __ATOMIC_RELAXED);
  __atomic_store_n(&h->capture_last_start_ns, g_capture.last_start.load(), __ATOMIC_RELAXED);
  __atomic_store_n(&h->capture_last_end_ns, g_capture.last_end.load(), __ATOMIC_RELAXED);
}

void copy_capture(FileHeader* h) noexcept {
  h->capture_mode = g_capture.mode;
  h->capture_delay_ns = g_capture.delay_ns;
  h->capture_duration_ns = g_capture.duration_ns;
  copy_capture_range(h);
  if (uint64_t since = g_capture.paused_since.load()) {
    // Paused since before the trace began: from its start, as far as the trace is concerned.
    if (since < h->start_monotonic_ns) since = h->start_monotonic_ns;
    __atomic_store_n(&h->pause_count, std::max<uint64_t>(g_capture.pauses.load(), 1), __ATOMIC_RELAXED);
    __atomic_store_n(&h->paused_since_ns, since, __ATOMIC_RELEASE);
  }
}

void file_ready(FileHeader* h) noexcept {
  g_claim.store(0);
  copy_capture(h);
  __atomic_fetch_or(&h->config_flags, g_late_config_flags.load(std::memory_order_relaxed), __ATOMIC_RELAXED);
  g_header.store(h, std::memory_order_release);
  add_lost(h, g_lost_pending.exchange(0));
  // A resumption between the copy and the publication saw no header: the pause it ended ends here.
  if (!g_capture.paused_since.load() && __atomic_load_n(&h->paused_since_ns, __ATOMIC_ACQUIRE)) {
    uint64_t since = __atomic_exchange_n(&h->paused_since_ns, 0, __ATOMIC_ACQ_REL), now = now_ns();
    if (since) __atomic_fetch_add(&h->paused_ns, now > since ? now - since : 0, __ATOMIC_RELAXED);
  }
  g_file_ready.store(1, std::memory_order_release);
}

void file_opened(FileHeader* h) noexcept {
  if (!h) {
    set_state(kOff);
    return;
  }
  if (!g_file_ready.load(std::memory_order_acquire)) file_ready(h);
  // Only the writer's request still waiting: one that waited too long stopped the trace (kOff).
  move_state(kOpening, kActive);
}

const char* executable_path() noexcept {
  FileHeader* h = g_header.load(std::memory_order_acquire);
  if (!h || !h->executable[0] || strnlen(h->executable, sizeof h->executable) >= sizeof h->executable - 1)
    return nullptr;
  return h->executable;
}

bool process_is_ours() noexcept {
  if (AW_LIKELY(g_page.generation.load(std::memory_order_acquire) != 0)) {
    // Without MADV_WIPEONFORK (Linux < 4.14) a raw clone child is only noticed here, by its pid (not
    // marked: a vfork child shares our memory, and must change nothing in it).
    return g_page_wiped_on_fork || getpid() == g_owner_pid.load(std::memory_order_relaxed);
  }
  if (g_owner_pid.load() == 0) {  // the constructor has not run yet
    init_process();
    return true;
  }
  // The page was wiped and no fork handler set a new generation: a raw clone child. Its memory is
  // its own copy, so it can be marked: it never records and never touches the parent's trace.
  g_header.store(nullptr);
  g_state.store(kForeign);
  mirror_state();
  return false;
}

bool ensure_open() noexcept {
  uint32_t s = g_state.load(std::memory_order_acquire);
  if (AW_LIKELY(s == kActive)) return true;
  ErrnoKeeper keep;
  bool opener = false;
  trace_sync::Patience patience;
  for (;;) {
    switch (s) {
      case kActive:
        if (opener) {  // the thread that asked for the file says where it is, and writes the module map
          if (!config().quiet) log::banner("tracing to %s", trace_file::path());
          if (g_opened_cb) g_opened_cb();
        }
        return true;
      case kNotOpen:
        if (!process_is_ours()) return false;
        if (config().disabled) {
          uint32_t expected = kNotOpen;
          g_state.compare_exchange_strong(expected, kOff);
        } else {
          start_file_thread();
        }
        break;
      case kStarting: s = wait_while(kStarting); continue;
      case kReady: {
        uint32_t expected = kReady;
        if (g_file_ready.load(std::memory_order_acquire)) {
          // Made ahead by the file thread: taken without waiting for it (a single change of state,
          // so a signal handler here never waits for this thread).
          if (move_state(kReady, kActive)) opener = true;
        } else if (g_state.compare_exchange_strong(expected, kOpening)) {
          opener = true;
          trace_file::request_open();
        }
        break;
      }
      case kOpening: {
        // Bounded: a file system that stops answering (NFS) must not hang the application.
        if ((s = wait_while(kOpening, &patience)) != kOpening) continue;
        static_assert(trace_sync::kFileWaitNs == 5000000000ull, "the warning says 5 s");
        if (move_state(kOpening, kOff))
          warn_once("the trace file was not ready 5 s after it was asked for (its file system does not answer?)");
        return false;
      }
      default:
        // The file thread can give up before any writer asked for the file (it cannot release
        // its copies of the application's descriptors): then the first writer to see it says why.
        if (opener || (s == kOff && trace_file::error_text()[0])) warn_once(trace_file::error_text());
        return false;
    }
    s = g_state.load(std::memory_order_acquire);
  }
}

bool is_active() noexcept { return g_state.load(std::memory_order_acquire) == kActive; }

bool is_active_or_opening() noexcept {
  uint32_t s = g_state.load(std::memory_order_acquire);
  return s == kActive || s == kStarting || s == kReady || s == kOpening;
}

bool accepts_calls_slow(bool may_start) noexcept {
  switch (g_state.load(std::memory_order_acquire)) {
    case kActive:
    case kStarting:
    case kReady:
    case kOpening: return true;  // the record's write opens the file, after the call
    case kNotOpen:
      if (!process_is_ours() || config().disabled) return false;
      if (!may_start) {  // e.g. a signal handler's call: no thread is started from there
        count_lost(1);
        return false;
      }
      start_file_thread();
      return g_state.load(std::memory_order_acquire) == kReady;
    case kOff:
      // Stopped after an output failure: every call from then on is counted (not when there is no
      // header, i.e. the trace could not be created, and not when disabled).
      if (!config().disabled && g_header.load(std::memory_order_acquire)) {
        count_lost(1);
      } else if (trace_file::error_text()[0]) {  // the file thread gave up before any call was recorded
        ErrnoKeeper keep;
        warn_once(trace_file::error_text());
      }
      return false;
    default: return false;
  }
}

bool lost_calls_counted() noexcept {
  uint32_t s = g_state.load(std::memory_order_acquire);
  if (s == kOff) return !config().disabled && g_header.load(std::memory_order_acquire);
  return s <= kActive && !config().disabled;  // counted now, or once the header exists
}

char* claim_block(uint64_t* index_out) noexcept {
  if (!is_active() || !process_is_ours()) return nullptr;
  uint64_t idx = g_claim.load(std::memory_order_relaxed);
  do {
    if (idx & kClosedBit) return nullptr;
  } while (!g_claim.compare_exchange_weak(idx, idx + 1, std::memory_order_acq_rel));
  uint64_t seg = trace_file::segment_of_block(idx);
  char* base = trace_file::segment(seg);
  if (!base) {
    // Tracing stops for good; the file stays readable up to here. Only an active trace becomes
    // "stopped": a claim that raced with a clean close must leave it closed (else every later
    // call would count as lost).
    uint32_t active = kActive;
    if (g_state.compare_exchange_strong(active, kOff)) {
      mirror_state();
      ErrnoKeeper keep;
      warn_once(trace_file::error_text());
    }
    return nullptr;
  }
  // A quarter into a segment (1 MiB of trace), half into the small first one (128 KiB: a short
  // single-threaded run never gets there), have the next one prepared by the file thread, so that
  // no application call waits for it.
  const uint64_t in_seg = idx - trace_file::segment_first_block(seg);
  if (in_seg == trace_file::segment_blocks(seg) / (seg == 0 ? 2 : 4)) trace_file::map_ahead(seg + 2);
  // Mirror the count into the mapping so a crashed process's header tells how far to read.
  FileHeader* h = g_header.load(std::memory_order_acquire);
  uint64_t cur = __atomic_load_n(&h->blocks_claimed, __ATOMIC_RELAXED);
  while (cur < idx + 1 &&
         !__atomic_compare_exchange_n(&h->blocks_claimed, &cur, idx + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  *index_out = idx;
  return base + in_seg * kBlockSize;
}

namespace {
// An offered block: (trace generation << 34) | (used / 8) << 21 | (index + 1); 0: none. The
// generation tells a block of this trace from one of a trace before (a fork child's copy of the
// parent's, or a trace reopened).
std::atomic<uint64_t> g_offered[kReusableBlocks];
constexpr uint64_t kIndexBits = 21, kUsedBits = 13;
static_assert(uint64_t{1} << kIndexBits > trace_file::segment_first_block(trace_file::kMaxSegments) &&
              (uint64_t{1} << kUsedBits) * 8 >= kBlockSize);
inline uint64_t offered_generation(uint64_t v) noexcept { return v >> (kIndexBits + kUsedBits); }
inline uint64_t this_generation() noexcept {
  return static_cast<uint64_t>(generation()) & ((uint64_t{1} << (64 - kIndexBits - kUsedBits)) - 1);
}
}  // namespace

bool offer_block(uint64_t index, uint32_t used) noexcept {
  if (!is_active() || !process_is_ours() || used >= kBlockSize || used % 8) return false;
  const uint64_t gen = this_generation();
  const uint64_t v = gen << (kIndexBits + kUsedBits) | static_cast<uint64_t>(used / 8) << kIndexBits | (index + 1);
  for (auto& slot : g_offered) {
    uint64_t cur = slot.load(std::memory_order_relaxed);
    // A free slot, or one holding a block of an earlier trace (never to be handed out).
    if ((cur == 0 || offered_generation(cur) != gen) && slot.compare_exchange_strong(cur, v, std::memory_order_acq_rel))
      return true;
  }
  return false;
}

char* claim_offered_block(uint64_t* index_out, uint32_t* used_out) noexcept {
  if (!is_active() || !process_is_ours() || (g_claim.load(std::memory_order_acquire) & kClosedBit)) return nullptr;
  const uint64_t gen = this_generation();
  for (auto& slot : g_offered) {
    if (slot.load(std::memory_order_relaxed) == 0) continue;
    const uint64_t v = slot.exchange(0, std::memory_order_acq_rel);  // the block is this thread's now
    if (v == 0 || offered_generation(v) != gen) continue;
    const uint64_t index = (v & ((uint64_t{1} << kIndexBits) - 1)) - 1;
    // Its segment is mapped: no block of it was retired (an offered block is not), so it was not unmapped.
    char* base = trace_file::mapped_segment(trace_file::segment_of_block(index));
    if (!base) continue;
    *index_out = index;
    *used_out = static_cast<uint32_t>((v >> kIndexBits) & ((uint64_t{1} << kUsedBits) - 1)) * 8;
    return base + (index - trace_file::segment_first_block(trace_file::segment_of_block(index))) * kBlockSize;
  }
  return nullptr;
}

FileHeader* header() noexcept { return g_header.load(std::memory_order_acquire); }

void retire_block(uint64_t index) noexcept {
  if (process_is_ours()) trace_file::retire_block(index);
}

void count_lost(uint64_t n) noexcept {
  if (g_page.generation.load(std::memory_order_relaxed) == 0 && g_owner_pid.load() != 0) return;  // not ours
  if (FileHeader* h = g_header.load(std::memory_order_acquire)) {
    add_lost(h, n);
    return;
  }
  // Before the header exists (a call made by a signal handler while the trace was being opened):
  // kept here and added by whoever sees the header first.
  g_lost_pending.fetch_add(n);
  if (FileHeader* h = g_header.load(std::memory_order_acquire)) add_lost(h, g_lost_pending.exchange(0));
}

void note_pause(bool paused, uint64_t now) noexcept {
  if (paused) {
    g_capture.paused_since.store(now);
    g_capture.pauses.fetch_add(1);
  } else {
    g_capture.paused_since.store(0);
  }
  FileHeader* h = g_header.load(std::memory_order_acquire);
  uint32_t s = g_state.load();
  if (!h || s == kClosing || s == kClosed || s == kForeign) return;
  if (paused) {
    __atomic_fetch_add(&h->pause_count, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h->paused_since_ns, now, __ATOMIC_RELEASE);
    return;
  }
  uint64_t since = __atomic_load_n(&h->paused_since_ns, __ATOMIC_ACQUIRE);
  if (!since) return;
  __atomic_fetch_add(&h->paused_ns, now > since ? now - since : 0, __ATOMIC_RELAXED);
  __atomic_store_n(&h->paused_since_ns, 0, __ATOMIC_RELEASE);
}

void set_capture(CaptureMode mode, uint64_t delay_ns, uint64_t duration_ns) noexcept {
  g_capture.mode = static_cast<uint8_t>(mode);
  g_capture.delay_ns = delay_ns;
  g_capture.duration_ns = duration_ns;
}

void note_capture(bool open, uint64_t at) noexcept {
  if (open) {
    g_capture.ranges.fetch_add(1);
    uint64_t none = 0;
    g_capture.first_start.compare_exchange_strong(none, at);
    g_capture.last_start.store(at);
  } else {
    g_capture.last_end.store(at);
  }
  FileHeader* h = g_header.load(std::memory_order_acquire);
  uint32_t s = g_state.load();
  if (!h || s == kClosing || s == kClosed || s == kForeign) return;
  copy_capture_range(h);
}

bool not_open_yet() noexcept {
  uint32_t s = g_state.load(std::memory_order_acquire);
  return s == kNotOpen || s == kReady;
}

void set_recording_deadline(uint64_t ns) noexcept {
  g_deadline.store(ns, std::memory_order_release);
  trace_file::wake();
}
uint64_t recording_deadline() noexcept { return g_deadline.load(std::memory_order_acquire); }
std::atomic<DeadlineCallback> g_deadline_cb{nullptr};
void set_deadline_callback(DeadlineCallback cb) noexcept { g_deadline_cb.store(cb); }
void deadline_passed() noexcept {
  if (!g_deadline.exchange(0)) return;
  g_not_recording.fetch_or(kPaused, std::memory_order_acq_rel);  // the next call takes the slow path
  if (DeadlineCallback cb = g_deadline_cb.load()) cb();
}

void close_clean(int exit_status) noexcept {
  ErrnoKeeper keep;
  // Waits only for the file thread (kOpening ends in file_opened), never for an application thread:
  // this may be a signal handler that interrupted the thread asking for the file. Never longer
  // than trace_sync::kFileWaitNs in all (one Patience): a file system that stops answering must not hang the exit.
  trace_sync::Patience patience;
  uint32_t s = wait_while(kOpening, &patience);
  FileHeader* h = g_header.load(std::memory_order_acquire);
  if (!h && s == kReady && trace_file::settle_unnamed(&patience)) h = g_header.load(std::memory_order_acquire);
  if (s == kOpening || (!h && s == kReady && patience.slices_left == 0))
    log::warn(
        "the trace file was not ready %llu s after the process began to end (its file system does not answer?): no "
        "trace",
        static_cast<unsigned long long>(trace_sync::kFileWaitNs / 1000000000ull));
  // kReady with a header: the file was made ahead and the process ends before its first record
  // (during its first call): closed with no blocks, its exit status kept.
  if (!h || (s != kActive && s != kOff && s != kReady)) return;
  // A vfork()ed child calling _exit shares our memory: closing would close the parent's trace.
  if (h->pid != static_cast<uint64_t>(getpid()) || !process_is_ours()) return;
  if (!g_state.compare_exchange_strong(s, kClosing)) {
    // Another thread (or a signal handler that interrupted this one) is closing: wait for it.
    while ((s = g_state.load(std::memory_order_acquire)) == kClosing) futex(&g_state, FUTEX_WAIT, kClosing);
    return;
  }
  mirror_state();
  uint64_t claimed = g_claim.fetch_or(kClosedBit) & ~kClosedBit;
  // Every claim counted before the close is covered while the trace is active: such a claim may
  // still be waiting for its segment, which the file thread can map after this line (then the
  // claimer writes into it: a truncation below it would lose its records and fault on the
  // write). A block never written reads as unused (its magic is stored last). After tracing
  // stopped on a failure (kOff) nothing past the mapped segments exists or will.
  uint64_t used = s == kActive ? std::min(claimed, trace_file::segment_first_block(trace_file::kMaxSegments))
                               : std::min(claimed, trace_file::mapped_blocks());
  // Atomic: a thread whose claim was counted before the close may still be in claim_block's
  // compare-and-swap on this field (it never raises it past `used`).
  __atomic_store_n(&h->blocks_claimed, used, __ATOMIC_RELAXED);
  h->end_monotonic_ns = now_ns();
  h->exit_status = exit_status;
  // Atomic like note_pause's stores: the file thread may end a capture range (its deadline) now.
  if (uint64_t since = __atomic_load_n(&h->paused_since_ns, __ATOMIC_ACQUIRE)) {  // closed while paused
    __atomic_fetch_add(&h->paused_ns, h->end_monotonic_ns > since ? h->end_monotonic_ns - since : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&h->paused_since_ns, 0, __ATOMIC_RELEASE);
  }
  // Threads still running keep writing into their claimed blocks, all below `used`; nothing
  // can be claimed past it any more, so the truncation cannot SIGBUS anyone.
  const uint64_t bytes = kHeaderSize + used * kBlockSize;
  if (!trace_file::close_at_exit(bytes) && !trace_file::close(bytes, &patience))
    log::warn(
        "the trace file was not released %llu s after the process began to end (its file system does not answer?): %s "
        "is left as is",
        static_cast<unsigned long long>(trace_sync::kFileWaitNs / 1000000000ull), trace_file::path());
  __atomic_store_n(&h->closed, kClosedCleanly, __ATOMIC_RELEASE);
  set_state(kClosed);
}

// Not in a vfork()ed child: it shares our memory, and its exec says nothing about this process.
void prepare_exec() noexcept {
  FileHeader* h = g_header.load(std::memory_order_acquire);
  if (!h || g_state.load() != kActive || h->pid != static_cast<uint64_t>(getpid())) return;
  h->end_monotonic_ns = now_ns();
  __atomic_store_n(&h->closed, kClosedCleanly, __ATOMIC_RELEASE);
}

void exec_failed() noexcept {
  FileHeader* h = g_header.load(std::memory_order_acquire);
  if (!h || g_state.load() != kActive || h->pid != static_cast<uint64_t>(getpid())) return;
  h->end_monotonic_ns = 0;
  __atomic_store_n(&h->closed, 0u, __ATOMIC_RELEASE);
}

void after_fork_child(uint64_t parent_pid) noexcept {
  // Only this thread exists now. The parent's mapping must go: a write through it would land
  // in the parent's file.
  trace_file::forget_after_fork();
  g_header.store(nullptr);
  g_claim.store(0);
  g_file_ready.store(0);
  g_lost_pending.store(0);
  g_parent_pid = parent_pid;
  g_warned.store(false);
  // The child's trace tells of its own ranges and pauses: one open (or a pause in progress) now.
  const uint64_t now = now_ns();
  const bool range_open = g_capture.ranges.load() && g_capture.last_end.load() < g_capture.last_start.load();
  g_capture.ranges.store(range_open ? 1 : 0);
  g_capture.first_start.store(range_open ? now : 0);
  g_capture.last_start.store(range_open ? now : 0);
  g_capture.last_end.store(0);
  const bool paused = g_capture.paused_since.load() != 0;
  g_capture.pauses.store(paused ? 1 : 0);
  g_capture.paused_since.store(paused ? now : 0);
  uint32_t s = g_state.load();
  // A failed or disabled trace stays off in the child; a child of a foreign process is foreign.
  // Anything else starts anew (the file thread does not exist in the child).
  g_state.store(s == kOff || s == kForeign ? s : kNotOpen);
  if (config().disabled) g_state.store(kOff);
  mirror_state();
  g_owner_pid.store(getpid());
  g_page.generation.store(++g_generation_shadow, std::memory_order_release);
}

void disable() noexcept {
  g_state.store(kOff);
  mirror_state();
  g_not_recording.fetch_or(kDisabled, std::memory_order_acq_rel);
}

std::string path() { return trace_file::path(); }

void set_opened_callback(OpenedCallback cb) noexcept { g_opened_cb = cb; }

}  // namespace asyncwatch::trace_writer
