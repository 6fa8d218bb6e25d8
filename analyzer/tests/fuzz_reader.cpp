// libFuzzer target for the reader and the analysis (build with clang:
//   cmake -DCMAKE_CXX_COMPILER=clang++ -DASYNCWATCH_BUILD_FUZZERS=ON ...
//   build/bin/asyncwatch_fuzz_reader -max_len=300000 analyzer/tests/golden/)
// Every input must give a report or a TraceError, nothing else.
#include "analysis.h"
#include "reports.h"
#include "timeline_export.h"
#include "trace_reader.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/asyncwatch-fuzz-" + std::to_string(getpid()) + ".awtrace";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    asyncwatch::Report r = asyncwatch::analyze_traces({path}, asyncwatch::Options{});
    std::ostringstream out;
    asyncwatch::write_report_text(out, r, asyncwatch::TextStyle{});
    (void)asyncwatch::report_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::FILE* null = std::fopen("/dev/null", "w");
    asyncwatch::write_timeline(null, {path}, 50000);
    std::fclose(null);
  } catch (const asyncwatch::TraceError&) {
  }
  return 0;
}
