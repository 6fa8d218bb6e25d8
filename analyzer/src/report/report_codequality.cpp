// GitLab's Code Quality report (docs.gitlab.com, "Code Quality report format"): a JSON array of
// issues, each with a description, check name, unique fingerprint, severity and a location whose
// path is relative to the repository root. GitLab shows them in the merge request's Code Quality
// widget (docs/ci.md); the same fingerprints as SARIF's partialFingerprints (fingerprint.h).
#include "symbols/call_site.h"
#include "report/fingerprint.h"
#include "report/json_writer.h"
#include "report/reports.h"
#include "report/simulated.h"

namespace asyncwatch {

namespace {

// GitLab's scale is info, minor, major, critical, blocker.
const char* gitlab_severity(Severity s) {
  switch (s) {
    case Severity::Note: return "info";
    case Severity::Warning: return "minor";
    case Severity::Error: return "major";
  }
  return "info";
}

// The source file below the source root (as SARIF's SRCROOT-relative URI, not percent-encoded);
// a file outside it, or the module when there is no source line, as an absolute path.
std::string issue_path(const Finding& f, const Report& report) {
  std::string path = f.call_site_known && !f.call_site.file.empty() ? f.call_site.file : finding_module(f, report);
  std::string rel = path_below(path, report.source_root);
  return !rel.empty() ? rel : path.empty() ? "unknown" : path;
}

}  // namespace

void write_report_codequality(JsonWriter& w, const Report& report) {
  w.begin_array();
  for (const Finding& f : report.findings) {
    const RuleInfo& r = rule_info(f.id);
    w.object([&] {
      w.field("description", (finding_simulated(f, report) ? kSimulatedPrefix : "") + finding_message(f));
      w.field("check_name", r.name);
      w.field("fingerprint", f.fingerprint);
      w.field("severity", gitlab_severity(finding_severity(f)));
      w.object("location", [&] {
        w.field("path", issue_path(f, report));
        bool line = f.call_site_known && f.call_site.has_line();
        w.object("lines", [&] { w.field("begin", line ? f.call_site.line : 1); });
      });
    });
  }
  w.end_array();
}

}  // namespace asyncwatch
