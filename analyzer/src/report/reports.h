// Report writers: text (compiler-diagnostic style), JSON (docs/report-json.md), SARIF 2.1.0,
// GitLab Code Quality and HTML (report_html.h); the texts they share are defined once, here.
#pragma once

#include "findings/analysis.h"

#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

struct TextStyle {
  bool colour = false;
};
void write_report_text(std::ostream& out, const Report& report, const TextStyle& style);
class JsonWriter;
// Written as they go (json_writer.h); the *_text forms return the document (tests, small reports).
void write_report_json(JsonWriter& out, const Report& report);
void write_report_sarif(JsonWriter& out, const Report& report);
// GitLab Code Quality (a JSON array of issues; docs/ci.md).
void write_report_codequality(JsonWriter& out, const Report& report);
std::string report_json_text(const Report& report);
// One stream's overlap figures (timeline/gpu_overlap.h) as the JSON report's and the SARIF run's
// `gpu_overlap` entries (docs/report-json.md).
void gpu_overlap_object(JsonWriter& out, const StreamOverlap& s);
std::string report_sarif_text(const Report& report);

// "file:line" for a call site, relative to the current directory when below it; without a source
// line "function (module)" or "module+0xOFFSET" (never "??"); "" when the finding has no call site.
std::string location_text(const Finding& f);
// The "call site:" line of the text report: the frame, the library function it called
// (", via cusparseSpMV (libcusparse.so.12)") and a note when no frame is the program's own.
std::string call_site_line_text(const Finding& f);
// For a call site borrowed from another thread's Python frames (Finding::python_lender): "the
// Python line of thread 4242, which was waiting in a C call; the calls ran on native thread 4250"
// (text, SARIF, HTML); "" when the call site is not borrowed.
std::string borrowed_line_text(const Finding& f);
// The lender's thread id, 0 when unknown (CPython 3.10), and the threads that made the calls
// (thread ids, ascending: Finding::thread_blocked).
uint32_t borrowed_lender_tid(const Finding& f);
std::vector<uint32_t> calling_threads(const Finding& f);
// Why a finding has no call site ("call site not recorded; ..."), "" when it has one.
std::string missing_call_site_text(const Finding& f);
// The executable of the process the finding's (first) calls were made in; "" when not known.
std::string finding_executable(const Finding& f, const Report& report);
// Where a finding without a source line points (SARIF, Code Quality): the module that holds its
// call site, else its process's executable, else the first traced program's; "" when none is known.
std::string finding_module(const Finding& f, const Report& report);
// A path relative to the current directory when it lies below it.
std::string display_path(const std::string& path);
// The lines of the text report that the HTML report repeats (without indentation or colour; names
// from the trace unescaped): "3 calls, 6.0 GiB, blocked 2.1 s (min ..., median ..., max ...), 76.5%
// of its thread's wall time", "evidence: ...", "in range `step` (3 of 3 calls)" ("" when none), and
// the summary ("12 asynchronous calls: 9 really asynchronous, 3 flagged as blocking (...); 4 findings").
std::string finding_stats_text(const Finding& f);
// The findings others name as their cause (Finding::caused_by), found by key.
class CauseIndex {
 public:
  explicit CauseIndex(const Report& report);
  // The finding `f` waited for, and its rank in the report (1-based); null (rank 0) when none is shown.
  const Finding* cause(const Finding& f, size_t* rank) const;

 private:
  const Report& report_;
  std::unordered_map<std::string_view, size_t> at_;
};
// "fixing this saves about 2.17 s (88.1% of the run) (basis)", preceded for a finding caused by
// another by "waited for finding #1 (pageable-async-copy at app.cu:42), ...".
std::string impact_text(const Finding& f, const CauseIndex& causes);
std::string evidence_text(const Finding& f);
std::string ranges_text(const Finding& f);
std::string summary_text(const Report& report);
// The frames of the stack that the report shows: the program's own (call_site.h), or every frame
// with --stacks full or when none is the program's; `*hidden` says how many were left out.
// `memo`: classify_frame's answers kept across the findings of one report (call_site.h).
class FrameKindMemo;
std::vector<const Frame*> shown_frames(const Finding& f, const Report& report, size_t* hidden,
                                       FrameKindMemo* memo = nullptr);
// "main at /src/seed.cu:52 (app)", "helper at x.cu:7 (app) [inlined]", "libcuda.so.1+0x1234"
std::string frame_text(const Frame& f);
// What a stack listing shows before frame_text: the return address, "[py]" for a Python frame,
// "[py, borrowed]" for one of another thread's (docs/python-frames.md, "Borrowed frames").
std::string frame_address_text(const Frame& f);

}  // namespace asyncwatch
