// Figures measured on asyncwatch's simulated CUDA driver (`run --sim`) are the simulator's model,
// not a GPU's: every output that leaves the machine (SARIF, Code Quality, timelines, HTML, JSON)
// says so where its figures are read (docs/simulator.md).
#pragma once

#include "findings/analysis.h"

namespace asyncwatch {

// Put before a finding's message where a reader sees it alone (a code-scanning alert, a merge
// request widget).
inline constexpr const char* kSimulatedPrefix = "[simulated, no GPU] ";

inline bool report_simulated(const Report& report) {
  for (const auto& p : report.processes)
    if (p.simulated) return true;
  return false;
}

// The finding's calls were made in a simulated process.
inline bool finding_simulated(const Finding& f, const Report& report) {
  if (f.processes.empty()) return report_simulated(report);
  for (const auto& fp : f.processes)
    for (const auto& p : report.processes)
      if (p.pid == fp.pid && p.simulated) return true;
  return false;
}

}  // namespace asyncwatch
