// SARIF for GitHub code scanning (locations, base ids, fingerprints) and the finding
// fingerprint itself (stable across runs, processes, checkouts and moved lines).
#include "findings/analysis.h"
#include "command_runner.h"
#include "report/fingerprint.h"
#include "report/reports.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

Finding copy_finding(const std::string& file, int line, const std::string& function) {
  Finding f;
  f.id = FindingId::PageableAsyncCopy;
  f.api = "cudaMemcpyAsync";
  f.count = 2;
  f.blocked.add(1000000);
  f.blocked.add(3000000);
  f.call_site_known = !file.empty() || !function.empty();
  f.call_site.file = file;
  f.call_site.line = line;
  f.call_site.function = function;
  f.call_site.module = "/opt/app/bin/app";
  f.call_site.address = 0x401234;
  f.processes.push_back(PerProcess{77, 2, 4000000, -1});
  f.set_key();
  return f;
}

}  // namespace

TEST(Fingerprint, StableWhenTheLineMovesAndAcrossCheckouts) {
  std::string a = tmp_path("checkout-a"), b = tmp_path("checkout-b");
  mkdir(a.c_str(), 0755);
  mkdir(b.c_str(), 0755);
  write_file(a + "/main.cu", "int x;\n  cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s);\n");
  // Another checkout elsewhere, two lines inserted above and the indentation changed.
  write_file(b + "/main.cu", "// new\n// lines\nint x;\n\tcudaMemcpyAsync(h, d, n,  cudaMemcpyDeviceToHost, s);\n");
  Finding fa = copy_finding(a + "/main.cu", 2, "run()");
  Finding fb = copy_finding(b + "/main.cu", 4, "run()");
  fb.processes[0].pid = 99;  // another process, another address
  fb.call_site.address = 0x7f0000401234;
  std::string pa = finding_fingerprint(fa, a), pb = finding_fingerprint(fb, b);
  EXPECT_TRUE(std::regex_match(pa, std::regex("[0-9a-f]{16}"))) << pa;
  EXPECT_EQ(pa, pb);
  // Another line, another rule or another function: another fingerprint.
  write_file(b + "/main.cu", "cudaMemcpyAsync(h2, d, n, cudaMemcpyDeviceToHost, s);\n");
  EXPECT_NE(finding_fingerprint(copy_finding(b + "/main.cu", 1, "run()"), b), pa);
  Finding other_rule = copy_finding(a + "/main.cu", 2, "run()");
  other_rule.id = FindingId::ManagedMemoryCopy;
  EXPECT_NE(finding_fingerprint(other_rule, a), pa);
  EXPECT_NE(finding_fingerprint(copy_finding(a + "/main.cu", 2, "other()"), a), pa);
  // Source not readable: the line number stands in for its text.
  EXPECT_NE(finding_fingerprint(copy_finding("/nonexistent/main.cu", 2, "run()"), "/nonexistent"),
            finding_fingerprint(copy_finding("/nonexistent/main.cu", 3, "run()"), "/nonexistent"));
}

TEST(Fingerprint, SourceRootIsTheGitTopLevel) {
  std::string top = tmp_path("repo");
  mkdir(top.c_str(), 0755);
  mkdir((top + "/.git").c_str(), 0755);
  mkdir((top + "/src").c_str(), 0755);
  char old[4096];
  ASSERT_TRUE(getcwd(old, sizeof old));
  ASSERT_EQ(chdir((top + "/src").c_str()), 0);
  std::string root = source_root("");
  ASSERT_EQ(chdir(old), 0);
  char real[4096];
  ASSERT_TRUE(realpath(top.c_str(), real));
  EXPECT_EQ(root, real);
  EXPECT_EQ(path_below(root + "/src/a.cu", root), "src/a.cu");
  EXPECT_EQ(path_below("/elsewhere/a.cu", root), "");
}

TEST(Sarif, EveryResultHasALocationBaseIdsAndFingerprints) {
  std::string root = tmp_path("src-root");
  mkdir(root.c_str(), 0755);
  write_file(root + "/my app.cu", "x\ncudaMemcpyAsync(a);\n");
  Report r;
  ProcessSummary p;
  p.pid = 77;
  p.executable = "/opt/app/bin/app";
  r.processes.push_back(p);
  r.source_root = root;
  r.findings.push_back(copy_finding(root + "/my app.cu", 2, "run()"));    // below the root
  r.findings.push_back(copy_finding("/usr/include/x.h", 9, "helper()"));  // outside it
  r.findings.push_back(copy_finding("", 0, "cusparseSpMV"));              // no source line
  r.findings.push_back(copy_finding("", 0, ""));                          // no call site
  r.findings.back().stack.clear();
  for (auto& f : r.findings) f.fingerprint = finding_fingerprint(f, root);
  nlohmann::json doc = nlohmann::json::parse(report_sarif_text(r));
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file://" + root + "/");
  const auto& results = run["results"];
  ASSERT_EQ(results.size(), 4u);
  for (const auto& res : results) {
    ASSERT_EQ(res["locations"].size(), 1u) << res.dump();
    EXPECT_TRUE(res["locations"][0].contains("physicalLocation")) << res.dump();
    EXPECT_TRUE(res["partialFingerprints"]["asyncwatch/v1"].is_string());
  }
  const auto& a0 = results[0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(a0["artifactLocation"]["uri"], "my%20app.cu");
  EXPECT_EQ(a0["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(a0["region"]["startLine"], 2);
  EXPECT_EQ(results[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], "run()");
  const auto& a1 = results[1]["locations"][0]["physicalLocation"]["artifactLocation"];
  EXPECT_EQ(a1["uri"], "file:///usr/include/x.h");
  EXPECT_FALSE(a1.contains("uriBaseId"));
  // Without a source line: the module with line 1 as its region (GitHub shows no result without
  // one), module+offset and the function as logical locations.
  const auto& l2 = results[2]["locations"][0];
  EXPECT_EQ(l2["physicalLocation"]["artifactLocation"]["uri"], "file:///opt/app/bin/app");
  EXPECT_EQ(l2["physicalLocation"]["region"]["startLine"], 1);
  ASSERT_EQ(l2["logicalLocations"].size(), 2u) << l2.dump();
  EXPECT_EQ(l2["logicalLocations"][0]["kind"], "module");
  EXPECT_EQ(l2["logicalLocations"][1]["fullyQualifiedName"], "cusparseSpMV");
  // No call site at all: the traced program.
  EXPECT_EQ(results[3]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///opt/app/bin/app");
  // Rules: help.markdown, and a full description that is not the short one.
  for (const auto& rule : run["tool"]["driver"]["rules"]) {
    EXPECT_TRUE(rule["help"]["markdown"].is_string());
    EXPECT_NE(rule["fullDescription"]["text"], rule["shortDescription"]["text"]);
  }
}
