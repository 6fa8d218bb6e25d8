// The analyzer's own diagnostics (`--verbose`): what it does and how long each step takes, on
// standard error, through spdlog. Off unless asked, and then one line per step, never per record.
// The in-process library keeps its own logger (preload/src/log.h): it must be async-signal-safe and
// allocate nothing, which spdlog's formatting and sinks are not.
#pragma once

#include <chrono>
#include <string>

namespace asyncwatch::diagnostics {

// Once, before any work: `verbose` turns the step lines on.
void init(bool verbose);
bool verbose();
// One step's line ("asyncwatch: [debug] ..."), when verbose; thread-safe (the report's workers).
void step(const std::string& line);

// Times a step from construction; `ms()` is its time so far.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace asyncwatch::diagnostics
