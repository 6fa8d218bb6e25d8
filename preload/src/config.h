// Settings read once from ASYNCWATCH_* environment variables (docs/configuration.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "asyncwatch/trace_format.h"

namespace asyncwatch {

enum class StackPolicy : uint8_t { None, Default, All };
enum class EvidencePolicy : uint8_t { Off, Auto, All };

struct Config {
  std::string output_dir = ".";
  std::string output_pattern = "asyncwatch-%n-%p.awtrace";
  StackPolicy stacks = StackPolicy::Default;
  uint64_t launch_stack_threshold_ns = 50'000;
  EvidencePolicy evidence = EvidencePolicy::Auto;
  std::string log_level = "warn";
  bool quiet = false;
  unsigned file_mode = 0600;
  bool disabled = false;
  bool python_frames = true;  // ASYNCWATCH_PYTHON: stacks carry the thread's Python frames
  bool gpu_times = false;     // ASYNCWATCH_GPU_TIMES=1: GpuSpan records (gpu_times/gpu_times.h)
  bool summary = false;       // ASYNCWATCH_SUMMARY=1: repeated calls folded (trace/site_summary.h)
  // ASYNCWATCH_TRACE_LIMIT: the flight recorder's ring, in bytes (trace/flight_ring.h); 0 none. Sets
  // summary too: the whole run's counts are the summaries'.
  uint64_t trace_limit = 0;
  bool tsc_clock = true;  // ASYNCWATCH_CLOCK=monotonic: times from clock_gettime only (tsc_clock.h)
  // ASYNCWATCH_CAPTURE_RANGE, ASYNCWATCH_DELAY, ASYNCWATCH_DURATION (interpose/capture_range.h).
  trace::CaptureMode capture = trace::CaptureMode::None;
  std::string capture_nvtx_name;  // CaptureMode::Nvtx: the range's message
  uint64_t delay_ns = 0;
  uint64_t duration_ns = 0;
};

// Reads the variables through `getenv_fn` (tests pass their own); every invalid value gives one
// warning through `warn` and leaves the default.
using GetEnvFn = const char* (*)(const char*);
using WarnFn = void (*)(const std::string&);
Config parse_config(GetEnvFn getenv_fn, WarnFn warn);

// The process-wide configuration, parsed at load time by lifecycle.cpp.
const Config& config();
// config() without the call and its function-local static guard, for the per-call path.
// Set once, when the configuration object is created (an acquire load: a plain load on x86).
extern std::atomic<const Config*> g_config;
inline const Config& config_fast() {
  const Config* c = g_config.load(std::memory_order_acquire);
  return __builtin_expect(c != nullptr, 1) ? *c : config();
}
void set_config(const Config& c);
// config().disabled, without the function-local static behind config() (the wrappers' hot path).
bool tracing_disabled() noexcept;

// Expands %n (executable base name), %p (pid), %h (host), %t (unix seconds), %% into a file name.
std::string expand_output_pattern(const std::string& pattern, const std::string& exe_name, long pid,
                                  const std::string& host, long unix_seconds);
// The same into `out` (NUL-terminated, at most cap - 1 bytes); false when it did not fit. Allocates
// nothing: the trace's file thread names the file with it.
bool expand_output_pattern_to(char* out, size_t cap, const char* pattern, const char* exe_name, long pid,
                              const char* host, long unix_seconds) noexcept;

uint32_t config_flags(const Config& c);

// ASYNCWATCH_CAPTURE_RANGE's value: "cudaProfilerApi" or "nvtx:NAME" (NAME not empty). False
// for anything else.
bool parse_capture_range(const char* value, trace::CaptureMode* mode, std::string* nvtx_name);

}  // namespace asyncwatch
