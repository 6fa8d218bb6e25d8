// The identity of a finding across runs, machines and checkouts: SARIF partialFingerprints (GitHub
// code scanning keeps an alert open while its fingerprint stays) and --baseline matching.
#pragma once

#include "findings/finding.h"

#include <string>

namespace asyncwatch {

class SourceLines;

// The source tree the report's paths are relative to: `dir` made absolute, or (when `dir` is
// empty) the closest directory at or above the current one that holds .git; "" when none.
std::string source_root(const std::string& dir);

// `path` relative to `root` (a directory, absolute) when below it, else "".
std::string path_below(const std::string& path, const std::string& root);

// The directory below which a report reads source text (report/source_lines.h): `root` when
// given, else the working directory.
std::string source_read_root(const std::string& root);

// 16 hex digits from: the rule, the cause, the API, the kernel, the call site's file (relative to
// `root` when below it, else its name), its function and its normalized source line (the line
// number only when the source cannot be read); for a call site without source, its module's file
// name and function (its offset in the module when it has no name). No addresses, pids or absolute paths: the same finding in another run,
// process or checkout has the same fingerprint; a line that moved keeps it. The source line is
// read through `lines` (one reading per file and report: want() the call sites first), only
// below its root: a call site outside it gets the fingerprint of what the trace holds alone.
// Without `lines`, a reader of its own below `root`.
std::string finding_fingerprint(const Finding& f, const std::string& root, SourceLines* lines = nullptr);

}  // namespace asyncwatch
