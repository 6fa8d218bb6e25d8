// Text, JSON and SARIF writers.
#include "findings/analysis.h"
#include "report/ascii_words.h"
#include "report/json_writer.h"
#include "report/reports.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {
Report seed_report() {
  TraceBuilder b(4242, "/work/app/seed");
  add_seed_calls(b, "/work/app/seed", "seed", "_Z5dummyv");
  return analyze_traces({write_trace(b, "seed-report.awtrace")}, Options{});
}
}  // namespace

TEST(Reports, TextLooksLikeACompilerDiagnostic) {
  std::ostringstream out;
  write_report_text(out, seed_report(), TextStyle{});
  std::string text = out.str();
  // The module is not on this machine: no source line, so the site is named by module and offset.
  EXPECT_NE(
      text.find(
          "\nseed+0x401300: warning: cudaMemcpyAsync (device to host, 2.0 GiB) blocked 1.74 s: the destination is "
          "pageable host memory, so the copy waited for the stream (kernel dummy) and ran synchronously; "
          "allocate it with cudaMallocHost or register it with cudaHostRegister [pageable-async-copy]\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\n    impact: fixing this saves about "), std::string::npos) << text;
  EXPECT_NE(text.find("#  severity  rule"), std::string::npos) << text;
  EXPECT_EQ(text.find("??"), std::string::npos) << text;
  EXPECT_EQ(text.find("\033["), std::string::npos);  // no colour when not asked
  std::ostringstream coloured;
  write_report_text(coloured, seed_report(), TextStyle{true});
  EXPECT_NE(coloured.str().find("\033["), std::string::npos);
}

TEST(Reports, JsonFollowsTheContract) {
  auto j = nlohmann::ordered_json::parse(report_json_text(seed_report()));
  EXPECT_EQ(j["schema"], "asyncwatch-report");
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["findings"].size(), 1u);
  auto f = j["findings"][0];
  for (const char* key :
       {"id", "severity", "message", "api", "driver_api", "direction", "host_memory", "cause", "kernel", "count",
        "bytes", "blocked_ns", "share_of_wall", "evidence", "waited_for", "call_site", "stack", "processes"})
    EXPECT_TRUE(f.contains(key)) << key;
  EXPECT_EQ(f["id"], "pageable-async-copy");
  EXPECT_EQ(f["direction"], "DtoH");
  EXPECT_EQ(f["host_memory"], "pageable");
  EXPECT_EQ(f["cause"], "waited-for-stream");
  EXPECT_EQ(f["driver_api"], "cuMemcpyDtoHAsync_v2");
  EXPECT_EQ(f["blocked_ns"]["total"], 1740 * kMs);
  EXPECT_EQ(f["waited_for"][0]["kernel"], "dummy");
  EXPECT_EQ(f["evidence"]["completed_at_return"], 1);
  EXPECT_EQ(f["call_site"]["address"], "0x401300");
  EXPECT_TRUE(f["call_site"]["file"].is_null());
  auto p = j["processes"][0];
  for (const char* key : {"pid", "ppid", "executable", "command_line", "trace", "closed_cleanly", "wall_ns", "device",
                          "simulated", "records", "records_lost", "blocked_ns_total"})
    EXPECT_TRUE(p.contains(key)) << key;
  for (const char* key : {"async_calls", "async_calls_async", "async_calls_blocking", "blocked_ns_total", "findings"})
    EXPECT_TRUE(j["summary"].contains(key)) << key;
}

// DWARF's line 0 (clang -O2 made the launches of an if and its else one call: cuda-samples'
// jacobiCudaGraphs) is no source line: the file without ":0", the JSON line null.
TEST(Reports, LineZeroIsNoSourceLine) {
  Report r = seed_report();
  ASSERT_EQ(r.findings.size(), 1u);
  Frame& site = r.findings[0].call_site;
  site.function = "JacobiMethodGpu(float const*)";
  site.file = "/src/jacobi.cu";
  site.line = 0;
  std::ostringstream out;
  write_report_text(out, r, TextStyle{});
  std::string text = out.str();
  EXPECT_NE(text.find("\n/src/jacobi.cu: warning: cudaMemcpyAsync"), std::string::npos) << text;
  EXPECT_NE(text.find("JacobiMethodGpu(float const*) at /src/jacobi.cu (line 0: code the compiler merged from "
                      "several lines)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("jacobi.cu:0"), std::string::npos) << text;
  auto j = nlohmann::ordered_json::parse(report_json_text(r));
  EXPECT_EQ(j["findings"][0]["call_site"]["file"], "/src/jacobi.cu");
  EXPECT_TRUE(j["findings"][0]["call_site"]["line"].is_null());
}

TEST(Reports, SarifHasRulesAndResults) {
  Report r = seed_report();
  r.findings[0].call_site_known = true;
  r.findings[0].call_site.file = "/src/seed.cu";
  r.findings[0].call_site.line = 52;
  auto s = nlohmann::ordered_json::parse(report_sarif_text(r));
  EXPECT_EQ(s["version"], "2.1.0");
  auto run = s["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "asyncwatch");
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), static_cast<size_t>(FindingId::Count));
  auto res = run["results"][0];
  EXPECT_EQ(res["ruleId"], "pageable-async-copy");
  EXPECT_EQ(res["level"], "warning");
  // Outside the source root (none set here): an absolute file: URI (no schemeless paths).
  EXPECT_EQ(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///src/seed.cu");
  EXPECT_EQ(res["locations"][0]["physicalLocation"]["region"]["startLine"], 52);
  // The impact travels to code scanning too (what fixing it saves, and on what figures).
  EXPECT_EQ(res["properties"]["impact_ns"], r.findings[0].impact_ns);
  EXPECT_GT(res["properties"]["impact_ns"].get<uint64_t>(), 0u);
  EXPECT_TRUE(res["properties"].contains("impact_basis"));
}

TEST(Reports, InvalidUtf8InTraceStringsDoesNotBreakJson) {
  TraceBuilder b(4243, "/work/app/\xff\xfe");
  b.thread_info(1, "t\xc3");
  uint32_t k = b.string(1, "bad\xff\x80name");
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, k, t, t + 5 * kMs, tf::kFlagFirstLaunch));
  std::string p = write_trace(b, "utf8.awtrace");
  Report r = analyze_traces({p}, Options{});
  std::string out = report_json_text(r);
  EXPECT_NE(out.find("bad"), std::string::npos);
  auto parsed = nlohmann::json::parse(out);
  EXPECT_EQ(parsed["findings"][0]["id"], "blocking-launch");
}

TEST(Reports, SyncsWithoutAStackHaveNoLocation) {
  TraceBuilder b(4243, "/work/app/syncs");
  b.thread_info(1, "syncs");
  uint64_t t = b.header().start_monotonic_ns + kMs;
  for (int i = 0; i < 3; ++i) {  // no stack: grouped by API under no call site
    b.event(1, RecordType::Sync,
            TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, t, t + 2 * kMs));
    t += 3 * kMs;
  }
  Report r = analyze_traces({write_trace(b, "syncs-report.awtrace")}, Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  std::ostringstream out;
  write_report_text(out, r, TextStyle{});
  std::string text = out.str();
  EXPECT_NE(text.find("\nnote: cudaStreamSynchronize waited 6.00 ms in total (3 calls, max 2.00 ms): "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" (call site not recorded; set ASYNCWATCH_STACKS=all to record it) [explicit-sync]\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("??"), std::string::npos) << text;
  auto j = nlohmann::ordered_json::parse(report_json_text(r));
  EXPECT_TRUE(j["findings"][0]["call_site"].is_null());
  auto s = nlohmann::ordered_json::parse(report_sarif_text(r));
  // GitHub code scanning shows no result without a location: the traced program, and
  // the message saying why there is no call site.
  auto loc = s["runs"][0]["results"][0]["locations"];
  ASSERT_EQ(loc.size(), 1u);
  EXPECT_EQ(loc[0]["physicalLocation"]["artifactLocation"]["uri"], "file:///work/app/syncs");
  EXPECT_NE(loc[0]["message"]["text"].get<std::string>().find("call site not recorded"), std::string::npos);
}

// The streaming writer must write what nlohmann's dump(2, ' ', false, replace) writes for the same
// document: the golden reports were written that way and must not change.
TEST(JsonWriter, WritesWhatNlohmannDumpWrites) {
  const std::string odd[] = {"",
                             "plain",
                             "q\"uote\\back",
                             "tab\tnl\ncr\rbs\bff\f",
                             std::string("nul\0x", 5),
                             "\x01\x1f\x7f",
                             "caf\xc3\xa9 \xe2\x80\xae",
                             "bad\xff\x80name",
                             "cut\xc3",
                             "\xed\xa0\x80surrogate",
                             "\xf4\x90\x80\x80"
                             "big",
                             "\xe2\x82"};
  const double doubles[] = {0.0, 1.0, 0.5, 1e-05, 0.1234567890123, 123456789012345678.0, 2.5e-300, 1.0 / 3};
  nlohmann::ordered_json doc;
  JsonWriter w;
  w.begin_object();
  w.key("strings");
  w.begin_array();
  nlohmann::ordered_json strings = nlohmann::ordered_json::array();
  for (const auto& s : odd) {
    w.value(s);
    strings.push_back(s);
  }
  w.end_array();
  doc["strings"] = strings;
  w.key("doubles");
  w.begin_array();
  doc["doubles"] = nlohmann::ordered_json::array();
  for (double d : doubles) {
    w.value(d);
    doc["doubles"].push_back(d);
  }
  w.end_array();
  w.field("neg", int32_t{-1});
  doc["neg"] = int32_t{-1};
  w.field("big", UINT64_MAX);
  doc["big"] = UINT64_MAX;
  w.field("min", INT64_MIN);
  doc["min"] = INT64_MIN;
  w.field("yes", true);
  doc["yes"] = true;
  w.null_field("none");
  doc["none"] = nullptr;
  w.key("empty_array");
  w.begin_array();
  w.end_array();
  doc["empty_array"] = nlohmann::ordered_json::array();
  w.key("empty_object");
  w.begin_object();
  w.end_object();
  doc["empty_object"] = nlohmann::ordered_json::object();
  w.key("nested");
  w.begin_array();
  w.begin_object();
  w.field("k\x01\xff", "v");
  w.key("inner");
  w.begin_array();
  w.value(1);
  w.begin_array();
  w.end_array();
  w.end_array();
  w.end_object();
  w.end_array();
  doc["nested"] =
      nlohmann::ordered_json::array({{{"k\x01\xff", "v"}, {"inner", {1, nlohmann::ordered_json::array()}}}});
  w.end_object();
  EXPECT_EQ(w.text(), doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

// The word-at-a-time tests against a byte at a time: one odd byte (every value) at every place of
// strings of every length up to three words, in plain text, so the tail's word is covered too.
TEST(AsciiWords, WordTestsAnswerAsTheBytesDo) {
  using namespace asyncwatch::ascii_words;
  auto json_bad = [](uint64_t w) { return has_high(w) | has_below(w, 0x20) | has_byte(w, '"') | has_byte(w, '\\'); };
  auto json_byte = [](uint8_t c) { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\'; };
  auto html_bad = [](uint64_t w) {
    return has_byte(w, '&') | has_byte(w, '<') | has_byte(w, '>') | has_byte(w, '"') | has_byte(w, '\'');
  };
  auto html_byte = [](uint8_t c) { return c == '&' || c == '<' || c == '>' || c == '"' || c == '\''; };
  auto printable_bad = [](uint64_t w) { return has_high(w) | has_below(w, 0x20) | has_byte(w, 0x7f); };
  auto printable_byte = [](uint8_t c) { return c < 0x20 || c >= 0x7f; };
  size_t checked = 0;
  for (size_t len = 0; len <= 24; ++len)
    for (size_t at = 0; at < std::max<size_t>(len, 1); ++at)
      for (int v = 0; v < 256; ++v) {
        std::string s(len, 'a');
        if (len) s[at] = static_cast<char>(v);
        const auto c = static_cast<uint8_t>(v);
        const bool odd = len > 0;
        ASSERT_EQ(no_word(s, json_bad), !(odd && json_byte(c))) << len << " " << at << " " << v;
        ASSERT_EQ(no_word(s, html_bad), !(odd && html_byte(c))) << len << " " << at << " " << v;
        ASSERT_EQ(no_word(s, printable_bad), !(odd && printable_byte(c))) << len << " " << at << " " << v;
        ++checked;
      }
  EXPECT_GT(checked, 70000u);
}

TEST(JsonWriter, StreamsToAFile) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    JsonWriter w(f);
    w.begin_array();
    for (int i = 0; i < 100000; ++i) w.value(i);  // several flushes of the buffer
    w.end_array();
    EXPECT_LT(w.text().size(), size_t{1} << 17);  // written as it goes, not kept
  }
  std::string back(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  ASSERT_EQ(std::fread(back.data(), 1, back.size(), f), back.size());
  std::fclose(f);
  auto parsed = nlohmann::json::parse(back);
  ASSERT_EQ(parsed.size(), 100000u);
  EXPECT_EQ(parsed[99999], 99999);
}

// Lost records are reported with where and why (LostRecords in band), not only as a count.
TEST(Reports, LostRecordsSayWhenWhereAndWhy) {
  TraceBuilder b(4243, "/work/app/seed");
  add_seed_calls(b, "/work/app/seed", "seed", "_Z5dummyv");
  tf::LostRecord lost{};
  lost.reason = static_cast<uint32_t>(tf::LostReason::FileLimit);
  lost.count = 12;
  lost.first_lost_ns = b.header().start_monotonic_ns + 2'000'000;
  lost.last_lost_ns = b.header().start_monotonic_ns + 5'000'000;
  b.add(9, RecordType::Lost, lost);
  Report r = analyze_traces({write_trace(b, "lost-report.awtrace")}, Options{});
  ASSERT_EQ(r.processes.size(), 1u);
  const auto& p = r.processes[0];
  ASSERT_EQ(p.lost.size(), 1u);
  EXPECT_EQ(p.lost[0].tid, 9u);
  EXPECT_EQ(p.lost[0].count, 12u);
  EXPECT_EQ(p.lost[0].first_ns, 2'000'000u);
  EXPECT_EQ(p.lost[0].reason, "file-limit");
  bool noted = false;
  for (const auto& n : p.notes)
    noted |= n.find("12 records were lost: thread 9: 12 from 2.00 ms to 5.00 ms (the trace file could not grow") !=
             std::string::npos;
  EXPECT_TRUE(noted);
  auto j = nlohmann::ordered_json::parse(report_json_text(r));
  ASSERT_EQ(j["processes"][0]["lost"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["lost"][0]["reason"], "file-limit");
  EXPECT_EQ(j["processes"][0]["lost"][0]["last_ns"], 5'000'000);
}
