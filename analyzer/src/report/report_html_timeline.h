// The timeline picture of the HTML report (report_html.cpp): per process, a lane per host thread
// with its calls and, when GPU times were recorded, a lane per stream with what ran on the device.
// Bounded whatever the trace's size: calls are aggregated to the picture's pixel columns (a bar per
// run of calls that touch the same or the next column, at most about width/2 bars per kind and
// lane), flagged calls are always drawn (merged only with calls of the same finding in the same
// or next column, and with any flagged neighbour beyond kMaxFlaggedBars), and at most kMaxHostLanes
// threads and kMaxStreamLanes streams are drawn (those with the most calls). docs/timeline.md.
#pragma once

#include "findings/analysis.h"
#include "report/report_job.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace asyncwatch {

// One drawn bar: one call, or several merged at the picture's resolution.
struct PictureBar {
  double x0 = 0, x1 = 0;              // pixels from the lane's left edge (x1 - x0 >= kMinBarWidth)
  uint64_t start_ns = 0, end_ns = 0;  // since the process start
  uint64_t calls = 0;
  uint64_t busy_ns = 0;   // the calls' summed durations
  int32_t finding = -1;   // index in Report::findings; -1: not flagged; kSeveralFindings: merged flagged calls
  uint8_t severity = 0;   // Severity of the finding (the highest of merged ones)
  uint8_t kind = 0;       // GPU lanes: trace::GpuOp; host lanes: 0
  std::string label;      // the longest call's name ("cudaMemcpyAsync DtoH 2.0 GiB")
  uint64_t label_ns = 0;  // ... and its duration
};

// Aggregates one lane's calls to pixel columns. Calls are expected roughly in time order (a call
// far before the open bar of its kind starts a new bar: still drawn, only less merged).
class PixelLane {
 public:
  static constexpr int32_t kSeveralFindings = -2;
  static constexpr size_t kMaxFlaggedBars = 2000;
  static constexpr double kMinBarWidth = 1.0;
  static constexpr uint8_t kKinds = 8;
  // The lane shows [t0, t1] (ns since the process start) in `width` pixels.
  PixelLane(uint64_t t0, uint64_t t1, double width);
  // A call (kind < kKinds) or, with finding >= 0, a flagged call of that finding and severity.
  void add(uint64_t start_ns, uint64_t end_ns, std::string_view label, uint8_t kind = 0, int32_t finding = -1,
           uint8_t severity = 0) {
    if (PictureBar* bar = place(start_ns, end_ns, kind, finding, severity)) bar->label.assign(label);
  }
  // The same, `label()` (a std::string) called only when the bar keeps the call's label (its longest
  // call so far): the labels of most calls are never made (making each was most of the picture's time).
  template <class Label>
  void add_labelled(uint64_t start_ns, uint64_t end_ns, Label&& label, uint8_t kind, int32_t finding,
                    uint8_t severity) {
    if (PictureBar* bar = place(start_ns, end_ns, kind, finding, severity)) bar->label = label();
  }
  // The bars, unflagged first (drawn beneath), each group in time order; ends the lane.
  std::vector<PictureBar> finish();
  uint64_t calls() const { return calls_; }
  // A run of `calls` calls of one kind and finding, spanning less than half a column (PictureWalk):
  // its first call [first_start, first_end] placed as add() would, then the others at once (their
  // earliest start, latest start and latest end, their summed durations). Returns the bar when a
  // call of the run gives it its label: the first call's, or (`*longest`) the run's first longest
  // (`longest_ns`); else null.
  PictureBar* place_run(uint64_t first_start, uint64_t first_end, uint64_t min_start, uint64_t max_start,
                        uint64_t max_end, uint64_t calls, uint64_t busy_ns, uint64_t longest_ns, uint8_t kind,
                        int32_t finding, uint8_t severity, bool* longest);

 private:
  // Adds the call to its bar; returns the bar when the call's label becomes the bar's, else null.
  PictureBar* place(uint64_t start_ns, uint64_t end_ns, uint8_t kind, int32_t finding, uint8_t severity);
  double x_of(uint64_t ns) const;
  int64_t column(double x) const;
  void close(PictureBar& open, bool flagged);
  uint64_t t0_, t1_;
  double width_, scale_;
  PictureBar open_[kKinds];  // the bar each kind is growing (calls == 0: none)
  PictureBar open_flagged_;
  int64_t first_col_[kKinds + 1] = {}, last_col_[kKinds + 1] = {};
  std::vector<PictureBar> plain_, flagged_;
  uint64_t calls_ = 0;
};

struct PictureLane {
  std::string name;  // "main (tid 4242)", "stream 0x5000"
  bool stream = false;
  uint64_t calls = 0;
  std::vector<PictureBar> bars;
};

struct ProcessPicture {
  uint64_t pid = 0;
  uint64_t length_ns = 0;          // the picture shows [0, length_ns] since the process start
  double width = 0;                // of the lanes, in pixels
  std::vector<PictureLane> lanes;  // host threads, then streams
  uint64_t lanes_not_drawn = 0;    // beyond kMaxHostLanes / kMaxStreamLanes
  std::string error;               // the trace could not be read again: no picture
};

inline constexpr size_t kMaxHostLanes = 32;
inline constexpr size_t kMaxStreamLanes = 16;
inline constexpr double kPictureWidth = 960;

// The picture from the analysis' own walk (one pass): a consumer of that walk (analyze_trace_with,
// findings/process_analyzer.h) that keeps each lane's plain calls in runs, each a run of calls of one kind spanning
// less than half a pixel column at the scale known so far (the trace's last time so far: the
// picture's columns can only grow wider). Such a run always lands in one bar, so placing its first
// call and then the rest at once gives the bars placing each call would: the runs number about 2 x
// the columns x ln(the trace's length / its first call's time), not the calls. Flagged calls are
// kept one by one (their bars depend on the report's findings; at most kMaxCallMarks). Where the
// bars could differ (a flagged call of a finding the report does not show, which is drawn as a plain
// call; two calls of a thread at one start time; a mark on a record not drawn), process_picture
// walks the trace again, as it does for a trace not kept (report_job.h).
class PictureWalk {
 public:
  virtual ~PictureWalk() = default;
  // `marks`: the analysis' CallMarks of this trace (the walk reads the ones each record adds).
  static std::shared_ptr<PictureWalk> make(const TraceFile& trace, const std::vector<CallMark>& marks,
                                           uint64_t pending_callbacks, double width = kPictureWidth);
  // analyze_trace(trace, options, marks) with this picture drawn from the same walk (`marks` the
  // make's).
  virtual ProcessResult analyze(TraceFile& trace, const Options& options, std::vector<CallMark>* marks) = 0;
};

// The picture of `process` (its trace walked once more: the analysis' TraceFile in `marks` when kept,
// indexed by the analysis' pass, else opened and indexed again), its flagged calls from `marks` (the report's
// analysis of that trace, report_job.h) coloured as their finding in `report` (by Finding::key;
// calls of a finding the report does not show are drawn as plain calls).
ProcessPicture process_picture(const ProcessSummary& process, const TraceMarks* marks, const Report& report,
                               double width = kPictureWidth);

}  // namespace asyncwatch
