// libFuzzer target for the reader and the analysis (build with clang, as .ci/test's fuzz job does:
//   cmake -DCMAKE_CXX_COMPILER=clang++ -DASYNCWATCH_BUILD_FUZZERS=ON -DASYNCWATCH_SANITIZE=address,undefined ...
//   build-clang-asan/bin/asyncwatch_fuzz_reader -max_len=135168 NEW_DIR analyzer/tests/fuzz_corpus/
// new inputs go to the first directory; never name the checked-in corpus first). The ctest test
// fuzz.reader-smoke runs it on the checked-in corpus for a bounded number of inputs.
// Every input must give a report or a TraceError, nothing else; the text report must hold no raw
// control character (check_text_is_printable), and the JSON and SARIF documents must be built.
//
// tests/fuzz_corpus/ (40 files, 520 KB): the golden traces, also with their trailing zeros cut
// (the padding below restores them), fuzzed for 32 minutes, the result
// minimised with -merge=1, then cut to 40 inputs by a greedy cover of its coverage edges that
// prefers small files: 91 % of the 4,137 edges of the whole merged corpus. To refresh it: fuzz into a
// new directory seeded with it and the golden traces, -merge=1 the result and keep a few dozen.
// One more input, 0d389eae...: the crafted trace of test_hostile_traces.cpp (escaped_trace(),
// its trailing zeros cut), whose strings hold ESC, CR/LF, DEL, C1 and U+202E: without it the
// mutations hardly ever put such a byte into a name that is printed (a sanitizer that let ESC
// through went unnoticed for 7,000 inputs), with it check_text_is_printable() sees them at once.
// One more, 8dc7fe37...: a flight-recorder trace (version 6: kConfigFlight, the header's flight_*
// fields, a summary block and a ring block "BLKR" of 20 copies; its trailing zeros cut), so that
// mutations reach the ring's metadata (sequence numbers, magics, the header's ring size).
// One more, ac1fef99...: a version-7 trace whose stacks hold a thread's own Python frames then a
// lender's (StackRecord.python_own; the trace of test Findings.OwnPythonFramesBeforeBorrowedOnes,
// its trailing zeros cut), so that mutations reach the split of own and borrowed frames.
//
// Each input is read twice when its length is not a whole trace (header + whole 64 KiB blocks):
// once as it is (the header and truncation checks), and once zero-padded to the next block
// boundary, as a writer that was killed leaves its preallocated space. A valid trace is at
// least 69,632 bytes, almost all zero fill; the padding lets a few hundred bytes of input reach
// the record parsing, the analysis and the report writers, so the corpus stays small and
// mutations land on the bytes that matter.
#include "findings/analysis.h"
#include "report/printable.h"
#include "report/reports.h"
#include "timeline/timeline_export.h"
#include "read/trace_reader.h"

#include <asyncwatch/trace_format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

void write_file(const std::string& path, const uint8_t* data, size_t size, size_t padded) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  if (size) std::fwrite(data, 1, size, f);
  static const std::vector<uint8_t> zeros(asyncwatch::trace::kBlockSize, 0);
  for (size_t left = padded - size; left > 0;) {
    size_t n = std::min(left, zeros.size());
    std::fwrite(zeros.data(), 1, n, f);
    left -= n;
  }
  std::fclose(f);
}

// The text report (colour off) must hold nothing a terminal would act on, whatever bytes the
// trace's strings hold: no control byte but the line end, no DEL, no C1
// control in UTF-8 (U+0080-U+009F), no bidirectional override or isolate (U+202A-U+202E,
// U+2066-U+2069). Checked byte by byte here, not with printable(), so that a fault in the
// sanitizer is caught as well as a string printed without it.
void check_text_is_printable(const std::string& text) {
  auto at = [&](size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned c = at(i);
    bool bad = (c < 0x20 && c != '\n') || c == 0x7f || (c == 0xc2 && at(i + 1) >= 0x80 && at(i + 1) <= 0x9f) ||
               (c == 0xe2 && at(i + 1) == 0x80 && at(i + 2) >= 0xaa && at(i + 2) <= 0xae) ||
               (c == 0xe2 && at(i + 1) == 0x81 && at(i + 2) >= 0xa6 && at(i + 2) <= 0xa9);
    if (bad) {
      size_t from = i > 60 ? i - 60 : 0;
      std::fprintf(stderr, "the text report holds byte 0x%02x raw, at: %s\n", c,
                   asyncwatch::printable(text.substr(from, 120)).c_str());
      std::abort();
    }
  }
}

void read_and_report(const std::string& path) {
  try {
    asyncwatch::Report r = asyncwatch::analyze_traces({path}, asyncwatch::Options{});
    std::ostringstream out;
    asyncwatch::write_report_text(out, r, asyncwatch::TextStyle{});
    check_text_is_printable(out.str());
    (void)asyncwatch::report_json_text(r);
    (void)asyncwatch::report_sarif_text(r);
    // Closed also when the timeline throws (a bounded table's TraceError): 20,000 inputs
    // leaked a descriptor each until the fuzzer ran out of them.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> null(std::fopen("/dev/null", "w"), &std::fclose);
    if (null) asyncwatch::write_timeline(null.get(), {path}, 50000);
  } catch (const asyncwatch::TraceError&) {}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace tf = asyncwatch::trace;
  // In $TMPDIR (the smoke test points it at its work directory), else /tmp.
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/asyncwatch-fuzz-" + std::to_string(getpid()) + ".awtrace";
  }();
  size_t padded = tf::kHeaderSize;
  if (size > tf::kHeaderSize) padded += (size - tf::kHeaderSize + tf::kBlockSize - 1) / tf::kBlockSize * tf::kBlockSize;
  write_file(path, data, size, size);
  read_and_report(path);
  if (padded != size) {
    write_file(path, data, size, padded);
    read_and_report(path);
  }
  unlink(path.c_str());  // left behind only when an input crashes (it is also the artifact)
  return 0;
}
