#pragma once

#include "trace_builder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace asyncwatch::testing {

// A directory per test process: ctest runs the test cases as parallel processes, and two of them
// rewriting one trace file while the other has it mapped is a SIGBUS (seen in the ASan job).
inline std::string tmp_path(const std::string& name) {
  mkdir(ASYNCWATCH_TEST_TMP, 0755);
  std::string dir = std::string(ASYNCWATCH_TEST_TMP) + "/" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir + "/" + name;
}

inline std::string write_trace(const TraceBuilder& b, const std::string& name) {
  std::string p = tmp_path(name);
  b.write(p);
  return p;
}

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

}  // namespace asyncwatch::testing
