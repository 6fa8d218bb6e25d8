// asyncwatch timeline [-o FILE] TRACE_OR_DIR...
#include "analysis.h"
#include "commands.h"
#include "timeline_export.h"
#include "trace_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace asyncwatch {

int cmd_timeline(const TimelineArgs& args) {
  try {
    auto paths = expand_trace_inputs(args.inputs);
    std::FILE* out = stdout;
    std::string tmp;
    if (!args.output.empty()) {
      tmp = args.output + ".tmp";
      out = std::fopen(tmp.c_str(), "w");
      if (!out) {
        std::cerr << "asyncwatch: " << args.output << ": cannot write: " << std::strerror(errno) << '\n';
        return kExitInvalid;
      }
    }
    try {
      write_timeline(out, paths, static_cast<uint64_t>(std::llround(args.min_blocked_us * 1000.0)));
    } catch (...) {
      if (out != stdout) {
        std::fclose(out);
        std::remove(tmp.c_str());
      }
      throw;
    }
    if (out != stdout) {
      bool ok = std::fflush(out) == 0 && !std::ferror(out);
      ok = std::fclose(out) == 0 && ok;
      if (!ok || std::rename(tmp.c_str(), args.output.c_str()) != 0) {
        std::cerr << "asyncwatch: " << args.output << ": cannot write: " << std::strerror(errno) << '\n';
        std::remove(tmp.c_str());
        return kExitInvalid;
      }
    } else {
      std::fflush(stdout);
    }
  } catch (const TraceError& e) {
    std::cerr << "asyncwatch: " << e.what() << '\n';
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace asyncwatch
