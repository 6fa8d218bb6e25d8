#pragma once

#include "trace_builder.h"

#include <sys/stat.h>

#include <string>

namespace asyncwatch::testing {

inline std::string tmp_path(const std::string& name) {
  mkdir(ASYNCWATCH_TEST_TMP, 0755);
  return std::string(ASYNCWATCH_TEST_TMP) + "/" + name;
}

inline std::string write_trace(const TraceBuilder& b, const std::string& name) {
  std::string p = tmp_path(name);
  b.write(p);
  return p;
}

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

}  // namespace asyncwatch::testing
