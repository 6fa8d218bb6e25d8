// The SARIF 2.1.0 report, written as it goes: no document is built.
#include "call_site.h"
#include "json_writer.h"
#include "reports.h"

namespace asyncwatch {

namespace {

void text_object(JsonWriter& w, const char* key, const std::string& text) {
  w.key(key);
  w.begin_object();
  w.field("text", text);
  w.end_object();
}

void rule_object(JsonWriter& w, const RuleInfo& r) {
  w.begin_object();
  w.field("id", r.name);
  w.field("name", r.name);
  text_object(w, "shortDescription", r.title);
  text_object(w, "fullDescription", r.title);
  text_object(w, "help", r.help);
  w.key("defaultConfiguration");
  w.begin_object();
  w.field("level", severity_name(r.severity));
  w.end_object();
  w.end_object();
}

void result_object(JsonWriter& w, const Finding& f) {
  const RuleInfo& r = rule_info(f.id);
  w.begin_object();
  w.field("ruleId", r.name);
  w.field("ruleIndex", static_cast<int>(f.id));
  w.field("level", severity_name(r.severity));
  text_object(w, "message", finding_message(f));
  w.key("locations");
  w.begin_array();
  // A call site without a source line (a library or stripped program) is only a logical location.
  if (f.call_site_known && (!f.call_site.file.empty() || !f.call_site.function.empty())) {
    w.begin_object();
    if (!f.call_site.file.empty()) {
      w.key("physicalLocation");
      w.begin_object();
      w.key("artifactLocation");
      w.begin_object();
      w.field("uri", display_path(f.call_site.file));
      w.end_object();
      w.key("region");
      w.begin_object();
      w.field("startLine", f.call_site.line > 0 ? f.call_site.line : 1);
      w.end_object();
      w.end_object();
    }
    if (!f.call_site.function.empty()) {
      w.key("logicalLocations");
      w.begin_array();
      w.begin_object();
      w.field("fullyQualifiedName", f.call_site.function);
      w.field("kind", "function");
      w.end_object();
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
  w.key("properties");
  w.begin_object();
  w.field("count", f.count);
  w.field("bytes", f.bytes);
  w.field("blocked_ns_total", f.blocked.total());
  w.field("blocked_ns_max", f.blocked.max());
  w.field("api", f.api);
  if (!f.via.module.empty()) w.field("via", frame_name_text(f.via));
  w.end_object();
  w.end_object();
}

}  // namespace

void write_report_sarif(JsonWriter& w, const Report& report) {
  w.begin_object();
  w.field("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
  w.field("version", "2.1.0");
  w.key("runs");
  w.begin_array();
  w.begin_object();
  w.key("tool");
  w.begin_object();
  w.key("driver");
  w.begin_object();
  w.field("name", "asyncwatch");
  w.field("version", ASYNCWATCH_VERSION);
  w.key("rules");
  w.begin_array();
  for (int i = 0; i < static_cast<int>(FindingId::Count); ++i) rule_object(w, rule_info(static_cast<FindingId>(i)));
  w.end_array();
  w.end_object();
  w.end_object();
  // Traces that could not be read: the run is incomplete (toolExecutionNotifications).
  w.key("invocations");
  w.begin_array();
  w.begin_object();
  w.field("executionSuccessful", report.unreadable.empty());
  w.key("toolExecutionNotifications");
  w.begin_array();
  for (const auto& u : report.unreadable) {
    w.begin_object();
    w.field("level", "error");
    text_object(w, "message", u.trace + ": " + u.error);
    w.key("locations");
    w.begin_array();
    w.begin_object();
    w.key("physicalLocation");
    w.begin_object();
    w.key("artifactLocation");
    w.begin_object();
    w.field("uri", u.trace);
    w.end_object();
    w.end_object();
    w.end_object();
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.end_array();
  w.key("results");
  w.begin_array();
  for (const auto& f : report.findings) result_object(w, f);
  w.end_array();
  w.end_object();
  w.end_array();
  w.end_object();
}

std::string report_sarif_text(const Report& report) {
  JsonWriter w;
  write_report_sarif(w, report);
  return w.text();
}

}  // namespace asyncwatch
