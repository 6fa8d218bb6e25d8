// The SARIF 2.1.0 report, written as it goes: no document is built. Made for GitHub code scanning
// (docs/ci.md): every result has a physical location (the source line; without one, the module),
// paths relative to the source root (uriBaseId SRCROOT) and a partialFingerprints entry that stays
// the same across runs (fingerprint.h).
#include "symbols/call_site.h"
#include "report/fingerprint.h"
#include "report/json_writer.h"
#include "report/reports.h"
#include "report/simulated.h"

#include <cctype>
#include <fmt/format.h>
#include <vector>

namespace asyncwatch {

namespace {

void text_object(JsonWriter& w, const char* key, const std::string& text) {
  w.object(key, [&] { w.field("text", text); });
}

// RFC 3986: unreserved characters and '/' as they are, the rest percent-encoded.
std::string uri_path(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// Relative to the source root (uriBaseId) when below it; else an absolute file: URI; a path that
// is not absolute (a module named without a directory) as a relative reference.
void artifact_location(JsonWriter& w, const std::string& path, const std::string& root) {
  w.object("artifactLocation", [&] {
    std::string rel = path_below(path, root);
    if (!rel.empty()) {
      w.field("uri", uri_path(rel));
      w.field("uriBaseId", "SRCROOT");
    } else if (!path.empty() && path[0] == '/') {
      w.field("uri", "file://" + uri_path(path));
    } else {
      w.field("uri", uri_path(path));
    }
  });
}

std::string help_markdown(const RuleInfo& r) {
  return fmt::format(
      "**{}**\n\n{}\n\nasyncwatch finding `{}` (severity {}); docs/findings.md in the asyncwatch "
      "repository describes how it is detected and its thresholds.",
      r.title, r.help, r.name, severity_name(r.severity));
}

void rule_object(JsonWriter& w, const RuleInfo& r) {
  w.object([&] {
    w.field("id", r.name);
    w.field("name", r.name);
    text_object(w, "shortDescription", r.title);
    text_object(w, "fullDescription", fmt::format("{} How to fix it: {}", r.title, r.help));
    w.object("help", [&] {
      w.field("text", r.help);
      w.field("markdown", help_markdown(r));
    });
    w.object("defaultConfiguration", [&] { w.field("level", severity_name(r.severity)); });
    w.object("properties", [&] {
      w.key("tags");
      w.begin_array();
      w.value("performance");
      w.value("cuda");
      w.end_array();
    });
  });
}

void logical_function(JsonWriter& w, const std::string& function) {
  if (function.empty()) return;
  w.key("logicalLocations");
  w.begin_array();
  w.object([&] {
    w.field("fullyQualifiedName", function);
    w.field("kind", "function");
  });
  w.end_array();
}

// The source line when there is one; else the module that holds the call site (line 1 as its
// region; module+offset and the function as logical locations); else the traced program.
void result_location(JsonWriter& w, const Finding& f, const Report& report) {
  w.object([&] {
    const Frame& site = f.call_site;
    if (f.call_site_known && !site.file.empty()) {
      w.object("physicalLocation", [&] {
        artifact_location(w, site.file, report.source_root);
        w.object("region", [&] {
          w.field("startLine", site.has_line() ? site.line : 1);
          w.field("endLine", site.has_line() ? site.line : 1);
        });
      });
      logical_function(w, site.function);
      return;
    }
    std::string module = finding_module(f, report);
    // GitHub shows no result whose location has no region: line 1 of the module stands for it,
    // and the logical locations say where in the module (its offset) and in which function.
    w.object("physicalLocation", [&] {
      artifact_location(w, module.empty() ? "unknown" : module, report.source_root);
      w.object("region", [&] {
        w.field("startLine", 1);
        w.field("endLine", 1);
      });
    });
    if (f.call_site_known && (!site.module.empty() || !site.function.empty())) {
      w.key("logicalLocations");
      w.begin_array();
      if (!site.module.empty())
        w.object([&] {
          w.field("fullyQualifiedName",
                  fmt::format("{}+0x{:x}", site.module.substr(site.module.rfind('/') + 1), site.offset));
          w.field("kind", "module");
        });
      if (!site.function.empty())
        w.object([&] {
          w.field("fullyQualifiedName", site.function);
          w.field("kind", "function");
        });
      w.end_array();
    }
    w.object("message", [&] {
      w.field("text", f.call_site_known ? "no source line for the call site: " + frame_name_text(site)
                                        : missing_call_site_text(f));
    });
  });
}

void result_object(JsonWriter& w, const Finding& f, const Report& report) {
  const RuleInfo& r = rule_info(f.id);
  w.object([&] {
    w.field("ruleId", r.name);
    w.field("ruleIndex", static_cast<int>(f.id));
    w.field("level", severity_name(finding_severity(f)));
    // A borrowed Python line says so where the message is read (the location is that line).
    const std::string borrowed = borrowed_line_text(f);
    const bool simulated = finding_simulated(f, report);
    text_object(w, "message",
                (simulated ? kSimulatedPrefix : "") +
                    (borrowed.empty() ? finding_message(f) : finding_message(f) + " (at " + borrowed + ")"));
    w.key("locations");
    w.begin_array();
    result_location(w, f, report);
    w.end_array();
    w.object("partialFingerprints", [&] { w.field("asyncwatch/v1", f.fingerprint); });
    if (!report.baseline.empty()) w.field("baselineState", f.in_baseline ? "unchanged" : "new");
    w.object("properties", [&] {
      w.field("count", f.count);
      w.field("bytes", f.bytes);
      w.field("blocked_ns_total", f.blocked.total());
      w.field("blocked_ns_max", f.blocked.max());
      // What fixing it saves end to end, and on what figures (findings/impact.h; docs/findings.md).
      w.field("impact_ns", f.impact_ns);
      w.field("impact_share", f.impact_share);
      if (!f.impact_basis.empty()) w.field("impact_basis", f.impact_basis);
      w.field("api", f.api);
      if (!f.via.module.empty()) w.field("via", frame_name_text(f.via));
      if (simulated) w.field("simulated", true);
    });
  });
}

// A trace that could not be read: the run is incomplete (toolExecutionNotifications).
void unreadable_notification(JsonWriter& w, const UnreadableTrace& u, const std::string& root) {
  w.object([&] {
    w.field("level", "error");
    text_object(w, "message", u.trace + ": " + u.error);
    w.key("locations");
    w.begin_array();
    w.object([&] { w.object("physicalLocation", [&] { artifact_location(w, u.trace, root); }); });
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
          w.field("semanticVersion", ASYNCWATCH_VERSION);
          w.array("rules", rules, [&](const RuleInfo* r) { rule_object(w, *r); });
        });
      });
      if (!report.source_root.empty())
        w.object("originalUriBaseIds", [&] {
          w.object("SRCROOT", [&] {
            w.field("uri", "file://" + uri_path(report.source_root) + (report.source_root.back() == '/' ? "" : "/"));
          });
        });
      w.key("invocations");
      w.begin_array();
      w.object([&] {
        w.field("executionSuccessful", report.unreadable.empty());
        w.array("toolExecutionNotifications", report.unreadable,
                [&](const UnreadableTrace& u) { unreadable_notification(w, u, report.source_root); });
      });
      w.end_array();
      w.array("results", report.findings, [&](const Finding& f) { result_object(w, f, report); });
      // The GPU overlap figures of the processes recorded with GPU times (docs/ci.md).
      // A --sim run's figures are the simulator's (simulated.h): said for the whole run too.
      bool gpu_times = false;
      for (const auto& p : report.processes) gpu_times |= p.gpu_times;
      const bool simulated = report_simulated(report);
      if (gpu_times || simulated)
        w.object("properties", [&] {
          if (simulated) {
            w.field("simulated", true);
            w.field("simulated_note",
                    "recorded on asyncwatch's simulated CUDA driver and runtime (asyncwatch run --sim): times and "
                    "blocked durations are the simulator's model, not measurements of a GPU");
          }
          if (!gpu_times) return;
          w.key("gpu_overlap");
          w.begin_array();
          for (const auto& p : report.processes)
            if (p.gpu_times)
              w.object([&] {
                w.field("pid", p.pid);
                w.field("trace", p.trace);
                w.array("streams", p.gpu_overlap, [&](const StreamOverlap& s) { gpu_overlap_object(w, s); });
              });
          w.end_array();
        });
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
