// `asyncwatch report a.json b.json ...`: JSON reports written separately (one per node, one per
// rank) merged into one, as if their traces had been reported together: processes and unreadable
// traces side by side, findings with the same fingerprint (fingerprint.h) summed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace asyncwatch {

// Throws std::runtime_error naming the report that cannot be read or merged (not an asyncwatch
// JSON report, another schema_version, findings without fingerprints, other thresholds).
// Merged findings: count, bytes, blocked total/min/max and evidence summed or bounded; `median`
// the median of the part with the most calls (an approximation: docs/report-json.md);
// `share_of_wall` recomputed; processes per finding side by side; ranked by blocked total.
nlohmann::ordered_json merge_json_reports(const std::vector<std::string>& paths);

}  // namespace asyncwatch
