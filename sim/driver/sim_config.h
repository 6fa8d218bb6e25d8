// Tunables of the simulated GPU, read once from the environment (docs/simulator.md lists them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <regex>
#include <string>

namespace aw_sim {

struct SimConfig {
  // Host-blocking copy model, calibrated on the H200 (docs/simulator.md, "Timing model").
  double staging_bytes_per_s = 3.8e9;               // pageable -> device, busy-waited in the caller
  double pageable_d2h_bytes_per_s = 1.23e9;         // device -> pageable, caller waits for it
  double device_copy_bytes_per_s = 50e9;            // pinned/device copies, time spent on the stream
  double clock_hz = 1.98e9;                         // sleep kernels: cycles / clock_hz
  uint64_t kernel_ns = 5000;                        // any other kernel
  std::map<std::string, uint64_t> kernel_times_ns;  // per kernel name (mangled or plain)
  std::regex sleep_kernel_regex;
  uint64_t lazy_load_ns = 1500 * 1000;      // first launch of each kernel
  bool eager_loading = false;               // CUDA_MODULE_LOADING=EAGER
  std::size_t queue_depth = 1024;           // pending operations per stream
  bool launch_blocking = false;             // CUDA_LAUNCH_BLOCKING=1
  uint64_t host_fn_latency_ns = 20 * 1000;  // stream reaches a callback -> callback starts
  // Creating a context (the first call that needs one). ~100 ms measured on the H200; the
  // default is 20 ms because every simulated CUDA process of the test suite pays it (docs/simulator.md).
  uint64_t context_init_ns = 20 * 1000 * 1000;
  int device_count = 1;                   // simulated devices (ASYNCWATCH_SIM_DEVICES, 1..kMaxDevices)
  double peer_staged_bytes_per_s = 10e9;  // device <-> device across devices without peer access
  // ASYNCWATCH_SIM_HOST_WAIT=block: the host's waits sleep (host_wait.h) instead of spinning.
  bool host_waits_block = false;
};

constexpr int kMaxDevices = 8;

// Parsed on first use; the environment is not re-read afterwards.
const SimConfig& config();

// Nanoseconds a transfer of `bytes` takes at `bytes_per_s`.
uint64_t transfer_ns(std::size_t bytes, double bytes_per_s);

}  // namespace aw_sim
