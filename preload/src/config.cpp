#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "asyncwatch/trace_format.h"

namespace asyncwatch {

std::atomic<const Config*> g_config{nullptr};  // constant-initialized: valid before any static constructor

namespace {

// Constructed on first use: the library constructor (lifecycle.cpp) and early wrappers may run
// before this file's static initializers.
Config& storage() {
  static Config* c = [] {
    auto* p = new Config;
    g_config.store(p, std::memory_order_release);
    return p;
  }();
  return *c;
}

bool parse_u64(const char* s, uint64_t* out, int base) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || *end || s[0] == '-') return false;
  *out = v;
  return true;
}

// Seconds as a user writes them ("30", "2.5"): a non-negative decimal below 10^7 s.
bool parse_seconds(const char* s, uint64_t* ns) {
  if (!s || !*s || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
  char* end = nullptr;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= 0) || v >= 1e7) return false;
  *ns = static_cast<uint64_t>(v * 1e9);
  return true;
}

}  // namespace

bool parse_capture_range(const char* v, trace::CaptureMode* mode, std::string* nvtx_name) {
  if (!strcmp(v, "cudaProfilerApi")) {
    *mode = trace::CaptureMode::ProfilerApi;
    return true;
  }
  if (!strncmp(v, "nvtx:", 5) && v[5]) {
    *mode = trace::CaptureMode::Nvtx;
    *nvtx_name = v + 5;
    return true;
  }
  return false;
}

Config parse_config(GetEnvFn getenv_fn, WarnFn warn) {
  Config c;
  auto bad = [&](const char* name, const char* value, const char* expected) {
    warn(std::string("invalid ") + name + "='" + value + "' (expected " + expected + "); using the default");
  };
  if (const char* v = getenv_fn("ASYNCWATCH_OUTPUT_DIR"); v && *v) c.output_dir = v;
  if (const char* v = getenv_fn("ASYNCWATCH_OUTPUT_PATTERN"); v) {
    if (*v && !strchr(v, '/'))
      c.output_pattern = v;
    else
      bad("ASYNCWATCH_OUTPUT_PATTERN", v, "a non-empty file name without '/'");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_STACKS"); v) {
    if (!strcmp(v, "none"))
      c.stacks = StackPolicy::None;
    else if (!strcmp(v, "default"))
      c.stacks = StackPolicy::Default;
    else if (!strcmp(v, "all"))
      c.stacks = StackPolicy::All;
    else
      bad("ASYNCWATCH_STACKS", v, "none, default or all");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US"); v) {
    uint64_t us;
    if (parse_u64(v, &us, 10) && us < (1ull << 40))
      c.launch_stack_threshold_ns = us * 1000;
    else
      bad("ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US", v, "a non-negative integer");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_EVIDENCE"); v) {
    if (!strcmp(v, "off"))
      c.evidence = EvidencePolicy::Off;
    else if (!strcmp(v, "auto"))
      c.evidence = EvidencePolicy::Auto;
    else if (!strcmp(v, "all"))
      c.evidence = EvidencePolicy::All;
    else
      bad("ASYNCWATCH_EVIDENCE", v, "off, auto or all");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_LOG"); v) {
    static const char* const levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    bool ok = false;
    for (const char* l : levels) ok = ok || !strcmp(v, l);
    if (ok)
      c.log_level = v;
    else
      bad("ASYNCWATCH_LOG", v, "trace, debug, info, warn, error, critical or off");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_QUIET"); v && *v) {
    if (!strcmp(v, "1"))
      c.quiet = true;
    else if (strcmp(v, "0") != 0)
      bad("ASYNCWATCH_QUIET", v, "0 or 1");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_FILE_MODE"); v) {
    uint64_t mode;
    if (parse_u64(v, &mode, 8) && mode <= 0777)
      c.file_mode = static_cast<unsigned>(mode);
    else
      bad("ASYNCWATCH_FILE_MODE", v, "an octal mode such as 0600");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_PYTHON"); v) {
    if (!strcmp(v, "off"))
      c.python_frames = false;
    else if (!strcmp(v, "on"))
      c.python_frames = true;
    else
      bad("ASYNCWATCH_PYTHON", v, "on or off");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_GPU_TIMES"); v && *v) {
    if (!strcmp(v, "1"))
      c.gpu_times = true;
    else if (strcmp(v, "0") != 0)
      bad("ASYNCWATCH_GPU_TIMES", v, "0 or 1");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_SUMMARY"); v && *v) {
    if (!strcmp(v, "1"))
      c.summary = true;
    else if (strcmp(v, "0") != 0)
      bad("ASYNCWATCH_SUMMARY", v, "0 or 1");
  }
  // The flight recorder keeps the whole run's summary besides its ring: summary mode is part of it.
  if (const char* v = getenv_fn("ASYNCWATCH_TRACE_LIMIT"); v && *v) {
    if (trace::parse_trace_limit(v, &c.trace_limit))
      c.summary = true;
    else
      bad("ASYNCWATCH_TRACE_LIMIT", v, "a size from 1M to 16G such as 64M, 256M or 1G");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_CLOCK"); v && *v) {
    if (!strcmp(v, "monotonic"))
      c.tsc_clock = false;
    else if (strcmp(v, "tsc") != 0)
      bad("ASYNCWATCH_CLOCK", v, "tsc or monotonic");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_CAPTURE_RANGE"); v && *v) {
    if (strcmp(v, "none") != 0 && !parse_capture_range(v, &c.capture, &c.capture_nvtx_name))
      bad("ASYNCWATCH_CAPTURE_RANGE", v, "cudaProfilerApi, nvtx:NAME or none");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_DELAY"); v && *v) {
    if (!parse_seconds(v, &c.delay_ns)) bad("ASYNCWATCH_DELAY", v, "seconds, e.g. 30 or 2.5");
  }
  if (const char* v = getenv_fn("ASYNCWATCH_DURATION"); v && *v) {
    if (!parse_seconds(v, &c.duration_ns) || c.duration_ns == 0)
      bad("ASYNCWATCH_DURATION", v, "seconds above 0, e.g. 60 or 2.5");
  }
  if (c.capture == trace::CaptureMode::None && (c.delay_ns || c.duration_ns)) c.capture = trace::CaptureMode::Time;
  if (const char* v = getenv_fn("ASYNCWATCH_DISABLE"); v && *v) {
    if (!strcmp(v, "1"))
      c.disabled = true;
    else if (strcmp(v, "0") != 0)
      bad("ASYNCWATCH_DISABLE", v, "0 or 1");
  }
  return c;
}

namespace {
bool g_disabled = false;
}
const Config& config() { return storage(); }
void set_config(const Config& c) {
  storage() = c;
  g_disabled = c.disabled;
}
bool tracing_disabled() noexcept { return g_disabled; }

bool expand_output_pattern_to(char* out, size_t cap, const char* pattern, const char* exe_name, long pid,
                              const char* host, long unix_seconds) noexcept {
  size_t n = 0;
  bool fits = true;
  auto put = [&](const char* s, size_t len) {
    for (size_t i = 0; i < len; ++i) {
      if (n + 1 < cap)
        out[n++] = s[i];
      else
        fits = false;
    }
  };
  char num[24];
  for (const char* p = pattern; *p; ++p) {
    if (*p != '%' || !p[1]) {
      put(p, 1);
      continue;
    }
    switch (*++p) {
      case 'n': put(exe_name, strlen(exe_name)); break;
      case 'p': put(num, static_cast<size_t>(snprintf(num, sizeof num, "%ld", pid))); break;
      case 'h': put(host, strlen(host)); break;
      case 't': put(num, static_cast<size_t>(snprintf(num, sizeof num, "%ld", unix_seconds))); break;
      case '%': put("%", 1); break;
      case 'q': {  // %q{VAR}: the variable's value ('/' made '_'), "" when unset (as nsys)
        const char* close = p[1] == '{' ? strchr(p + 2, '}') : nullptr;
        char name[128];
        size_t len = close ? static_cast<size_t>(close - (p + 2)) : 0;
        if (!close || len == 0 || len >= sizeof name) {
          put(p - 1, 2);
          break;
        }
        memcpy(name, p + 2, len);
        name[len] = 0;
        if (const char* v = getenv(name))
          for (; *v; ++v) put(*v == '/' ? "_" : v, 1);
        p = close;
        break;
      }
      default: put(p - 1, 2); break;
    }
  }
  if (cap) out[n] = 0;
  return fits && cap;
}

std::string expand_output_pattern(const std::string& pattern, const std::string& exe_name, long pid,
                                  const std::string& host, long unix_seconds) {
  std::string out(pattern.size() + exe_name.size() * 4 + host.size() * 4 + 256, '\0');
  while (!expand_output_pattern_to(out.data(), out.size(), pattern.c_str(), exe_name.c_str(), pid, host.c_str(),
                                   unix_seconds))
    out.resize(out.size() * 2);
  out.resize(strlen(out.c_str()));
  return out;
}

uint32_t config_flags(const Config& c) {
  uint32_t f = 0;
  if (c.evidence != EvidencePolicy::Off) f |= trace::kConfigEvidence;
  if (c.stacks != StackPolicy::None) f |= trace::kConfigStacksCopies | trace::kConfigStacksMemory;
  if (c.stacks == StackPolicy::All) f |= trace::kConfigStacksLaunches | trace::kConfigStacksSync;
  if (c.stacks != StackPolicy::None && c.python_frames) f |= trace::kConfigPythonFrames;
  if (c.gpu_times) f |= trace::kConfigGpuTimes;
  if (c.summary) f |= trace::kConfigSummary;
  if (c.trace_limit) f |= trace::kConfigFlight;
  return f;
}

}  // namespace asyncwatch
