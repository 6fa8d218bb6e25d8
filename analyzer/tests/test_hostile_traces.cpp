// Hostile and broken traces: names holding terminal escapes are shown
// escaped in text and exact in JSON/SARIF; an unreadable trace among others is named and the
// others reported (exit status 3); each memory bound (options.h, Limits) gives its error.
#include "findings/analysis.h"
#include "command_runner.h"
#include "report/printable.h"
#include "report/reports.h"
#include "test_util.h"
#include "timeline/timeline_export.h"
#include "read/trace_reader.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

const std::string kGolden = ASYNCWATCH_GOLDEN_DIR;

// The first byte a terminal would act on (a control character other than the line ends, DEL,
// a C1 control in UTF-8), or npos.
size_t first_terminal_control(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return i;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return i;
  }
  return std::string::npos;
}

std::string around(const std::string& s, size_t i) { return printable(s.substr(i > 40 ? i - 40 : 0, 80)); }

std::string fresh_dir(const std::string& name) {
  std::string d = tmp_path(name);
  std::filesystem::remove_all(d);
  mkdir(d.c_str(), 0755);
  return d;
}

// Escapes in every string a trace carries.
const std::string kExe = "/work/app/\x1b[2Jevil";
const std::string kCmd = "evil \x1b[2J\x1b[H\nerror: forged line \xff\x7f\xc2\x9b";
const std::string kHost = "host\x1b]0;pwned\x07";
const std::string kDevice = "NVIDIA \x1b[31mH200\r";
const std::string kThread = "thr\x1b[1m";
const std::string kModule = "/nonexistent/lib\x1b[2Jx.so\nerror: forged module";
const std::string kKernel =
    "kern\x1b[5m\xe2\x80\xae"
    "el";
const std::string kEnv = "CUDA_MODULE_LOADING=\x1b[2J;CUDA_LAUNCH_BLOCKING=0";

TraceBuilder escaped_trace() {
  TraceBuilder b(4343, kExe.c_str());
  std::snprintf(b.header().command_line, sizeof b.header().command_line, "%s", kCmd.c_str());
  std::snprintf(b.header().hostname, sizeof b.header().hostname, "%s", kHost.c_str());
  b.cuda_env(kEnv.c_str());
  b.thread_info(1, kThread.c_str());
  b.device(1, kDevice.c_str(), false);
  b.module(1, kModule, 0, 0x400000, 0x500000);
  uint32_t s = b.stack(1, {0x401234, 0x402345});
  uint32_t k = b.string(1, kKernel);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, k, t, t + 3 * kUs));
  t += 10 * kUs;
  b.event(1, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                             MemoryKind::Pageable, t, t + 20 * kMs, 1 << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
  return b;
}

}  // namespace

TEST(Printable, EscapesWhatATerminalWouldActOn) {
  EXPECT_EQ(printable("plain /src/a.cu:12 (x) [y]"), "plain /src/a.cu:12 (x) [y]");
  EXPECT_EQ(printable("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("bell\x07 del\x7f"), "bell\\x07 del\\x7f");
  EXPECT_EQ(printable("back\\slash"), "back\\\\slash");  // so that "\x1b" in a name is not an escape
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("bad \xff\xfe"), "bad \\xff\\xfe");
  EXPECT_EQ(printable("\xc2\x9b"
                      "2J"),
            "\\u009b2J");  // C1 CSI
  EXPECT_EQ(printable("\xe2\x80\xae"
                      "txt"),
            "\\u202etxt");  // right-to-left override
  EXPECT_EQ(printable("a\xe2\x80\xa8"
                      "b"),
            "a\\u2028b");                                   // line separator
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("cut \xe2\x9c"), "cut \\xe2\\x9c");   // truncated sequence
  EXPECT_EQ(printable("say \"hi\""), "say \"hi\"");
  EXPECT_EQ(printable("say \"hi\"", true), "say \\\"hi\\\"");
}

// The text report of the crafted trace through the command: no byte a terminal acts on, the
// escapes visible, and no forged line; the JSON keeps every string exact (invalid UTF-8 becomes
// U+FFFD, as docs/report-json.md says).
TEST(EscapedTrace, TextReportShowsEscapesJsonKeepsThemExact) {
  std::string dir = fresh_dir("escaped");
  std::string trace = dir + "/evil\x1b[2J\n.awtrace";
  escaped_trace().write(trace);
  auto r = asyncwatch_command({"report", "--colour", "never", dir});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t bad = first_terminal_control(r.out);
  EXPECT_EQ(bad, std::string::npos) << "raw control byte in the text report near: " << around(r.out, bad);
  EXPECT_EQ(first_terminal_control(r.err), std::string::npos) << printable(r.err);
  for (const char* shown : {"evil \\x1b[2J\\x1b[H\\nerror: forged line \\xff\\x7f\\u009b",  // command line
                            "evil\\x1b[2J\\n.awtrace",                                      // trace path
                            "device NVIDIA \\x1b[31mH200\\r",                               // device
                            "lib\\x1b[2Jx.so\\nerror: forged module",                       // module (note, frames)
                            "kernel kern\\x1b[5m\\u202eel"})                                // kernel name
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  EXPECT_EQ(r.out.find("\nerror: forged"), std::string::npos);
  // Colour on: our own escapes only.
  auto c = asyncwatch_command({"report", "--colour", "always", dir});
  EXPECT_EQ(c.status, 0);
  EXPECT_EQ(c.out.find("\x1b[2J"), std::string::npos);
  EXPECT_NE(c.out.find("\x1b[1m"), std::string::npos);

  auto j = asyncwatch_command({"report", "--format", "json", dir});
  ASSERT_EQ(j.status, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  const auto& p = doc["processes"][0];
  EXPECT_EQ(p["executable"], kExe);
  std::string cmd_json = kCmd;  // the invalid byte 0xff becomes U+FFFD; the rest stays exact
  cmd_json.replace(cmd_json.find('\xff'), 1, "\xef\xbf\xbd");
  EXPECT_EQ(p["command_line"], cmd_json);
  EXPECT_EQ(p["device"], kDevice);
  EXPECT_EQ(p["trace"], trace);
  bool module_note = false;
  for (const auto& n : p["notes"]) module_note = module_note || n.get<std::string>().find(kModule) != std::string::npos;
  EXPECT_TRUE(module_note) << p["notes"].dump();
  ASSERT_EQ(doc["findings"].size(), 1u);
  EXPECT_EQ(doc["findings"][0]["waited_for"][0]["kernel"], kKernel);
  EXPECT_EQ(doc["findings"][0]["stack"][0]["module"], kModule);

  auto s = asyncwatch_command({"report", "--format", "sarif", dir});
  ASSERT_EQ(s.status, 0) << s.err;
  auto sarif = nlohmann::json::parse(s.out);
  EXPECT_NE(sarif["runs"][0]["results"][0]["message"]["text"].get<std::string>().find(kKernel), std::string::npos);
}

TEST(EscapedTrace, DumpShowsEscapesInsideItsQuotes) {
  std::string dir = fresh_dir("escaped-dump");
  std::string trace = dir + "/t.awtrace";
  TraceBuilder b = escaped_trace();
  b.string(1, "quote\" forged=\"yes");
  b.write(trace);
  auto r = asyncwatch_command({"dump", trace});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t bad = first_terminal_control(r.out);
  EXPECT_EQ(bad, std::string::npos) << "raw control byte in dump near: " << around(r.out, bad);
  for (const char* shown : {"hostname=\"host\\x1b]0;pwned\\x07\"", "executable=\"/work/app/\\x1b[2Jevil\"",
                            "command_line=\"evil \\x1b[2J\\x1b[H\\nerror: forged line \\xff\\x7f\\u009b\"",
                            "cuda_env=\"CUDA_MODULE_LOADING=\\x1b[2J;CUDA_LAUNCH_BLOCKING=0\"", "name=\"thr\\x1b[1m\"",
                            "path=\"/nonexistent/lib\\x1b[2Jx.so\\nerror: forged module\"", "\"kern\\x1b[5m\\u202eel\"",
                            "name=\"NVIDIA \\x1b[31mH200\\r\"", "\"quote\\\" forged=\\\"yes\""})
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
}

// Function and file names come from the symbols of the traced binaries: made up here, through
// the text writer.
TEST(EscapedTrace, SymbolNamesAreEscapedInText) {
  Report report;
  Finding f;
  f.id = FindingId::PageableAsyncCopy;
  f.cause = Cause::Staged;
  f.api = "cudaMemcpyAsync";
  f.has_direction = true;
  f.direction = Direction::HtoD;
  f.count = 1;
  f.bytes = 1 << 20;
  f.blocked.add(5 * kMs);
  f.call_site_known = true;
  f.call_site.function = "evil\x1b[2J(int)";
  f.call_site.file = "/src/a\nwarning: b.cu";
  f.call_site.line = 3;
  f.call_site.module = "/bin/\x1b[31mapp";
  f.stack = {f.call_site};
  report.findings.push_back(std::move(f));
  std::ostringstream out;
  write_report_text(out, report, TextStyle{});
  std::string text = out.str();
  EXPECT_EQ(first_terminal_control(text), std::string::npos) << printable(text);
  EXPECT_NE(text.find("/src/a\\nwarning: b.cu:3: warning:"), std::string::npos) << text;
  EXPECT_NE(text.find("evil\\x1b[2J(int) at /src/a\\nwarning: b.cu:3 (\\x1b[31mapp)"), std::string::npos) << text;
}

// ---- Unreadable traces among readable ones (item 10) -----------------------------------------

namespace {
// A directory with the seed's trace and four that cannot be read: not a trace, empty, a FIFO
// named like a trace (opening it must not block), a directory named like one.
std::string mixed_dir() {
  std::string d = fresh_dir("mixed-readable");
  write_file(d + "/a-good.awtrace", read_file(kGolden + "/seed-pageable.awtrace"));
  write_file(d + "/b-not-a-trace.awtrace", read_file(kGolden + "/not-a-trace.awtrace"));
  write_file(d + "/c-empty.awtrace", "");
  mkfifo((d + "/d-fifo.awtrace").c_str(), 0600);
  mkdir((d + "/e-dir.awtrace").c_str(), 0755);
  return d;
}
}  // namespace

TEST(UnreadableTraces, LibraryReportsTheOthersAndNamesEach) {
  std::string d = mixed_dir();
  TraceInputs in = expand_trace_inputs({d, d + "/missing.awtrace"});
  ASSERT_EQ(in.paths.size(), 5u);
  Report r = analyze_traces(in.paths, Options{}, in.unreadable);
  ASSERT_EQ(r.processes.size(), 1u);
  ASSERT_EQ(r.unreadable.size(), 5u);
  EXPECT_EQ(r.unreadable[0].trace, d + "/missing.awtrace");
  EXPECT_EQ(r.unreadable[0].error, "No such file or directory");
  EXPECT_EQ(r.unreadable[1].trace, d + "/b-not-a-trace.awtrace");
  EXPECT_EQ(r.unreadable[1].error.rfind("not an asyncwatch trace (wrong magic", 0), 0u) << r.unreadable[1].error;
  EXPECT_EQ(r.unreadable[2].error.rfind("the file is empty", 0), 0u) << r.unreadable[2].error;
  EXPECT_EQ(r.unreadable[3].error, "is not a regular file");
  EXPECT_EQ(r.unreadable[4].error, "is a directory, not a trace file");
  EXPECT_EQ(r.findings.size(), 2u);
}

TEST(UnreadableTraces, ReportPrintsEveryReadableTraceAndExitsThree) {
  std::string d = mixed_dir();
  auto r = asyncwatch_command({"report", d});
  EXPECT_FALSE(r.timed_out) << "a FIFO named like a trace blocked the report";
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("warning: cudaMemcpyAsync (device to host, 2.0 GiB) blocked 1.74 s"), std::string::npos)
      << r.out;
  for (const char* name : {"b-not-a-trace", "c-empty", "d-fifo", "e-dir"}) {
    EXPECT_NE(r.out.find(std::string("mixed-readable/") + name + ".awtrace could not be read: "), std::string::npos)
        << name << "\n"
        << r.out;
    EXPECT_NE(r.err.find(std::string("asyncwatch: ") + d + "/" + name + ".awtrace: "), std::string::npos) << r.err;
  }
  EXPECT_NE(r.out.find("; 4 traces could not be read\n"), std::string::npos) << r.out;

  auto j = asyncwatch_command({"report", "--format", "json", d});
  EXPECT_EQ(j.status, 3);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["processes"].size(), 1u);
  ASSERT_EQ(doc["unreadable_traces"].size(), 4u);
  EXPECT_EQ(doc["unreadable_traces"][3]["trace"], d + "/e-dir.awtrace");
  EXPECT_EQ(doc["unreadable_traces"][3]["error"], "is a directory, not a trace file");

  auto s = asyncwatch_command({"report", "--format", "sarif", d});
  EXPECT_EQ(s.status, 3);
  auto sarif = nlohmann::json::parse(s.out);
  EXPECT_EQ(sarif["runs"][0]["invocations"][0]["executionSuccessful"], false);
  EXPECT_EQ(sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"].size(), 4u);
  EXPECT_EQ(sarif["runs"][0]["results"].size(), 2u);

  // A --fail-on finding wins over the partial status.
  auto f = asyncwatch_command({"report", "--fail-on", "pageable-async-copy", d});
  EXPECT_EQ(f.status, 1);
  // The timeline exports the readable one, names the others.
  auto t = asyncwatch_command({"timeline", d});
  EXPECT_EQ(t.status, 3) << t.err;
  EXPECT_TRUE(nlohmann::json::accept(t.out));
  EXPECT_NE(t.err.find("b-not-a-trace.awtrace: not an asyncwatch trace"), std::string::npos) << t.err;
}

TEST(UnreadableTraces, NoReadableTraceIsExitTwoWithNothingOnStdout) {
  std::string d = fresh_dir("none-readable");
  write_file(d + "/x.awtrace", "garbage");
  auto r = asyncwatch_command({"report", d, d + "/missing"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("x.awtrace: not an asyncwatch trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing: No such file or directory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("asyncwatch: no trace could be read"), std::string::npos) << r.err;
  auto t = asyncwatch_command({"timeline", d});
  EXPECT_EQ(t.status, 2);
  EXPECT_EQ(t.out, "");
}

TEST(UnreadableTraces, RunReportsTheGoodTraceOfTwo) {
  std::string d = fresh_dir("run-mixed");
  CommandOptions o;
  o.env = {"ASYNCWATCH_PRELOAD_LIB=" + kGolden + "/compare_golden.cmake"};
  auto r =
      asyncwatch_command({"run", "-o", d + "/traces", "--", "sh", "-c",
                          "cp '" + kGolden + "/seed-pageable.awtrace' \"$ASYNCWATCH_OUTPUT_DIR/a.awtrace\" && cp '" +
                              kGolden + "/not-a-trace.awtrace' \"$ASYNCWATCH_OUTPUT_DIR/b.awtrace\""},
                         o);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("warning: cudaMemcpyAsync (device to host, 2.0 GiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("b.awtrace could not be read: not an asyncwatch trace"), std::string::npos) << r.out;
}

// ---- Memory bounds (options.h, Limits) --------------------------------------------------------

namespace {
std::string error_with(const TraceBuilder& b, const std::string& name, const Options& o) {
  Report r = analyze_traces({write_trace(b, name)}, o);
  if (r.unreadable.empty()) return "";
  EXPECT_TRUE(r.processes.empty());
  return r.unreadable[0].error;
}

uint64_t t0(TraceBuilder& b) { return b.header().start_monotonic_ns + kMs; }
}  // namespace

TEST(Limits, StacksDefinedOrReferredTo) {
  TraceBuilder b;
  b.thread_info(1, "main");
  for (int i = 0; i < 11; ++i) b.stack(1, {0x401000u + static_cast<uint64_t>(i)});  // none of them used
  Options o;
  o.limits.stacks = 11;
  EXPECT_EQ(error_with(b, "stacks-ok.awtrace", o), "");
  o.limits.stacks = 10;
  std::string e = error_with(b, "stacks.awtrace", o);
  EXPECT_EQ(e.rfind("more than 10 distinct call stacks: beyond the analyzer's limit; raise it with --max-stacks", 0),
            0u)
      << e;
  // Stacks are read from the file when asked for, also after the pass gave back its pages.
  auto file = TraceFile::open(write_trace(b, "stacks-read.awtrace"));
  file->stream_merged([](const RecordView&) {});
  ASSERT_TRUE(file->stack(7));
  EXPECT_EQ(*file->stack(7), std::vector<uint64_t>{0x401006u});
  EXPECT_EQ(file->stack_count(), 11u);
  // Referring to more distinct stacks than the limit (defined or not) stops at the limit too.
  TraceBuilder refs;
  uint64_t t = t0(refs);
  for (uint32_t i = 1; i <= 5; ++i)
    refs.event(1, RecordType::Copy,
               TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyHtoDAsync_v2, Direction::HtoD, MemoryKind::Pinned,
                                  MemoryKind::Device, t + i * kUs, t + i * kUs + 100, 64, 0, 0x5000, 1000 * i));
  o.limits.stacks = 4;
  e = error_with(refs, "stack-refs.awtrace", o);
  EXPECT_EQ(e.rfind("more than 4 distinct call stacks referred to", 0), 0u) << e;
}

TEST(Limits, CallSitesWithFindings) {
  TraceBuilder b;
  uint64_t t = t0(b);
  for (uint64_t i = 0; i < 6; ++i) {
    uint32_t s = b.stack(1, {0x401000 + i});
    b.event(1, RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                               MemoryKind::Pageable, t + i * kMs, t + i * kMs + 500 * kUs, 1 << 20, 0, 0x5000, s));
  }
  Options o;
  o.limits.call_sites = 6;
  Report ok = analyze_traces({write_trace(b, "sites-ok.awtrace")}, o);
  EXPECT_EQ(ok.findings.size(), 6u);
  o.limits.call_sites = 5;
  std::string e = error_with(b, "sites.awtrace", o);
  EXPECT_EQ(e.rfind("more than 5 distinct findings before merging by source line", 0), 0u) << e;
  EXPECT_NE(e.find("raise it with --max-call-sites"), std::string::npos) << e;
  // The command line: the option and its message; the trace is unreadable, so exit status 2.
  std::string p = write_trace(b, "sites-cli.awtrace");
  auto r = asyncwatch_command({"report", "--max-call-sites", "5", p});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("more than 5 distinct findings"), std::string::npos) << r.err;
  r = asyncwatch_command({"report", "--max-call-sites", "6", "--max-stacks", "6", p});
  EXPECT_EQ(r.status, 0) << r.err;
  r = asyncwatch_command({"report", "--max-stacks", "5", p});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("more than 5 distinct call stacks"), std::string::npos) << r.err;
}

TEST(Limits, StringsModulesAndPathBytes) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) b.string(1, "_Z" + std::to_string(i) + "kv");
  for (int i = 0; i < 4; ++i) b.module(1, "/lib/m" + std::to_string(i) + std::string(100, 'x'), 0, 0, 0);
  Options o;
  EXPECT_EQ(error_with(b, "strings-ok.awtrace", o), "");
  o.limits.strings = 3;
  EXPECT_EQ(error_with(b, "strings.awtrace", o).rfind("more than 3 distinct strings", 0), 0u);
  o = Options{};
  o.limits.modules = 3;
  EXPECT_EQ(error_with(b, "modules.awtrace", o).rfind("more than 3 module records", 0), 0u);
  o = Options{};
  o.limits.module_path_bytes = 300;
  EXPECT_EQ(error_with(b, "module-bytes.awtrace", o).rfind("more than 300 bytes of module paths", 0), 0u);
}

TEST(Limits, StreamsInUseAndPendingHostFunctions) {
  TraceBuilder b;
  uint64_t t = t0(b);
  for (uint64_t i = 0; i < 4; ++i) {
    b.event(1, RecordType::StreamCreate, TraceBuilder::stream_create(0x9000 + i, 0, t, t + 100));
    b.event(1, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, t + 200, t + 300, 0, 0x9000 + i));
    t += kUs;
  }
  Options o;
  o.limits.streams = 4;
  EXPECT_EQ(error_with(b, "streams-ok.awtrace", o), "");
  o.limits.streams = 3;
  EXPECT_EQ(error_with(b, "streams.awtrace", o).rfind("more than 3 streams in use at once", 0), 0u);
  // Destroyed streams are not in use.
  TraceBuilder d;
  t = t0(d);
  for (uint64_t i = 0; i < 4; ++i) {
    d.event(1, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, t, t + 100, 0, 0x9000 + i));
    auto destroy = TraceBuilder::stream_create(0x9000 + i, 0, t + 200, t + 300);
    destroy.api = static_cast<uint16_t>(Api::cudaStreamDestroy);
    d.event(1, RecordType::StreamDestroy, destroy);
    t += kUs;
  }
  EXPECT_EQ(error_with(d, "streams-destroyed.awtrace", o), "");

  TraceBuilder h;
  t = t0(h);
  for (uint64_t i = 1; i <= 4; ++i)
    h.event(1, RecordType::HostFuncEnqueue,
            TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, i, t + i * kUs, t + i * kUs + 100));
  o = Options{};
  o.limits.pending_callbacks = 3;
  EXPECT_EQ(error_with(h, "pending.awtrace", o).rfind("more than 3 host functions enqueued and not seen running", 0),
            0u);
  // The timeline leaves the runs it cannot match out, and says how many; it never fails for it.
  std::string p = write_trace(h, "pending-timeline.awtrace");
  std::FILE* null = std::fopen("/dev/null", "w");
  std::vector<UnreadableTrace> unreadable;
  TimelineStats st = write_timeline(null, {p}, 50 * kUs, o.limits, &unreadable);
  std::fclose(null);
  EXPECT_TRUE(unreadable.empty());
  EXPECT_EQ(st.traces, 1u);
  EXPECT_EQ(st.host_functions_dropped, 1u);
}

// A header whose start times make the timeline's clock offset overflow a signed subtraction (the
// fuzzer's input analyzer/tests/fuzz_corpus/946b98a0...: start_monotonic_ns of 2^63): exported,
// in unsigned arithmetic (the sanitizer job would report the overflow).
TEST(HostileHeader, StartTimesThatOverflowTheTimelineOffset) {
  TraceBuilder b;
  b.header().start_monotonic_ns = uint64_t{1} << 63;
  b.header().start_realtime_ns = 0;
  const uint64_t t = 1000;
  b.event(1, RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, 0, t, t + 100, 0, 0));
  std::string p = write_trace(b, "overflowing-start.awtrace");
  std::FILE* null = std::fopen("/dev/null", "w");
  std::vector<UnreadableTrace> unreadable;
  TimelineStats st = write_timeline(null, {p}, 50 * kUs, Limits{}, &unreadable);
  std::fclose(null);
  EXPECT_TRUE(unreadable.empty());
  EXPECT_EQ(st.traces, 1u);
}
