// The identity of a finding across runs, machines and checkouts: SARIF partialFingerprints (GitHub
// code scanning keeps an alert open while its fingerprint stays) and --baseline matching.
#pragma once

#include "findings/finding.h"

#include <string>

namespace asyncwatch {

// The source tree the report's paths are relative to: `dir` made absolute, or (when `dir` is
// empty) the closest directory at or above the current one that holds .git; "" when none.
std::string source_root(const std::string& dir);

// `path` relative to `root` (a directory, absolute) when below it, else "".
std::string path_below(const std::string& path, const std::string& root);

// The text of line `line` of `file` with all white space removed, "" when it cannot be read
// (bounded: files over 64 MiB or lines over 4 KiB are not read).
std::string normalized_source_line(const std::string& file, int line);

// 16 hex digits from: the rule, the cause, the API, the kernel, the call site's file (relative to
// `root` when below it, else its name), its function and its normalized source line (the line
// number only when the source cannot be read); for a call site without source, its module's file
// name and function (its offset in the module when it has no name). No addresses, pids or absolute paths: the same finding in another run,
// process or checkout has the same fingerprint; a line that moved keeps it.
std::string finding_fingerprint(const Finding& f, const std::string& root);

}  // namespace asyncwatch
