// --baseline OLD: the findings of an earlier report (asyncwatch JSON, or SARIF from asyncwatch),
// by fingerprint (fingerprint.h), so that a gate fails only on findings that are new.
#pragma once

#include <set>
#include <string>

namespace asyncwatch {

// The fingerprints of the report at `path`; throws std::runtime_error saying what is wrong with
// it (missing, not JSON, not an asyncwatch report, written by a version without fingerprints).
std::set<std::string> read_baseline(const std::string& path);

}  // namespace asyncwatch
