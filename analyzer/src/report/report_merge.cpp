#include "report/report_merge.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <stdexcept>

namespace asyncwatch {

namespace {
using json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(fmt::format("{}: {}", path, why));
}

json read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot be read");
  json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != "asyncwatch-report")
    fail(path, "is not an asyncwatch JSON report");
  if (doc.value("schema_version", 0) != 1) fail(path, "has another schema_version than 1");
  for (const char* key : {"processes", "unreadable_traces", "findings"})
    if (!doc.contains(key) || !doc[key].is_array()) fail(path, fmt::format("has no {} array", key));
  for (const auto& f : doc["findings"])
    if (!f.is_object() || !f.contains("fingerprint") || !f["fingerprint"].is_string() || !f.contains("blocked_ns") ||
        !f["blocked_ns"].is_object())
      fail(path, "has findings without a fingerprint (written by an older asyncwatch)");
  return doc;
}

uint64_t u64(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

void add_u64(json& into, const json& from, const char* key) { into[key] = u64(into, key) + u64(from, key); }

// The NVTX ranges of one finding in two reports: calls added by name, most calls first.
void merge_ranges(json& into, const json& from) {
  if (!from.contains("ranges") || !from["ranges"].is_array()) return;
  std::map<std::string, uint64_t> calls;
  std::vector<std::string> order;
  for (const json* side : {static_cast<const json*>(&into), &from})
    if (side->contains("ranges") && (*side)["ranges"].is_array())
      for (const auto& r : (*side)["ranges"]) {
        if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) continue;
        std::string name = r["name"].get<std::string>();
        if (!calls.count(name)) order.push_back(name);
        calls[name] += u64(r, "calls");
      }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return calls[a] != calls[b] ? calls[a] > calls[b] : a < b;
  });
  json out = json::array();
  for (const auto& n : order) out.push_back(json{{"name", n}, {"calls", calls[n]}});
  into["ranges"] = out;
}
}  // namespace

nlohmann::ordered_json merge_json_reports(const std::vector<std::string>& paths) {
  json out;
  std::map<std::string, size_t> by_fingerprint;  // -> index in findings
  std::vector<uint64_t> biggest_part;            // calls of the part whose median is kept
  json findings = json::array();
  for (const auto& path : paths) {
    json doc = read_report(path);
    if (out.is_null()) {
      out = doc;
      out["findings"] = json::array();
      out["processes"] = json::array();
      out["unreadable_traces"] = json::array();
      for (auto& [k, v] : out["summary"].items())
        if (v.is_number()) v = 0;
    } else if (doc["thresholds"] != out["thresholds"]) {
      fail(path, "was written with other thresholds than " + paths.front());
    }
    for (auto& p : doc["processes"]) out["processes"].push_back(p);
    for (auto& u : doc["unreadable_traces"]) out["unreadable_traces"].push_back(u);
    for (const char* k : {"async_calls", "async_calls_async", "async_calls_blocking", "blocked_ns_total"})
      add_u64(out["summary"], doc["summary"], k);
    for (auto& f : doc["findings"]) {
      std::string fp = f["fingerprint"];
      auto it = by_fingerprint.find(fp);
      if (it == by_fingerprint.end()) {
        by_fingerprint.emplace(fp, findings.size());
        biggest_part.push_back(u64(f, "count"));
        findings.push_back(f);
        continue;
      }
      json& g = findings[it->second];
      uint64_t calls = u64(f, "count");
      if (calls > biggest_part[it->second]) {
        biggest_part[it->second] = calls;
        g["blocked_ns"]["median"] = f["blocked_ns"]["median"];
      }
      add_u64(g, f, "count");
      add_u64(g, f, "bytes");
      if (g.contains("impact_ns") && f.contains("impact_ns")) add_u64(g, f, "impact_ns");
      add_u64(g["blocked_ns"], f["blocked_ns"], "total");
      g["blocked_ns"]["min"] = std::min(u64(g["blocked_ns"], "min"), u64(f["blocked_ns"], "min"));
      g["blocked_ns"]["max"] = std::max(u64(g["blocked_ns"], "max"), u64(f["blocked_ns"], "max"));
      if (g.contains("evidence") && f.contains("evidence")) {
        add_u64(g["evidence"], f["evidence"], "checked");
        add_u64(g["evidence"], f["evidence"], "completed_at_return");
      }
      for (auto& p : f["processes"]) g["processes"].push_back(p);
      merge_ranges(g, f);
      g["in_baseline"] = g.value("in_baseline", false) && f.value("in_baseline", false);
    }
  }
  uint64_t wall = 0;
  for (const auto& p : out["processes"]) wall += u64(p, "wall_ns");
  for (auto& f : findings) {
    f["share_of_wall"] = wall ? static_cast<double>(u64(f["blocked_ns"], "total")) / static_cast<double>(wall) : 0.0;
    if (f.contains("impact_ns"))
      f["impact_share"] = wall ? static_cast<double>(u64(f, "impact_ns")) / static_cast<double>(wall) : 0.0;
  }
  // Most impact first, as the analysis ranks (reports without impacts: by blocked time).
  std::stable_sort(findings.begin(), findings.end(), [](const json& a, const json& b) {
    uint64_t ia = a.contains("impact_ns") ? u64(a, "impact_ns") : 0,
             ib = b.contains("impact_ns") ? u64(b, "impact_ns") : 0;
    if (ia != ib) return ia > ib;
    uint64_t ta = u64(a["blocked_ns"], "total"), tb = u64(b["blocked_ns"], "total");
    if (ta != tb) return ta > tb;
    return a["fingerprint"].get<std::string>() < b["fingerprint"].get<std::string>();
  });
  out["summary"]["findings"] = findings.size();
  out["summary"]["findings_not_shown"] = 0;
  out["summary"]["findings_in_baseline"] = nullptr;
  out["findings"] = std::move(findings);
  return out;
}

}  // namespace asyncwatch
