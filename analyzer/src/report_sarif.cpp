// The SARIF 2.1.0 report, written as it goes: no document is built.
#include "call_site.h"
#include "json_writer.h"
#include "reports.h"

#include <vector>

namespace asyncwatch {

namespace {

void text_object(JsonWriter& w, const char* key, const std::string& text) {
  w.object(key, [&] { w.field("text", text); });
}

void artifact_location(JsonWriter& w, const std::string& uri) {
  w.object("artifactLocation", [&] { w.field("uri", uri); });
}

void rule_object(JsonWriter& w, const RuleInfo& r) {
  w.object([&] {
    w.field("id", r.name);
    w.field("name", r.name);
    text_object(w, "shortDescription", r.title);
    text_object(w, "fullDescription", r.title);
    text_object(w, "help", r.help);
    w.object("defaultConfiguration", [&] { w.field("level", severity_name(r.severity)); });
  });
}

// A call site without a source line (a library or stripped program) is only a logical location.
void call_site_location(JsonWriter& w, const Frame& site) {
  w.object([&] {
    if (!site.file.empty())
      w.object("physicalLocation", [&] {
        artifact_location(w, display_path(site.file));
        w.object("region", [&] { w.field("startLine", site.line > 0 ? site.line : 1); });
      });
    if (!site.function.empty()) {
      w.key("logicalLocations");
      w.begin_array();
      w.object([&] {
        w.field("fullyQualifiedName", site.function);
        w.field("kind", "function");
      });
      w.end_array();
    }
  });
}

void result_object(JsonWriter& w, const Finding& f) {
  const RuleInfo& r = rule_info(f.id);
  w.object([&] {
    w.field("ruleId", r.name);
    w.field("ruleIndex", static_cast<int>(f.id));
    w.field("level", severity_name(finding_severity(f)));
    text_object(w, "message", finding_message(f));
    w.key("locations");
    w.begin_array();
    if (f.call_site_known && (!f.call_site.file.empty() || !f.call_site.function.empty()))
      call_site_location(w, f.call_site);
    w.end_array();
    w.object("properties", [&] {
      w.field("count", f.count);
      w.field("bytes", f.bytes);
      w.field("blocked_ns_total", f.blocked.total());
      w.field("blocked_ns_max", f.blocked.max());
      w.field("api", f.api);
      if (!f.via.module.empty()) w.field("via", frame_name_text(f.via));
    });
  });
}

// A trace that could not be read: the run is incomplete (toolExecutionNotifications).
void unreadable_notification(JsonWriter& w, const UnreadableTrace& u) {
  w.object([&] {
    w.field("level", "error");
    text_object(w, "message", u.trace + ": " + u.error);
    w.key("locations");
    w.begin_array();
    w.object([&] { w.object("physicalLocation", [&] { artifact_location(w, u.trace); }); });
    w.end_array();
  });
}

}  // namespace

void write_report_sarif(JsonWriter& w, const Report& report) {
  std::vector<const RuleInfo*> rules;
  for (int i = 0; i < static_cast<int>(FindingId::Count); ++i) rules.push_back(&rule_info(static_cast<FindingId>(i)));
  w.object([&] {
    w.field("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    w.field("version", "2.1.0");
    w.key("runs");
    w.begin_array();
    w.object([&] {
      w.object("tool", [&] {
        w.object("driver", [&] {
          w.field("name", "asyncwatch");
          w.field("version", ASYNCWATCH_VERSION);
          w.array("rules", rules, [&](const RuleInfo* r) { rule_object(w, *r); });
        });
      });
      w.key("invocations");
      w.begin_array();
      w.object([&] {
        w.field("executionSuccessful", report.unreadable.empty());
        w.array("toolExecutionNotifications", report.unreadable,
                [&](const UnreadableTrace& u) { unreadable_notification(w, u); });
      });
      w.end_array();
      w.array("results", report.findings, [&](const Finding& f) { result_object(w, f); });
    });
    w.end_array();
  });
}

std::string report_sarif_text(const Report& report) {
  JsonWriter w;
  write_report_sarif(w, report);
  return w.text();
}

}  // namespace asyncwatch
