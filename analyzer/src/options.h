// Thresholds of the finding rules (docs/findings.md documents each one), and how call sites are
// found (docs/findings.md, "Call site").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace asyncwatch {

// A module path prefix as traced (FROM) and where the same files are here (TO): traces from another
// machine (`--path-map FROM=TO`). Matches whole path components.
struct PathMapping {
  std::string from;
  std::string to;
};

struct Options {
  uint64_t min_blocked_ns = 50'000;          // --min-blocked-us: a call blocked less is not flagged
  uint64_t inline_htod_bytes = 64 * 1024;    // --inline-htod-bytes: pageable HtoD copies this small are done inline
  uint64_t launch_queue_depth = 512;         // --launch-queue-depth: outstanding launches that count as a full queue
  uint64_t min_callback_ns = 1'000'000;      // --min-callback-us: a host function running longer is flagged
  uint64_t implicit_sync_min_count = 10;     // --implicit-sync-min-count: same call site this often = a loop
  std::vector<std::string> user_code;        // --user-code PATTERN: frames that count as the user's code
  std::vector<PathMapping> path_map;         // --path-map FROM=TO: where the traced modules are here
};

}  // namespace asyncwatch
