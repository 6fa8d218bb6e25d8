#include "call_site.h"
#include "reports.h"

namespace asyncwatch {

using nlohmann::ordered_json;

ordered_json report_sarif(const Report& report) {
  ordered_json rules = ordered_json::array();
  for (int i = 0; i < static_cast<int>(FindingId::Count); ++i) {
    const RuleInfo& r = rule_info(static_cast<FindingId>(i));
    rules.push_back({{"id", finding_id_name(r.id)},
                     {"name", finding_id_name(r.id)},
                     {"shortDescription", {{"text", r.title}}},
                     {"fullDescription", {{"text", r.title}}},
                     {"help", {{"text", r.help}}},
                     {"defaultConfiguration", {{"level", severity_name(r.severity)}}}});
  }
  ordered_json results = ordered_json::array();
  for (const auto& f : report.findings) {
    const RuleInfo& r = rule_info(f.id);
    ordered_json res;
    res["ruleId"] = finding_id_name(f.id);
    res["ruleIndex"] = static_cast<int>(f.id);
    res["level"] = severity_name(r.severity);
    res["message"] = {{"text", finding_message(f)}};
    ordered_json locations = ordered_json::array();
    // A call site without a source line (a library or stripped program) is only a logical location.
    if (f.call_site_known && (!f.call_site.file.empty() || !f.call_site.function.empty())) {
      ordered_json loc;
      if (!f.call_site.file.empty())
        loc["physicalLocation"] = {{"artifactLocation", {{"uri", display_path(f.call_site.file)}}},
                                   {"region", {{"startLine", f.call_site.line > 0 ? f.call_site.line : 1}}}};
      if (!f.call_site.function.empty())
        loc["logicalLocations"] = ordered_json::array({{{"fullyQualifiedName", f.call_site.function}, {"kind", "function"}}});
      locations.push_back(std::move(loc));
    }
    res["locations"] = std::move(locations);
    res["properties"] = {{"count", f.count},
                         {"bytes", f.bytes},
                         {"blocked_ns_total", f.blocked.total()},
                         {"blocked_ns_max", f.blocked.max()},
                         {"api", f.api}};
    if (!f.via.module.empty()) res["properties"]["via"] = frame_name_text(f.via);
    results.push_back(std::move(res));
  }
  // Traces that could not be read: the run is incomplete (toolExecutionNotifications).
  ordered_json notifications = ordered_json::array();
  for (const auto& u : report.unreadable)
    notifications.push_back(
        {{"level", "error"},
         {"message", {{"text", u.trace + ": " + u.error}}},
         {"locations", ordered_json::array({{{"physicalLocation", {{"artifactLocation", {{"uri", u.trace}}}}}}})}});
  ordered_json invocation = {{"executionSuccessful", report.unreadable.empty()},
                             {"toolExecutionNotifications", std::move(notifications)}};
  ordered_json sarif;
  sarif["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  sarif["version"] = "2.1.0";
  sarif["runs"] = ordered_json::array(
      {{{"tool",
         {{"driver",
           {{"name", "asyncwatch"},
            {"version", ASYNCWATCH_VERSION},
            {"rules", std::move(rules)}}}}},
        {"invocations", ordered_json::array({std::move(invocation)})},
        {"results", std::move(results)}}});
  return sarif;
}

}  // namespace asyncwatch
