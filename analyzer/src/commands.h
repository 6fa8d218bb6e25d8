// One function per subcommand (cmd_*.cpp), registered with the CLI in main.cpp.
#pragma once

#include "options.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace asyncwatch {

// Exit statuses (docs/contracts.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // a --fail-on finding exists
inline constexpr int kExitInvalid = 2;   // invalid input or usage

struct ReportArgs {
  std::string format = "text";
  std::string output;   // "" = stdout
  std::string fail_on;  // ids or a severity, comma separated
  double min_blocked_us = 50;
  uint64_t inline_htod_bytes = 64 * 1024;
  uint64_t launch_queue_depth = 512;
  double min_callback_us = 1000;
  uint64_t implicit_sync_min_count = 10;
  std::string colour = "auto";
  std::vector<std::string> user_code;  // --user-code PATTERN (repeatable)
  std::vector<std::string> path_map;   // --path-map FROM=TO (repeatable, validated by the CLI)
  std::vector<std::string> inputs;

  Options options() const;
};

// Adds the options shared by `report` and `run` (`with_output`: -o FILE).
void add_report_options(CLI::App* app, ReportArgs& args, bool with_output);

// Writes the report for `paths` and returns the exit status (0, 1 on --fail-on, 2 invalid).
int produce_report(const ReportArgs& args, const std::vector<std::string>& paths);

int cmd_report(const ReportArgs& args);
int cmd_dump(const std::string& trace);
struct TimelineArgs {
  std::string output;
  std::vector<std::string> inputs;
  double min_blocked_us = 50;
};
int cmd_timeline(const TimelineArgs& args);
struct RunArgs {
  bool sim = false;
  std::string output_dir;
  ReportArgs report;
  std::vector<std::string> command;
};
int cmd_run(const RunArgs& args);

}  // namespace asyncwatch
