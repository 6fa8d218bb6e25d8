#include "report/report_html_timeline.h"

#include "diagnostics.h"

#include "symbols/call_site.h"
#include "events/event.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "findings/process_analyzer.h"
#include "findings/rules.h"
#include "report/format.h"
#include "timeline/call_label.h"
#include "timeline/flagged_calls.h"
#include "read/trace_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <type_traits>
#include <unordered_map>

namespace asyncwatch {

using namespace trace;

PixelLane::PixelLane(uint64_t t0, uint64_t t1, double width)
    : t0_(t0), t1_(std::max(t1, t0 + 1)), width_(width), scale_(width / static_cast<double>(t1_ - t0_)) {}

double PixelLane::x_of(uint64_t ns) const {
  const uint64_t d = std::clamp(ns, t0_, t1_) - t0_;
  // Through int64_t below 2^63 (one instruction; the same double: both convert the same integer).
  return (d >> 63 ? static_cast<double>(d) : static_cast<double>(static_cast<int64_t>(d))) * scale_;
}

// x is in [0, width] (x_of clamps): floor and ceil by conversion (exact there; std::floor and
// std::ceil were calls, once per bar placement: the HTML report's time over the JSON one's).
int64_t PixelLane::column(double x) const { return static_cast<int64_t>(x); }
static int64_t ceil_of(double x) {
  const auto t = static_cast<int64_t>(x);
  return t + (x > static_cast<double>(t));
}

void PixelLane::close(PictureBar& open, bool flagged) {
  if (!open.calls) return;
  // At least kMinBarWidth wide (a 1 us call is still seen), inside the lane.
  if (open.x1 - open.x0 < kMinBarWidth) {
    open.x1 = std::min(width_, open.x0 + kMinBarWidth);
    open.x0 = std::max(0.0, open.x1 - kMinBarWidth);
  }
  (flagged ? flagged_ : plain_).push_back(std::move(open));
  open = PictureBar{};
}

PictureBar* PixelLane::place(uint64_t start_ns, uint64_t end_ns, uint8_t kind, int32_t finding, uint8_t severity) {
  if (end_ns < start_ns) end_ns = start_ns;
  ++calls_;
  const double x0 = x_of(start_ns), x1 = x_of(end_ns);
  const int64_t c0 = column(x0), c1 = std::max(c0, ceil_of(x1) - 1);
  const bool flagged = finding >= 0;
  if (kind >= kKinds) kind = kKinds - 1;
  const size_t slot = flagged ? kKinds : kind;
  PictureBar& open = flagged ? open_flagged_ : open_[kind];
  // Merged when it touches the open bar's columns (or the next one); flagged calls only with their
  // own finding's, unless the lane already has kMaxFlaggedBars.
  bool merge = open.calls && c0 <= last_col_[slot] + 1 && c1 >= first_col_[slot] - 1;
  if (merge && flagged && open.finding != finding) {
    merge = flagged_.size() >= kMaxFlaggedBars;
    if (merge) open.finding = kSeveralFindings;
  }
  const uint64_t dur = end_ns - start_ns;
  if (!merge) {
    close(open, flagged);
    open.x0 = x0;
    open.x1 = x1;
    open.start_ns = start_ns;
    open.end_ns = end_ns;
    open.finding = finding;
    open.severity = severity;
    open.kind = kind;
    first_col_[slot] = c0;
    last_col_[slot] = c1;
  } else {
    open.x0 = std::min(open.x0, x0);
    open.x1 = std::max(open.x1, x1);
    open.start_ns = std::min(open.start_ns, start_ns);
    open.end_ns = std::max(open.end_ns, end_ns);
    open.severity = std::max(open.severity, severity);
    first_col_[slot] = std::min(first_col_[slot], c0);
    last_col_[slot] = std::max(last_col_[slot], c1);
  }
  ++open.calls;
  open.busy_ns += dur;
  if (open.calls == 1 || dur > open.label_ns) {
    open.label_ns = dur;
    return &open;
  }
  return nullptr;
}

PictureBar* PixelLane::place_run(uint64_t first_start, uint64_t first_end, uint64_t min_start, uint64_t max_start,
                                 uint64_t max_end, uint64_t calls, uint64_t busy_ns, uint64_t longest_ns, uint8_t kind,
                                 int32_t finding, uint8_t severity, bool* longest) {
  const uint64_t first_ns = first_end - first_start;
  PictureBar* label = place(first_start, first_end, kind, finding, severity);
  *longest = false;
  if (calls <= 1) return label;
  // The others merge into the first one's bar (less than half a column from it): its extent, counts
  // and label as placing each would leave them.
  const bool flagged = finding >= 0;
  if (kind >= kKinds) kind = kKinds - 1;
  const size_t slot = flagged ? kKinds : kind;
  PictureBar& open = flagged ? open_flagged_ : open_[kind];
  calls_ += calls - 1;
  const double x0 = x_of(min_start), x1 = x_of(max_end);
  open.x0 = std::min(open.x0, x0);
  open.x1 = std::max(open.x1, x1);
  open.start_ns = std::min(open.start_ns, min_start);
  open.end_ns = std::max(open.end_ns, max_end);
  open.severity = std::max(open.severity, severity);
  first_col_[slot] = std::min(first_col_[slot], column(x0));
  last_col_[slot] = std::max(last_col_[slot], std::max(column(x_of(max_start)), ceil_of(x1) - 1));
  open.calls += calls - 1;
  open.busy_ns += busy_ns - first_ns;
  if (longest_ns > first_ns && longest_ns > open.label_ns) {
    open.label_ns = longest_ns;
    *longest = true;
    return &open;
  }
  return label;
}

std::vector<PictureBar> PixelLane::finish() {
  for (auto& o : open_) close(o, false);
  close(open_flagged_, true);
  auto by_start = [](const PictureBar& a, const PictureBar& b) { return a.x0 < b.x0; };
  std::stable_sort(plain_.begin(), plain_.end(), by_start);
  std::stable_sort(flagged_.begin(), flagged_.end(), by_start);
  std::vector<PictureBar> out = std::move(plain_);
  out.insert(out.end(), std::make_move_iterator(flagged_.begin()), std::make_move_iterator(flagged_.end()));
  plain_.clear();
  flagged_.clear();
  return out;
}

namespace {

// What a bar's label is made of, made into text only for the bars that keep it (after the walk: the
// kernel names may come later in the trace than their launches).
struct LabelRecipe {
  enum What : uint8_t { Api, Call, Kernel, Run, RunNamed, GpuOp } what = Api;
  RecordType type = RecordType::None;
  uint8_t direction = 0;
  uint16_t api = 0;
  uint64_t value = 0;  // bytes, kernel name id, host function, GPU op
};

// A run of plain calls of one lane and kind (PictureWalk).
struct CallRun {
  uint64_t first_start, first_end, min_start, max_start, max_end, calls, busy_ns, longest_ns;
  LabelRecipe first_label, longest_label;
  uint8_t kind;
};

// A flagged call: kept one by one (they are placed by finding, which is known once the report is;
// at most kMaxCallMarks, like the marks).
struct FlaggedCall {
  uint64_t start, end;
  uint32_t mark;  // its CallMark (index)
  LabelRecipe label;
};

// A lane's flagged calls, appended and then read in order: in chunks of at most kMaxChunk (the
// first ones small), so that it grows without a vector's doubling copies (the HTML report's peak
// RSS on a trace with a million flagged calls, docs/performance.md) and without a std::deque's
// node allocation every dozen calls (about 100 instructions a flagged call: the HTML report's time
// over the JSON report's).
class FlaggedCallList {
 public:
  void push_back(const FlaggedCall& c) {
    if (chunks_.empty() || chunks_.back().size() == chunks_.back().capacity()) {
      chunks_.emplace_back();
      chunks_.back().reserve(std::min(kMaxChunk, size_t{16} << std::min<size_t>(chunks_.size() - 1, 16)));
    }
    chunks_.back().push_back(c);
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& chunk : chunks_)
      for (const FlaggedCall& c : chunk) f(c);
  }

 private:
  static constexpr size_t kMaxChunk = 4096;
  std::vector<std::vector<FlaggedCall>> chunks_;
};

using HostFunctions = events::HostFunctionJoin<uint64_t>;  // the enqueue's user function

// What the picture draws of one record, the one definition for both ways of making it (the
// analysis' walk, or the trace walked again): a host call, a host function's run (named after its
// enqueue through the host-function join of events/host_functions.h) or a GPU operation. Calls in
// flight or with torn times are not drawn. host_call(tid, start, end, label); gpu_span(stream,
// start, end, label). True when something was drawn. `ev`: the record's typed event (events/event.h).
template <class E, class HostCall, class GpuSpan>
__attribute__((always_inline)) inline bool draw_event(const RecordView& r, const E& ev, HostFunctions& host_functions,
                                                      HostCall&& host_call, GpuSpan&& gpu_span) {
  using events::is_one_of;
  if constexpr (E::kCall) {
    const CallHead& c = ev.rec;
    if ((c.flags & kFlagInFlight) || c.end_ns < c.start_ns) return false;
    if constexpr (E::kind == RecordType::HostFuncEnqueue) {
      HostFuncRunRecord ran;  // a run that came first was drawn when it came
      host_functions.enqueue(ev.rec.callback_id, ev.rec.user_function, &ran);
    }
    LabelRecipe label;
    label.type = E::kind;
    label.api = c.api;
    if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset>) {
      label.what = LabelRecipe::Call;
      label.value = ev.rec.bytes;
      if constexpr (E::kind == RecordType::Copy) label.direction = ev.rec.direction;
    } else if constexpr (E::kind == RecordType::Launch) {
      label.what = LabelRecipe::Kernel;
      label.value = ev.rec.kernel_name_id;
    }
    host_call(r.tid, c.start_ns, c.end_ns, label);
    return true;
  } else if constexpr (E::kind == RecordType::HostFuncRun) {
    const HostFuncRunRecord& run = ev.rec;
    uint64_t function = 0;
    LabelRecipe label;
    label.what =
        host_functions.run(run, &function) == HostFunctions::Outcome::Joined ? LabelRecipe::RunNamed : LabelRecipe::Run;
    label.value = function;
    host_call(r.tid, run.start_ns, run.end_ns, label);
    return true;
  } else if constexpr (E::kind == RecordType::GpuSpan) {
    const GpuSpanRecord& g = ev.rec;
    LabelRecipe label;
    label.what = LabelRecipe::GpuOp;
    label.value = g.op;
    gpu_span(events::resolve_stream(g.stream_kind, g.stream, r.tid), g.start_ns, g.end_ns, label);
    return false;
  } else {
    (void)r, (void)ev, (void)host_functions, (void)host_call, (void)gpu_span;
    return false;
  }
}
// The same for a record not yet typed (the trace walked again).
template <class HostCall, class GpuSpan>
inline bool draw_record(const RecordView& r, HostFunctions& host_functions, HostCall&& host_call, GpuSpan&& gpu_span) {
  return events::visit(
      r, [&](const auto& ev)
             __attribute__((always_inline)) { return draw_event(r, ev, host_functions, host_call, gpu_span); });
}

class PictureWalkImpl final : public PictureWalk {
 public:
  PictureWalkImpl(const TraceFile& t, const std::vector<CallMark>& marks, uint64_t pending_callbacks, double width)
      : marks_(marks), t0_(t.header().start_monotonic_ns), width_(width), host_functions_(pending_callbacks) {}
  ProcessResult analyze(TraceFile& trace, const Options& options, std::vector<CallMark>* marks) override {
    return analysis::analyze_trace_with(trace, options, marks, *this);
  }

  // Each event of the analysis' walk (ProcessAnalyzer::run), after the analysis took it. The draw,
  // host_call and add inline here, and this inline into the walk: no call, no saved registers and
  // no second dispatch on the type per record (those were about a third of the picture's
  // instructions: the HTML report's time over the JSON report's, docs/performance.md).
  template <class E>
  __attribute__((always_inline)) void event(const RecordView& r, const E& ev) {
    const size_t marks_before = seen_marks_;
    seen_marks_ = marks_.size();
    const bool marked = seen_marks_ > marks_before;
    const bool drawn = draw_event(
        r, ev, host_functions_,
        [&](uint32_t tid, uint64_t start, uint64_t end, const LabelRecipe& label)
            __attribute__((always_inline)) { host_call(tid, start, end, label, marked ? marks_before : SIZE_MAX); },
        [&](const events::StreamRef& st, uint64_t start, uint64_t end, const LabelRecipe& label) {
          auto [it, inserted] = lane_of_.emplace(st.key | (uint64_t{1} << 63), lanes_.size());
          if (inserted) lanes_.emplace_back(0, true, events::stream_name(st));
          add(lanes_[it->second], rel(start), rel(end), static_cast<uint8_t>(label.value), label, SIZE_MAX);
        });
    // A mark the picture could not place on a call of this record (FlaggedCalls would find it by
    // thread and start time): the picture is made by walking the trace again.
    if (marked && !drawn) exact_ = false;
  }

  // The lanes' runs, and what process_picture needs to trust them.
  struct Lane {
    Lane(uint32_t t, bool s, std::string n) : tid(t), stream(s), name(std::move(n)) {}
    uint32_t tid;
    bool stream;
    std::string name;           // streams' (threads' are named after the walk)
    std::vector<CallRun> runs;  // plain, in the order of their first calls
    FlaggedCallList flagged;
    size_t open[PixelLane::kKinds] = {};  // each kind's run still growing: its index in runs + 1, 0 none
    bool seen = false;
    uint64_t last_start = 0;  // of the thread's last call drawn
  };
  std::deque<Lane> lanes_;
  const std::vector<CallMark>& marks_;
  size_t seen_marks_ = 0;
  bool exact_ = true;
  uint64_t max_rel_end_ = 0;   // the latest end drawn, since the process start
  uint64_t narrow_below_ = 0;  // the widest span of a run that passed add()'s test, + 1 (0: none)
  uint64_t t0_;
  double width_;

 private:
  uint64_t rel(uint64_t mono) const { return mono > t0_ ? mono - t0_ : 0; }

  __attribute__((always_inline)) void host_call(uint32_t tid, uint64_t start, uint64_t end, const LabelRecipe& label,
                                                size_t mark) {
    Lane* l = nullptr;
    auto& slot = cache_[(tid * 0x9e3779b1u) >> (32 - kCacheBits)];
    if (slot.second && slot.first == tid) {
      l = slot.second;
    } else {
      auto [it, inserted] = lane_of_.emplace(tid, lanes_.size());
      if (inserted) lanes_.emplace_back(tid, false, std::string());
      l = &lanes_[it->second];
      slot = {tid, l};
    }
    // Two calls of a thread at one start time, or out of order: FlaggedCalls' answer by (thread,
    // start) is not the walk's; the picture is made by walking again.
    if (l->seen && start <= l->last_start) exact_ = false;
    l->seen = true;
    l->last_start = start;
    add(*l, rel(start), rel(end), 0, label, mark);
  }

  __attribute__((always_inline)) void add(Lane& l, uint64_t start, uint64_t end, uint8_t kind, const LabelRecipe& label,
                                          size_t mark) {
    if (end < start) end = start;
    if (kind >= PixelLane::kKinds) kind = PixelLane::kKinds - 1;
    max_rel_end_ = std::max(max_rel_end_, end);
    if (mark != SIZE_MAX) {
      l.flagged.push_back(FlaggedCall{start, end, static_cast<uint32_t>(mark), label});
      return;
    }
    const uint64_t dur = end - start;
    if (size_t open = l.open[kind]) {
      CallRun& run = l.runs[open - 1];
      // Less than half a column wide at the scale known so far (the last end so far: the final one
      // is later or the same, its columns as wide or wider). A span below one that passed passes
      // too (the test only grows more lenient as the last end grows; both conversions and the
      // product are monotonic): the test in doubles only for wider ones (its conversions were a
      // good part of a call's drawing: the HTML report's time over the JSON report's).
      const uint64_t lo = std::min(run.min_start, start), hi = std::max(run.max_end, end);
      bool narrow = hi - lo < narrow_below_;
      if (!narrow && static_cast<double>(hi - lo) * 2 * width_ < static_cast<double>(max_rel_end_)) {
        narrow = true;
        narrow_below_ = hi - lo + 1;  // (wrapping to 0 at the largest span: none below, still exact)
      }
      if (narrow) {
        run.min_start = lo;
        run.max_end = hi;
        run.max_start = std::max(run.max_start, start);
        ++run.calls;
        run.busy_ns += dur;
        if (dur > run.longest_ns) {
          run.longest_ns = dur;
          run.longest_label = label;
        }
        return;
      }
    }
    l.runs.push_back(CallRun{start, end, start, start, end, 1, dur, dur, label, label, kind});
    l.open[kind] = l.runs.size();
  }

  static constexpr unsigned kCacheBits = 6;
  std::pair<uint32_t, Lane*> cache_[1u << kCacheBits] = {};
  std::unordered_map<uint64_t, size_t> lane_of_;  // tid, or stream key | 1 << 63
  HostFunctions host_functions_;
};

}  // namespace

std::shared_ptr<PictureWalk> PictureWalk::make(const TraceFile& trace, const std::vector<CallMark>& marks,
                                               uint64_t pending_callbacks, double width) {
  return std::make_shared<PictureWalkImpl>(trace, marks, pending_callbacks, width);
}

ProcessPicture process_picture(const ProcessSummary& process, const TraceMarks* marks, const Report& report,
                               double width) {
  ProcessPicture pic;
  pic.pid = process.pid;
  pic.width = width;
  try {
    // The analysis' trace, indexed by its pass, when it was kept; else read once more to index it.
    std::shared_ptr<const TraceFile> t = marks ? marks->file : nullptr;
    if (!t) {
      std::unique_ptr<TraceFile> opened = TraceFile::open(process.trace, report.options.limits);
      opened->index();
      t = std::move(opened);
    }
    const FileHeader& h = t->header();
    const uint64_t t0 = h.start_monotonic_ns;
    pic.length_ns = std::max<uint64_t>(t->last_time_ns() > t0 ? t->last_time_ns() - t0 : 0, 1);

    // Flagged calls: (tid, start) -> the report's finding, through the finding's key.
    std::unordered_map<std::string, int32_t> report_index;
    for (size_t i = 0; i < report.findings.size(); ++i)
      report_index.emplace(report.findings[i].key, static_cast<int32_t>(i));
    std::vector<int32_t> of_key;  // the trace's finding -> the report's, -1: not shown
    if (marks)
      for (const auto& k : marks->keys) {
        auto it = report_index.find(k);
        of_key.push_back(it == report_index.end() ? -1 : it->second);
      }
    auto report_finding = [&](uint32_t f) { return f < of_key.size() ? of_key[f] : -1; };

    // The time axis starts at the process start; times before it (none expected) clamp to 0.
    auto rel = [&](uint64_t mono) { return mono > t0 ? mono - t0 : 0; };
    struct Lane {
      std::string name;
      bool stream;
      PixelLane pixels;
    };
    std::deque<Lane> lanes;                        // (a deque: the threads' states point into it)
    std::unordered_map<uint64_t, size_t> lane_of;  // tid, or stream key | 1 << 63
    auto lane = [&](uint64_t key, bool stream, const std::function<std::string()>& name) -> PixelLane& {
      auto [it, inserted] = lane_of.emplace(key, lanes.size());
      if (inserted) lanes.push_back(Lane{name(), stream, PixelLane(0, pic.length_ns, width)});
      return lanes[it->second].pixels;
    };
    std::unordered_map<uint32_t, std::string> thread_names;
    for (const auto& th : t->threads()) thread_names[th.tid] = th.name;
    auto thread_lane_name = [&](uint32_t tid) {
      auto n = thread_names.find(tid);
      std::string name = n == thread_names.end() || n->second.empty() ? std::string("thread") : n->second;
      return fmt::format("{} (tid {})", name, tid);
    };
    std::unordered_map<uint32_t, std::string> kernel_names;
    auto kernel_of = [&](uint32_t id) -> const std::string& {
      auto it = kernel_names.find(id);
      if (it != kernel_names.end()) return it->second;
      auto k = id ? t->string(id) : std::nullopt;
      return kernel_names.emplace(id, k ? kernel_display_name(*k) : std::string("?")).first->second;
    };
    auto severity_of = [&](int32_t f) {
      return f >= 0 ? static_cast<uint8_t>(finding_severity(report.findings[static_cast<size_t>(f)])) : uint8_t{0};
    };

    // One pass: the analysis' walk kept the lanes' runs of calls (PictureWalk), trusted unless a
    // bar could differ from placing each call (then the trace is walked again, below).
    auto* walk = marks && marks->file == t ? static_cast<PictureWalkImpl*>(marks->picture.get()) : nullptr;
    if (walk) {
      bool exact = walk->exact_ && walk->max_rel_end_ <= pic.length_ns && walk->width_ == width &&
                   walk->seen_marks_ <= marks->marks.size();
      // The marks made after the walk (calls in flight at the end) must not fall on a call drawn.
      std::unordered_map<uint32_t, const PictureWalkImpl::Lane*> host_lanes;
      for (const auto& l : walk->lanes_)
        if (!l.stream) host_lanes[l.tid] = &l;
      for (size_t i = walk->seen_marks_; exact && i < marks->marks.size(); ++i) {
        auto it = host_lanes.find(marks->marks[i].tid);
        if (it != host_lanes.end() && it->second->seen && marks->marks[i].start_ns <= it->second->last_start)
          exact = false;
      }
      // A flagged call of a finding the report does not show is a plain call: placed among those.
      for (const auto& l : walk->lanes_)
        l.flagged.for_each([&](const FlaggedCall& c) {
          if (exact && (c.mark >= marks->marks.size() || report_finding(marks->marks[c.mark].finding) < 0))
            exact = false;
        });
      if (!exact) walk = nullptr;
    }
    if (diagnostics::verbose())
      diagnostics::step(fmt::format("pid {}: picture {}", process.pid,
                                    walk ? "from the analysis' walk" : "from a walk of the trace after the analysis"));
    auto label_text = [&](const LabelRecipe& r) -> std::string {
      switch (r.what) {
        case LabelRecipe::Call: return call_label(r.type, r.api, r.direction, format_bytes(r.value));
        case LabelRecipe::Kernel: return call_label(r.type, r.api, 0, kernel_of(static_cast<uint32_t>(r.value)));
        case LabelRecipe::Run: return "host function (ran)";
        case LabelRecipe::RunNamed: return fmt::format("host function 0x{:x} (ran)", r.value);
        case LabelRecipe::GpuOp: return gpu_op_text(static_cast<GpuOp>(r.value));
        case LabelRecipe::Api: break;
      }
      return public_api_name(api_name(static_cast<Api>(r.api)));
    };
    if (walk) {
      for (const auto& l : walk->lanes_) {
        lanes.push_back(
            Lane{l.stream ? l.name : thread_lane_name(l.tid), l.stream, PixelLane(0, pic.length_ns, width)});
        PixelLane& px = lanes.back().pixels;
        // The plain calls' runs, then the flagged calls (their bars never share: placing one kind
        // does not change the other's).
        for (const CallRun& r : l.runs) {
          bool longest = false;
          if (PictureBar* bar = px.place_run(r.first_start, r.first_end, r.min_start, r.max_start, r.max_end, r.calls,
                                             r.busy_ns, r.longest_ns, r.kind, -1, 0, &longest))
            bar->label = label_text(longest ? r.longest_label : r.first_label);
        }
        l.flagged.for_each([&](const FlaggedCall& c) {
          const int32_t f = report_finding(marks->marks[c.mark].finding);
          px.add_labelled(
              c.start, c.end, [&] { return label_text(c.label); }, 0, f, severity_of(f));
        });
      }
    }
    FlaggedCalls<int32_t> flagged;
    if (marks && !walk)
      for (const auto& m : marks->marks)
        if (report_finding(m.finding) >= 0) flagged.add(m.tid, m.start_ns, report_finding(m.finding));
    // A thread's lane and flagged calls, found through a small direct-mapped cache by tid (the walk
    // switches threads at nearly every record: a hash look-up or two each, lane and flagged calls,
    // were a good part of the picture's time: the HTML report's time over the JSON one's).
    struct ThreadState {
      PixelLane* lane;
      FlaggedCalls<int32_t>::Thread* flagged;
    };
    std::unordered_map<uint32_t, ThreadState> thread_states;  // nodes stay put: the cache points into it
    constexpr unsigned kCacheBits = 6;
    std::pair<uint32_t, ThreadState*> cache[1u << kCacheBits] = {};
    auto new_thread_state = [&](uint32_t tid, std::pair<uint32_t, ThreadState*>& slot) -> ThreadState& {
      auto it = thread_states.find(tid);
      if (it == thread_states.end()) {
        PixelLane& l = lane(tid, false, [&] { return thread_lane_name(tid); });
        it = thread_states.emplace(tid, ThreadState{&l, flagged.calls_of(tid)}).first;
      }
      slot = {tid, &it->second};
      return it->second;
    };
    // Inline: once per call drawn (the HTML report's time over the JSON report's).
    auto thread_state = [&](uint32_t tid) __attribute__((always_inline))->ThreadState& {
      auto& slot = cache[(tid * 0x9e3779b1u) >> (32 - kCacheBits)];
      if (slot.second && slot.first == tid) return *slot.second;
      return new_thread_state(tid, slot);
    };
    // Host-function enqueues joined with their runs by callback id, to name a run after its enqueue's
    // function (events/host_functions.h: the analysis' and the timeline's join, bounded as theirs).
    HostFunctions host_functions(report.options.limits.pending_callbacks);
    if (!walk)
      t->for_each_merged([&](const RecordView& r) {
        draw_record(
            r, host_functions,
            [&](uint32_t tid, uint64_t start, uint64_t end, const LabelRecipe& label) {
              ThreadState& th = thread_state(tid);
              const int32_t* flag = FlaggedCalls<int32_t>::find(th.flagged, start);
              const int32_t f = flag ? *flag : -1;
              th.lane->add_labelled(
                  rel(start), rel(end), [&] { return label_text(label); }, 0, f, severity_of(f));
            },
            [&](const events::StreamRef& st, uint64_t start, uint64_t end, const LabelRecipe& label) {
              PixelLane& l = lane(st.key | (uint64_t{1} << 63), true, [&] { return events::stream_name(st); });
              l.add(rel(start), rel(end), label_text(label), static_cast<uint8_t>(label.value));
            });
      });

    // The lanes with the most calls (host threads, then streams), each group in first-seen order.
    for (bool stream : {false, true}) {
      std::vector<size_t> idx;
      for (size_t i = 0; i < lanes.size(); ++i)
        if (lanes[i].stream == stream) idx.push_back(i);
      const size_t keep = stream ? kMaxStreamLanes : kMaxHostLanes;
      if (idx.size() > keep) {
        std::vector<size_t> by_calls = idx;
        std::stable_sort(by_calls.begin(), by_calls.end(),
                         [&](size_t a, size_t b) { return lanes[a].pixels.calls() > lanes[b].pixels.calls(); });
        by_calls.resize(keep);
        std::sort(by_calls.begin(), by_calls.end());
        pic.lanes_not_drawn += idx.size() - keep;
        idx = by_calls;
      }
      for (size_t i : idx)
        pic.lanes.push_back(PictureLane{lanes[i].name, stream, lanes[i].pixels.calls(), lanes[i].pixels.finish()});
    }
  } catch (const std::exception& e) {
    pic.lanes.clear();
    pic.error = e.what();
  }
  return pic;
}

}  // namespace asyncwatch
