#include "sim_config.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace aw_sim {
namespace {

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || d <= 0) {
    std::fprintf(stderr, "asyncwatch-sim: ignoring %s=%s (not a positive number)\n", name, v);
    return fallback;
  }
  return d;
}

std::map<std::string, uint64_t> parse_kernel_times(const char* spec) {
  std::map<std::string, uint64_t> out;
  if (!spec) return out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "asyncwatch-sim: ignoring ASYNCWATCH_SIM_KERNEL_TIMES item '%s' (want name=ns)\n",
                   item.c_str());
      continue;
    }
    out[item.substr(0, eq)] = std::strtoull(item.c_str() + eq + 1, nullptr, 10);
  }
  return out;
}

SimConfig load() {
  SimConfig c;
  c.staging_bytes_per_s = env_double("ASYNCWATCH_SIM_STAGING_GBPS", 3.8) * 1e9;
  c.pageable_d2h_bytes_per_s = env_double("ASYNCWATCH_SIM_PAGEABLE_D2H_GBPS", 1.23) * 1e9;
  c.device_copy_bytes_per_s = env_double("ASYNCWATCH_SIM_COPY_GBPS", 50) * 1e9;
  c.clock_hz = env_double("ASYNCWATCH_SIM_CLOCK_HZ", 1.98e9);
  if (const char* v = std::getenv("ASYNCWATCH_SIM_KERNEL_NS")) c.kernel_ns = std::strtoull(v, nullptr, 10);
  c.kernel_times_ns = parse_kernel_times(std::getenv("ASYNCWATCH_SIM_KERNEL_TIMES"));
  const char* re = std::getenv("ASYNCWATCH_SIM_SLEEP_KERNELS");
  try {
    c.sleep_kernel_regex = std::regex(re && *re ? re : "sleep|dummy|spin|wait");
  } catch (const std::regex_error&) {
    std::fprintf(stderr, "asyncwatch-sim: ASYNCWATCH_SIM_SLEEP_KERNELS is not a valid regex, using the default\n");
    c.sleep_kernel_regex = std::regex("sleep|dummy|spin|wait");
  }
  if (const char* v = std::getenv("ASYNCWATCH_SIM_LAZY_LOAD_US")) c.lazy_load_ns = std::strtoull(v, nullptr, 10) * 1000;
  if (const char* v = std::getenv("CUDA_MODULE_LOADING")) c.eager_loading = std::string(v) == "EAGER";
  if (const char* v = std::getenv("ASYNCWATCH_SIM_QUEUE_DEPTH")) {
    c.queue_depth = std::strtoull(v, nullptr, 10);
    if (c.queue_depth == 0) c.queue_depth = 1;
  }
  if (const char* v = std::getenv("ASYNCWATCH_SIM_HOST_FN_LATENCY_US"))
    c.host_fn_latency_ns = std::strtoull(v, nullptr, 10) * 1000;
  if (const char* v = std::getenv("CUDA_LAUNCH_BLOCKING")) c.launch_blocking = std::string(v) == "1";
  if (const char* v = std::getenv("ASYNCWATCH_SIM_CONTEXT_INIT_US"))
    c.context_init_ns = std::strtoull(v, nullptr, 10) * 1000;
  if (const char* v = std::getenv("ASYNCWATCH_SIM_DEVICES")) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > kMaxDevices)
      std::fprintf(stderr, "asyncwatch-sim: ignoring ASYNCWATCH_SIM_DEVICES=%s (want 1..%d)\n", v, kMaxDevices);
    else
      c.device_count = static_cast<int>(n);
  }
  c.peer_staged_bytes_per_s = env_double("ASYNCWATCH_SIM_PEER_STAGED_GBPS", 10) * 1e9;
  if (const char* v = std::getenv("ASYNCWATCH_SIM_HOST_WAIT")) {
    c.host_waits_block = std::string(v) == "block";
    if (!c.host_waits_block && std::string(v) != "spin")
      std::fprintf(stderr, "asyncwatch-sim: ignoring ASYNCWATCH_SIM_HOST_WAIT=%s (want spin or block)\n", v);
  }
  return c;
}

}  // namespace

const SimConfig& config() {
  static const SimConfig* cfg = new SimConfig(load());  // leaked: used by detached workers at exit
  return *cfg;
}

uint64_t transfer_ns(std::size_t bytes, double bytes_per_s) {
  return static_cast<uint64_t>(static_cast<double>(bytes) / bytes_per_s * 1e9);
}

}  // namespace aw_sim
