#include "capture_range.h"

#include <mutex>

#include "call_context.h"
#include "common.h"
#include "trace/trace_writer.h"

namespace asyncwatch::capture {
namespace {

// Why recording is paused, as bits; recording happens when none is set.
enum Why : uint32_t {
  kByApplication = 1u << 0,  // asyncwatch_set_recording(0)
  kOutsideRange = 1u << 1,   // no profiler-API or NVTX range open
  kBeforeDelay = 1u << 2,    // ASYNCWATCH_DELAY not over yet
  kAfterDuration = 1u << 3,  // ASYNCWATCH_DURATION over
};
constexpr uint32_t kOutsideCapture = kOutsideRange | kBeforeDelay | kAfterDuration;

std::atomic<uint32_t> g_why{0};
std::atomic<bool> g_timed{false};         // a delay or a duration is configured
std::atomic<uint64_t> g_delay_end{0};     // CLOCK_MONOTONIC; 0 once crossed
std::atomic<uint64_t> g_duration_end{0};  // set when recording first begins; 0 none
uint64_t g_duration_ns = 0;
bool g_configured = false;
trace::CaptureMode g_mode = trace::CaptureMode::None;
int g_open_ranges = 0;  // profiler-API starts not stopped yet count as one; NVTX ranges nest

std::mutex& lock() {
  static std::mutex* m = new std::mutex;  // leaked: may be used during exit
  return *m;
}

// Applies a change of reasons at `at`, under the lock: the pause bookkeeping, the header's ranges,
// the hot path's bit.
void change(uint32_t set, uint32_t clear, uint64_t at) noexcept {
  const uint32_t was = g_why.load(std::memory_order_relaxed);
  uint32_t now_why = (was | set) & ~clear;
  const bool was_in = !(was & kOutsideCapture), now_in = !(now_why & kOutsideCapture);
  if (!was_in && now_in && g_duration_ns && !g_duration_end.load()) {
    // The duration counts from when recording first began.
    g_duration_end.store(at + g_duration_ns);
    trace_writer::set_recording_deadline(at + g_duration_ns);
  }
  if (was == now_why) return;
  g_why.store(now_why, std::memory_order_release);
  if (g_configured && was_in != now_in) trace_writer::note_capture(now_in, at);
  if ((was != 0) != (now_why != 0)) {
    trace_writer::set_paused_bit(now_why != 0);
    trace_writer::note_pause(now_why != 0, at);
  } else if (now_why) {
    trace_writer::set_paused_bit(true);  // the file thread's deadline hint set it already, or a no-op
  }
}

// The delay's and the duration's boundaries crossed by `now` (under the lock).
void cross_boundaries(uint64_t now) noexcept {
  uint64_t d = g_delay_end.load();
  if (d && now >= d) {
    g_delay_end.store(0);
    change(0, kBeforeDelay, d);
  }
  uint64_t e = g_duration_end.load();
  if (e && now >= e && !(g_why.load() & kAfterDuration)) change(kAfterDuration, 0, e);
}

// The file thread at the duration's deadline: the boundary crossed now when the lock is free (a
// program that makes no call meanwhile still gets its range ended at its time), else by the next
// call (the deadline set kPaused: every call takes the slow path, which crosses it).
void deadline_reached() noexcept {
  if (!lock().try_lock()) return;
  cross_boundaries(now_ns());
  lock().unlock();
}

}  // namespace

void init(const Config& c) noexcept {
  if (c.capture == trace::CaptureMode::None) return;
  g_configured = true;
  g_mode = c.capture;
  g_duration_ns = c.duration_ns;
  trace_writer::set_capture(c.capture, c.delay_ns, c.duration_ns);
  const uint64_t now = now_ns();
  uint32_t why = 0;
  if (c.capture == trace::CaptureMode::ProfilerApi || c.capture == trace::CaptureMode::Nvtx) why |= kOutsideRange;
  if (c.delay_ns) {
    why |= kBeforeDelay;
    g_delay_end.store(now + c.delay_ns);
  }
  g_timed.store(c.delay_ns || c.duration_ns);
  if (c.duration_ns) trace_writer::set_deadline_callback(&deadline_reached);
  std::lock_guard<std::mutex> guard(lock());
  if (why) {
    change(why, 0, now);
  } else {  // a duration alone: recording begins now, and counts as a range
    trace_writer::note_capture(true, now);
    g_duration_end.store(now + g_duration_ns);
    trace_writer::set_recording_deadline(now + g_duration_ns);
  }
}

bool configured() noexcept { return g_configured; }

bool paused_quiet() noexcept { return g_why.load(std::memory_order_relaxed) != 0; }

bool paused() noexcept {
  if (AW_UNLIKELY(g_timed.load(std::memory_order_relaxed))) {
    const uint64_t d = g_delay_end.load(std::memory_order_relaxed), e = g_duration_end.load(std::memory_order_relaxed);
    const uint64_t now = (d || e) ? now_ns() : 0;
    if ((d && now >= d) || (e && now >= e && !(g_why.load(std::memory_order_relaxed) & kAfterDuration))) {
      calls::LibraryScope scope;  // a handler's CUDA call meanwhile must not wait for the lock held here
      std::lock_guard<std::mutex> guard(lock());
      cross_boundaries(now);
    }
  }
  return g_why.load(std::memory_order_relaxed) != 0;
}

int set_recording(bool on) noexcept {
  calls::LibraryScope scope;
  std::lock_guard<std::mutex> guard(lock());
  const uint64_t now = now_ns();
  cross_boundaries(now);
  const bool was_paused = g_why.load() & kByApplication;
  if (on)
    change(0, kByApplication, now);
  else
    change(kByApplication, 0, now);
  return was_paused ? 0 : 1;
}

void profiler_api(bool start) noexcept {
  if (g_mode != trace::CaptureMode::ProfilerApi) return;
  calls::LibraryScope scope;
  std::lock_guard<std::mutex> guard(lock());
  const uint64_t now = now_ns();
  cross_boundaries(now);
  // Start and stop do not nest (as for the driver: a second start is already started).
  g_open_ranges = start ? 1 : 0;
  if (start)
    change(0, kOutsideRange, now);
  else
    change(kOutsideRange, 0, now);
}

void nvtx_range(bool open) noexcept {
  if (g_mode != trace::CaptureMode::Nvtx) return;
  calls::LibraryScope scope;
  std::lock_guard<std::mutex> guard(lock());
  const uint64_t now = now_ns();
  cross_boundaries(now);
  if (open) {
    if (g_open_ranges++ == 0) change(0, kOutsideRange, now);
  } else if (g_open_ranges > 0 && --g_open_ranges == 0) {
    change(kOutsideRange, 0, now);
  }
}

}  // namespace asyncwatch::capture
