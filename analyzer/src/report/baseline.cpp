#include "report/baseline.h"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace asyncwatch {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(fmt::format("--baseline {}: {}", path, why));
}
}  // namespace

std::set<std::string> read_baseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot be read");
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) fail(path, "is not a JSON document");
  std::set<std::string> out;
  if (doc.value("schema", "") == "asyncwatch-report") {
    const auto& findings = doc["findings"];
    if (!findings.is_array()) fail(path, "has no findings array");
    for (const auto& f : findings) {
      if (!f.is_object() || !f.contains("fingerprint") || !f["fingerprint"].is_string())
        fail(path, "has findings without a fingerprint (written by an older asyncwatch: write it again)");
      out.insert(f["fingerprint"].get<std::string>());
    }
    return out;
  }
  if (doc.contains("runs") && doc["runs"].is_array()) {  // SARIF written by asyncwatch
    for (const auto& run : doc["runs"]) {
      if (!run.is_object() || !run.contains("results") || !run["results"].is_array()) continue;
      for (const auto& r : run["results"]) {
        if (!r.is_object() || !r.contains("partialFingerprints")) fail(path, "has results without partialFingerprints");
        const auto& pf = r["partialFingerprints"];
        if (!pf.is_object() || !pf.contains("asyncwatch/v1") || !pf["asyncwatch/v1"].is_string())
          fail(path, "has results without an asyncwatch/v1 fingerprint");
        out.insert(pf["asyncwatch/v1"].get<std::string>());
      }
    }
    return out;
  }
  fail(path, "is neither an asyncwatch JSON report nor a SARIF log");
}

}  // namespace asyncwatch
