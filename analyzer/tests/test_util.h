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

}  // namespace asyncwatch::testing
