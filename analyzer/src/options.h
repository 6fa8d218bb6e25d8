// Thresholds of the finding rules (docs/findings.md documents each one), how call sites are
// found (docs/findings.md, "Call sites") and the bounds on what one trace may make the analyzer
// hold (docs/reliability.md, "Analyzer memory").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace asyncwatch {

struct DebugInfoBudget;

// The exit status of "the analysis failed" (out of memory, inside libdw too), never a --fail-on
// finding's 1 (the others: cli/commands.h, docs/contracts.md). Here: the symbolizer exits with it.
inline constexpr int kExitAnalysisFailed = 5;

// Per trace. A trace that goes beyond one is not read: its error names the limit (and the
// option that raises it), and the other traces are reported (docs/contracts.md, exit status 3).
// What each costs at its limit is measured in docs/reliability.md.
struct Limits {
  uint64_t stacks = 1'000'000;             // --max-stacks: distinct call stacks defined or referred to
  uint64_t call_sites = 20'000;            // --max-call-sites: distinct findings before they are merged by
                                           // source line (one per rule, cause, API, kernel and call stack)
  uint64_t strings = 1'000'000;            // distinct strings (kernel names) defined or referred to
  uint64_t modules = 16'384;               // module records (loaded objects)
  uint64_t module_path_bytes = 16u << 20;  // their paths, in all
  uint64_t streams = 100'000;              // streams in use at once
  uint64_t pending_callbacks = 100'000;    // host functions enqueued and not yet seen running (or the reverse)
  // Per report (all its traces together), not per trace: the memory libdw may spend on modules'
  // debug information and symbol tables, as estimated before it reads them (symbols/debuginfo.h).
  uint64_t debug_info_module_bytes = 2ull << 30;  // --max-debug-info-mib: one module
  uint64_t debug_info_total_bytes = 4ull << 30;   // --max-debug-info-total-mib: all of them
};

// A module path prefix as traced (FROM) and where the same files are here (TO): traces from another
// machine (`--path-map FROM=TO`). Matches whole path components.
struct PathMapping {
  std::string from;
  std::string to;
};

// The thresholds of the finding rules, each with its one default: the command line's options
// (cli/commands.h, in their own units) and the timeline start from these.
struct Thresholds {
  // --min-blocked-us: how long a call must block to count as having blocked. The rules flag (or,
  // for the copies they report whatever their time, rank as warnings) only calls at or above it; a
  // synchronization site is reported when its waits total at least it; the timeline puts calls at
  // or above it in the category "blocked" (its own --min-blocked-us, which leaves the findings it
  // marks at this default).
  uint64_t min_blocked_ns = 50'000;
  uint64_t inline_htod_bytes = 64 * 1024;  // --inline-htod-bytes: pageable HtoD copies this small are done inline
  uint64_t launch_queue_depth = 512;       // --launch-queue-depth: outstanding launches that count as a full queue
  uint64_t min_callback_ns = 1'000'000;    // --min-callback-us: a host function running longer is flagged
  uint64_t implicit_sync_min_count = 10;   // --implicit-sync-min-count: same call site this often = a loop
};
inline constexpr Thresholds kDefaultThresholds{};

struct Options : Thresholds {
  Limits limits;
  std::vector<std::string> user_code;  // --user-code PATTERN: frames that count as the user's code
  std::vector<PathMapping> path_map;   // --path-map FROM=TO: where the traced modules are here
  // The report's debug information budget (limits.debug_info_*), shared by its traces; made by
  // analyze_job when not given.
  std::shared_ptr<DebugInfoBudget> debug_budget;
};

}  // namespace asyncwatch
