// Report writers: text (compiler-diagnostic style), JSON (docs/report-json.md), SARIF 2.1.0,
// GitLab Code Quality.
#pragma once

#include "analysis.h"

#include <ostream>
#include <string>

namespace asyncwatch {

struct TextStyle {
  bool colour = false;
};
void write_report_text(std::ostream& out, const Report& report, const TextStyle& style);
class JsonWriter;
// Written as they go (json_writer.h); the *_text forms return the document (tests, small reports).
void write_report_json(JsonWriter& out, const Report& report);
void write_report_sarif(JsonWriter& out, const Report& report);
// GitLab Code Quality (a JSON array of issues; docs/ci.md).
void write_report_codequality(JsonWriter& out, const Report& report);
std::string report_json_text(const Report& report);
std::string report_sarif_text(const Report& report);

// "file:line" for a call site, relative to the current directory when below it; without a source
// line "function (module)" or "module+0xOFFSET" (never "??"); "" when the finding has no call site.
std::string location_text(const Finding& f);
// The "call site:" line of the text report: the frame, the library function it called
// (", via cusparseSpMV (libcusparse.so.12)") and a note when no frame is the program's own.
std::string call_site_line_text(const Finding& f);
// Why a finding has no call site ("call site not recorded; ..."), "" when it has one.
std::string missing_call_site_text(const Finding& f);
// A path relative to the current directory when it lies below it.
std::string display_path(const std::string& path);
// "main at /src/seed.cu:52 (app)", "helper at x.cu:7 (app) [inlined]", "libcuda.so.1+0x1234"
std::string frame_text(const Frame& f);

}  // namespace asyncwatch
