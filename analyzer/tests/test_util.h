#pragma once

#include "trace_builder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace asyncwatch::testing {

// A directory per test process: ctest runs the test cases as parallel processes, and two of them
// rewriting one trace file while the other has it mapped is a SIGBUS (seen in the ASan job).
// It lies in the build tree, and goes when the process ends its tests (TmpCleanup below).
inline std::string tmp_dir() {
  mkdir(ASYNCWATCH_TEST_TMP, 0755);
  std::string dir = std::string(ASYNCWATCH_TEST_TMP) + "/" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir;
}

inline std::string tmp_path(const std::string& name) { return tmp_dir() + "/" + name; }

// Removes this process's directory after its last test (a crash leaves it, in the build tree).
class TmpCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(std::string(ASYNCWATCH_TEST_TMP) + "/" + std::to_string(getpid()), ec);
  }
};
inline const bool kTmpCleanupRegistered = (::testing::AddGlobalTestEnvironment(new TmpCleanup), true);

inline std::string write_trace(const TraceBuilder& b, const std::string& name) {
  std::string p = tmp_path(name);
  b.write(p);
  return p;
}

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

// The seed's program in small, as a trace of pid 4242: one launch of `kernel`, then a 2 GiB
// pageable device-to-host cudaMemcpyAsync that blocked 1.74 s, called at 0x401300 of `executable`
// (whose module spans 0x400000-0x500000) on thread 1 named `thread`.
inline void add_seed_calls(TraceBuilder& b, const std::string& executable, const std::string& thread,
                           const std::string& kernel) {
  b.thread_info(1, thread.c_str());
  b.module(1, executable, 0, 0x400000, 0x500000);
  uint32_t s = b.stack(1, {0x401300});
  uint32_t k = b.string(1, kernel);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Launch, TraceBuilder::launch(tf::Api::__cudaLaunchKernel, k, t, t + 4 * kUs));
  t += 10 * kUs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cudaMemcpyAsync, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 1740 * kMs, 2ull << 30,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
}

}  // namespace asyncwatch::testing
