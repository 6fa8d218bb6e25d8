#include "timeline/timeline_export.h"

#include "findings/analysis.h"
#include "symbols/call_site.h"
#include "events/event.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "report/format.h"
#include "report/reports.h"
#include "timeline/call_label.h"
#include "timeline/flagged_calls.h"
#include "timeline/perfetto_writer.h"
#include "read/trace_reader.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <type_traits>
#include <unordered_map>

namespace asyncwatch {
namespace {
// Nanoseconds printed as microseconds with 3 decimals, by integer arithmetic (fast, exact).
struct Us {
  int64_t ns;
};
}  // namespace
}  // namespace asyncwatch

template <>
struct fmt::formatter<asyncwatch::Us> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(asyncwatch::Us u, Ctx& ctx) const {
    // 0 - x in unsigned: INT64_MIN (a crafted trace) has no int64_t negation.
    uint64_t a = u.ns < 0 ? 0 - static_cast<uint64_t>(u.ns) : static_cast<uint64_t>(u.ns);
    return fmt::format_to(ctx.out(), "{}{}.{:03}", u.ns < 0 ? "-" : "", a / 1000, a % 1000);
  }
};

namespace asyncwatch {

using namespace trace;
using perfetto::Arg;

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when invalid.
size_t utf8_length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

// Text as valid UTF-8 (names in a trace can be anything): invalid bytes become U+FFFD. With
// `json`, quotes, backslashes and control characters are escaped too.
std::string clean_text(std::string_view s, bool json) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (json && (c == '"' || c == '\\')) {
      o += '\\';
      o += static_cast<char>(c);
      ++i;
    } else if (json && c < 0x20) {
      o += fmt::format("\\u{:04x}", c);
      ++i;
    } else if (size_t n = utf8_length(s, i)) {
      o.append(s, i, n);
      i += n;
    } else {
      o += json ? "\\ufffd" : "\xef\xbf\xbd";
      ++i;
    }
  }
  return o;
}

constexpr uint64_t kStreamTidBase = 1'000'000'000;

// The two output formats behind one interface. Track ids are per process: a thread's tid, or
// kStreamTidBase + n for the n-th stream track. Every text given is already valid UTF-8 (clean_text).
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void process(uint64_t pid, const std::string& name) = 0;
  virtual void thread(uint64_t pid, uint64_t tid, const std::string& name) = 0;
  virtual void stream(uint64_t pid, uint64_t track, const std::string& name, uint64_t sort) = 0;
  virtual void slice(uint64_t pid, uint64_t track, uint64_t ts, uint64_t dur, std::string_view name,
                     std::string_view cat, const Arg* args, size_t n, uint64_t flow_out, uint64_t flow_in) = 0;
  virtual void finish(bool simulated) = 0;  // simulated: a trace was recorded on the simulator
  virtual uint64_t bytes() const = 0;
};

class JsonSink final : public Sink {
 public:
  explicit JsonSink(std::FILE* f) : f_(f) {
    buf_.reserve(1 << 20);
    put(FMT_COMPILE("{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"));
  }
  void process(uint64_t pid, const std::string& name) override {
    put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"{}\"}}}}"), sep(), pid,
        esc(name));
  }
  void thread(uint64_t pid, uint64_t tid, const std::string& name) override {
    put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}"),
        sep(), pid, tid, esc(name));
  }
  void stream(uint64_t pid, uint64_t track, const std::string& name, uint64_t sort) override {
    thread(pid, track, name);
    put(FMT_COMPILE(
            "{}{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}"),
        sep(), pid, track, sort);
  }
  void slice(uint64_t pid, uint64_t track, uint64_t ts, uint64_t dur, std::string_view name, std::string_view cat,
             const Arg* args, size_t n, uint64_t flow_out, uint64_t flow_in) override {
    put(FMT_COMPILE("{}{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}"),
        sep(), cat, esc(name), pid, track, Us{static_cast<int64_t>(ts)}, Us{static_cast<int64_t>(dur)});
    if (flow_out)
      put(FMT_COMPILE(",\"bind_id\":\"0x{:x}\",\"flow_out\":true"), flow_out);
    else if (flow_in)
      put(FMT_COMPILE(",\"bind_id\":\"0x{:x}\",\"flow_in\":true"), flow_in);
    put(FMT_COMPILE(",\"args\":{{"));
    for (size_t i = 0; i < n; ++i) {
      if (args[i].is_text)
        put(FMT_COMPILE("{}\"{}\":\"{}\""), i ? "," : "", args[i].name, esc(args[i].text));
      else
        put(FMT_COMPILE("{}\"{}\":{}"), i ? "," : "", args[i].name, args[i].value);
    }
    put(FMT_COMPILE("}}}}"));
  }
  void finish(bool simulated) override {
    // Chrome trace event format: "otherData" is the trace's metadata (Perfetto UI shows it).
    if (simulated)
      put(
          FMT_COMPILE("\n],\"otherData\":{{\"simulated\":true,\"note\":\"recorded on asyncwatch's simulated CUDA "
                      "driver (run --sim): times are the simulator's model, not a GPU's\"}}}}\n"));
    else
      put(FMT_COMPILE("\n]}}\n"));
    flush();
  }
  uint64_t bytes() const override { return written_ + buf_.size(); }

 private:
  template <class S, class... A>
  void put(const S& s, A&&... args) {
    fmt::format_to(fmt::appender(buf_), s, std::forward<A>(args)...);
    if (buf_.size() > (1 << 20)) flush();
  }
  void flush() {
    if (buf_.size() != 0) std::fwrite(buf_.data(), 1, buf_.size(), f_);
    written_ += buf_.size();
    buf_.clear();
  }
  const char* sep() {
    if (first_) {
      first_ = false;
      return "";
    }
    return ",\n";
  }
  // Already valid UTF-8: only the JSON escapes (the common case needs none: no copy).
  std::string_view esc(std::string_view s) {
    bool plain = true;
    for (char c : s)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) plain = false;
    if (plain) return s;
    scratch_.clear();
    for (char c : s) {
      if (c == '"' || c == '\\') {
        scratch_ += '\\';
        scratch_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        scratch_ += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
      } else {
        scratch_ += c;
      }
    }
    return scratch_;
  }
  std::FILE* f_;
  fmt::memory_buffer buf_;
  std::string scratch_;
  bool first_ = true;
  uint64_t written_ = 0;
};

class PerfettoSink final : public Sink {
 public:
  explicit PerfettoSink(std::FILE* f) : w_(f) {}
  static uint64_t uuid(uint64_t pid, uint64_t track) { return (pid << 32 | (track & 0xffffffffu)) + 1; }
  void process(uint64_t pid, const std::string& name) override { w_.process_track(uuid(pid, 0xffffffffu), pid, name); }
  void thread(uint64_t pid, uint64_t tid, const std::string& name) override {
    w_.thread_track(uuid(pid, tid), pid, tid, name);
  }
  void stream(uint64_t pid, uint64_t track, const std::string& name, uint64_t) override {
    w_.child_track(uuid(pid, track), uuid(pid, 0xffffffffu), name);
  }
  void slice(uint64_t pid, uint64_t track, uint64_t ts, uint64_t dur, std::string_view name, std::string_view cat,
             const Arg* args, size_t n, uint64_t flow_out, uint64_t flow_in) override {
    w_.slice(uuid(pid, track), ts, dur, name, cat, args, n, flow_out, flow_in);
  }
  void finish(bool) override { w_.flush(); }  // the process tracks' names say "simulated"
  uint64_t bytes() const override { return w_.bytes_written(); }

 private:
  perfetto::Writer w_;
};

// A call with GPU work (kFlagGpuTimed) on one thread, waiting for its GpuSpan records.
struct TimedCall {
  uint64_t start, end;
  uint64_t flow;
  std::string label;  // the GPU slice's name: the kernel, or the copy's direction and size
  bool flagged;
  bool flow_used;
};
constexpr size_t kTimedCallsPerThread = 4096;  // bounded: a span whose call is older is shown without a flow

}  // namespace

TimelineStats write_timeline(std::FILE* file, const std::vector<std::string>& paths, uint64_t min_blocked_ns,
                             const Limits& limits, std::vector<UnreadableTrace>* unreadable) {
  TimelineOptions o;
  o.min_blocked_ns = min_blocked_ns;
  o.mark_findings = false;
  return write_timeline(file, paths, o, limits, unreadable);
}

TimelineStats write_timeline(std::FILE* file, const std::vector<std::string>& paths, const TimelineOptions& opt,
                             const Limits& limits, std::vector<UnreadableTrace>* unreadable) {
  // Open and validate everything first: no half-written timeline for a bad input.
  struct Input {
    std::unique_ptr<TraceFile> trace;
    ProcessResult analysis;
    FlaggedCalls<uint32_t> marks;  // flagged call -> its finding
  };
  std::vector<Input> inputs;
  for (const auto& p : paths) {
    try {
      Input in;
      in.trace = TraceFile::open(p, limits);
      if (opt.mark_findings || opt.findings_only) {
        // The analysis' validating pass indexes the trace too: the slices are then its second
        // walk (the trace is not read a third time to be indexed).
        Options ao;
        ao.limits = limits;
        std::vector<CallMark> marks;
        in.analysis = analyze_trace(*in.trace, ao, &marks);
        for (const auto& m : marks) in.marks.add(m.tid, m.start_ns, m.finding);
      } else {
        in.trace->index();
      }
      inputs.push_back(std::move(in));
    } catch (const TraceError& e) {
      if (!unreadable) throw;
      unreadable->push_back(unreadable_trace(p, e));
    } catch (const std::bad_alloc& e) {
      if (!unreadable) throw;
      unreadable->push_back(unreadable_trace(p, e));
    }
  }
  TimelineStats stats;
  if (inputs.empty()) return stats;
  stats.traces = inputs.size();
  uint64_t base_realtime = UINT64_MAX;
  for (const auto& in : inputs) base_realtime = std::min(base_realtime, in.trace->header().start_realtime_ns);

  // The size estimate, before anything is written: events (all, the window's share of each trace's
  // time, or the flagged calls) times the format's bytes per event.
  const uint64_t per_event = opt.format == TimelineFormat::Json ? kJsonBytesPerEvent : kPerfettoBytesPerEvent;
  for (const auto& in : inputs) {
    // A flagged slice weighs about kFlaggedBytesPerEvent / per_event ordinary ones (its finding's texts).
    uint64_t n =
        opt.findings_only ? in.marks.size() * kFlaggedBytesPerEvent / per_event : in.trace->event_record_count();
    if (opt.has_window) {
      const FileHeader& h = in.trace->header();
      uint64_t first = h.start_realtime_ns - base_realtime;
      uint64_t last =
          first +
          (in.trace->last_time_ns() > h.start_monotonic_ns ? in.trace->last_time_ns() - h.start_monotonic_ns : 0);
      uint64_t lo = std::max(first, opt.window_start_ns), hi = std::min(last, opt.window_end_ns);
      double share =
          last > first ? static_cast<double>(hi > lo ? hi - lo : 0) / static_cast<double>(last - first) : 1.0;
      n = static_cast<uint64_t>(static_cast<double>(n) * std::min(1.0, share)) + 16;
    }
    stats.estimated_events += n;
  }
  stats.estimated_bytes = stats.estimated_events * per_event;
  if (opt.max_bytes && stats.estimated_bytes > opt.max_bytes) {
    stats.too_large = true;
    return stats;
  }

  std::unique_ptr<Sink> sink;
  if (opt.format == TimelineFormat::Json)
    sink = std::make_unique<JsonSink>(file);
  else
    sink = std::make_unique<PerfettoSink>(file);

  uint64_t trace_index = 0;
  bool any_simulated = false;
  for (auto& in : inputs) {
    ++trace_index;
    TraceFile* t = in.trace.get();
    const FileHeader& h = t->header();
    const uint64_t pid = h.pid;
    // Time in ns since the earliest process start (wall clock aligns processes). In unsigned
    // arithmetic, read as signed at the end: a hostile header's times must not overflow a signed
    // subtraction (the fuzzer's start_monotonic_ns of 2^63).
    const uint64_t offset = h.start_realtime_ns - base_realtime - h.start_monotonic_ns;
    auto ts = [&](uint64_t mono) {
      const auto v = static_cast<int64_t>(mono + offset);
      return v > 0 ? static_cast<uint64_t>(v) : 0;
    };
    auto in_window = [&](uint64_t start, uint64_t end) {
      return !opt.has_window || (ts(end) >= opt.window_start_ns && ts(start) <= opt.window_end_ns);
    };
    std::string exe = fixed_string(h.executable, sizeof h.executable);
    const bool simulated = t->device().simulated;
    any_simulated |= simulated;
    sink->process(pid, clean_text(fmt::format("{} (pid {}{})", exe.substr(exe.rfind('/') + 1), pid,
                                              simulated ? ", simulated" : ""),
                                  false));
    for (const auto& th : t->threads())
      sink->thread(
          pid, th.tid,
          clean_text(fmt::format("{} (tid {})", th.name.empty() ? std::string("thread") : th.name, th.tid), false));

    std::unordered_map<uint32_t, std::string> kernel_names;  // string id -> display name
    auto kernel_of = [&](uint32_t id) -> const std::string& {
      auto it = kernel_names.find(id);
      if (it != kernel_names.end()) return it->second;
      auto k = id ? t->string(id) : std::nullopt;
      return kernel_names.emplace(id, k ? clean_text(kernel_display_name(*k), false) : std::string("?")).first->second;
    };
    std::unordered_map<uint64_t, uint64_t> stream_tracks;  // stream key -> track
    auto stream_track = [&](uint8_t kind, uint64_t handle, uint32_t tid) {
      events::StreamRef stream = events::resolve_stream(kind, handle, tid);
      uint64_t key = stream.key;
      std::string name;
      if (stream_tracks.size() >= limits.streams && !stream_tracks.count(key)) {
        key = UINT64_MAX;  // bounded (Limits::streams): the streams beyond share one track
        name = fmt::format("streams beyond the first {}", limits.streams);
      }
      auto [it, inserted] = stream_tracks.emplace(key, kStreamTidBase + stream_tracks.size());
      if (inserted)
        sink->stream(pid, it->second, name.empty() ? events::stream_name(stream) : name, 1000 + stream_tracks.size());
      return it->second;
    };
    // Finding texts, once per finding.
    struct FindingText {
      std::string rule, message, call_site, fix;
    };
    std::vector<FindingText> finding_texts;
    for (const auto& f : in.analysis.findings) {
      const RuleInfo& ri = rule_info(f.id);
      finding_texts.push_back(
          FindingText{ri.name, clean_text(finding_message(f), false),
                      clean_text(f.call_site_known ? frame_text(f.call_site) : std::string("(not recorded)"), false),
                      clean_text(ri.help, false)});
    }
    auto finding_of = [&](uint32_t tid, uint64_t start) -> const FindingText* {
      if (in.marks.empty()) return nullptr;
      const uint32_t* f = in.marks.find(tid, start);
      return !f || *f >= finding_texts.size() ? nullptr : &finding_texts[*f];
    };
    std::unordered_map<uint32_t, std::deque<TimedCall>> timed;  // per thread
    uint64_t next_flow = 0;

    struct Pending {
      uint64_t track;
      uint16_t api;
      uint64_t function;
    };
    events::HostFunctionJoin<Pending> host_functions(limits.pending_callbacks);
    auto emit_run = [&](const Pending& p, const HostFuncRunRecord& run, uint32_t run_tid) {
      const FindingText* f = finding_of(run_tid, run.start_ns);
      if (opt.findings_only && !f) return;
      if (!in_window(run.start_ns, run.end_ns)) return;
      std::string fn = fmt::format("0x{:x}", p.function);
      Arg a[6] = {{"callback_id", {}, run.callback_id, false},
                  {"enqueued_by", api_name(static_cast<Api>(p.api))},
                  {"function", fn}};
      size_t n = 3;
      if (f) {
        a[n++] = Arg{"rule", f->rule};
        a[n++] = Arg{"message", f->message};
        a[n++] = Arg{"call_site", f->call_site};
        ++stats.flagged;
      }
      sink->slice(pid, p.track, ts(run.start_ns), run.end_ns - run.start_ns, fmt::format("host function ({})", fn),
                  f ? "host-function,flagged" : "host-function", a, n, 0, 0);
      ++stats.events;
    };
    uint32_t run_tid = 0;
    auto joined = [&](events::HostFunctionJoin<Pending>::Outcome outcome, const Pending& p,
                      const HostFuncRunRecord& run) {
      using Outcome = events::HostFunctionJoin<Pending>::Outcome;
      if (outcome == Outcome::Joined)
        emit_run(p, run, run_tid);
      else if (outcome == Outcome::OverLimit)
        ++stats.host_functions_dropped;  // bounded (Limits::pending_callbacks)
    };
    std::vector<std::string> flag_names(256);
    auto flags_text = [&](uint32_t flags) -> std::string {
      if (flags >= flag_names.size()) return record_flags_text(flags);
      std::string& text = flag_names[flags];
      if (text.empty()) text = record_flags_text(flags);
      return text;
    };
    std::string name, cat, flags_s, stream_s;
    // One host call: `args` are the call's own, the common ones are added here.
    auto call = [&](const RecordView& r, const char* kind, const CallHead& c, std::string_view nm, Arg* args, size_t n,
                    uint64_t stream, const std::string& gpu_label) {
      const FindingText* f = finding_of(r.tid, c.start_ns);
      if (opt.findings_only && !f) return;
      if (!in_window(c.start_ns, c.end_ns)) return;
      const uint64_t dur = c.end_ns - c.start_ns;
      bool blocked = dur >= opt.min_blocked_ns && !(c.flags & kFlagCaptureActive);
      cat = kind;
      if (blocked) cat += ",blocked";
      if (f) cat += ",flagged";
      flags_s = flags_text(c.flags);
      args[n++] = Arg{"blocked_ns", {}, dur, false};
      args[n++] = Arg{"flags", flags_s};
      if (stream != UINT64_MAX) {
        stream_s = fmt::format("0x{:x}", stream);
        args[n++] = Arg{"stream", stream_s};
      }
      if (f) {
        args[n++] = Arg{"rule", f->rule};
        args[n++] = Arg{"message", f->message};
        args[n++] = Arg{"call_site", f->call_site};
        args[n++] = Arg{"fix", f->fix};
        ++stats.flagged;
      }
      uint64_t flow = 0;
      if (c.flags & kFlagGpuTimed) {
        flow = trace_index << 48 | ++next_flow;
        auto& q = timed[r.tid];
        if (q.size() >= kTimedCallsPerThread) q.pop_front();
        q.push_back(TimedCall{c.start_ns, c.end_ns, flow, gpu_label, f != nullptr, false});
      }
      sink->slice(pid, r.tid, ts(c.start_ns), dur, nm, cat, args, n, flow, 0);
      ++stats.events;
    };
    auto gpu_span = [&](const RecordView& r, const GpuSpanRecord& g) {
      // Its call: the thread's timed call overlapping [host_before, host_after], most recent first.
      TimedCall* match = nullptr;
      auto qi = timed.find(r.tid);
      if (qi != timed.end())
        for (auto it = qi->second.rbegin(); it != qi->second.rend(); ++it)
          if (it->start <= g.host_after_ns && g.host_before_ns <= it->end) {
            match = &*it;
            break;
          }
      if (!match) ++stats.gpu_spans_unmatched;
      if (opt.findings_only && !(match && match->flagged)) return;
      if (!in_window(g.start_ns, g.end_ns)) return;
      uint64_t flow = 0;
      if (match && !match->flow_used) {
        flow = match->flow;
        match->flow_used = true;
        ++stats.flows;
      }
      uint64_t track = stream_track(g.stream_kind, g.stream, r.tid);
      const char* op = gpu_op_text(static_cast<GpuOp>(g.op));
      Arg a[2] = {{"op", op}, {"gpu_ns", {}, g.end_ns - g.start_ns, false}};
      std::string_view label = match && !match->label.empty() ? std::string_view(match->label) : std::string_view(op);
      sink->slice(pid, track, ts(g.start_ns), g.end_ns - g.start_ns, label, std::string("gpu,") + op, a, 2, 0, flow);
      ++stats.events;
      ++stats.gpu_spans;
    };
    t->for_each_merged([&](const RecordView& r) {
      ++stats.records;
      events::visit(r, [&](const auto& ev) {
        using E = std::decay_t<decltype(ev)>;
        using events::is_one_of;
        Arg a[16];
        if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset>) {
          const CopyRecord& c = ev.rec;
          constexpr bool copy = E::kind == RecordType::Copy;
          std::string bytes = format_bytes(c.bytes);
          const char* dir = copy ? direction_name(static_cast<Direction>(c.direction)) : "";
          const char* src = memory_kind_name(static_cast<MemoryKind>(c.src_memory));
          const char* dst = memory_kind_name(static_cast<MemoryKind>(c.dst_memory));
          name = call_label(ev, bytes);
          std::string label =
              copy ? fmt::format("{} {} ({} to {})", dir, bytes, src, dst) : fmt::format("memset {}", bytes);
          a[0] = Arg{"bytes", {}, c.bytes, false};
          a[1] = Arg{"src", src};
          a[2] = Arg{"dst", dst};
          a[3] = Arg{"driver", api_name(static_cast<Api>(c.driver_fn))};
          call(r, copy ? "copy" : "memset", c, name, a, 4, c.stream, label);
        } else if constexpr (E::kind == RecordType::Launch) {
          const LaunchRecord& l = ev.rec;
          const std::string& kernel = kernel_of(l.kernel_name_id);
          name = call_label(ev, kernel);
          std::string grid = fmt::format("[{},{},{}]", l.grid[0], l.grid[1], l.grid[2]);
          std::string block = fmt::format("[{},{},{}]", l.block[0], l.block[1], l.block[2]);
          a[0] = Arg{"kernel", kernel};
          a[1] = Arg{"grid", grid};
          a[2] = Arg{"block", block};
          call(r, "launch", l, name, a, 3, l.stream, kernel);
        } else if constexpr (E::kind == RecordType::HostFuncEnqueue) {
          const HostFuncEnqueueRecord& e = ev.rec;
          std::string fn = fmt::format("host function (0x{:x})", e.user_function);
          a[0] = Arg{"callback_id", {}, e.callback_id, false};
          call(r, "host-function", e, api_name(static_cast<Api>(e.api)), a, 1, e.stream, fn);
          Pending p{stream_track(e.stream_kind, e.stream, r.tid), e.api, e.user_function};
          HostFuncRunRecord run{};
          run_tid = 0;
          auto outcome = host_functions.enqueue(e.callback_id, p, &run);
          joined(outcome, p, run);
        } else if constexpr (E::kind == RecordType::HostFuncRun) {
          Pending p{};
          run_tid = r.tid;
          joined(host_functions.run(ev.rec, &p), p, ev.rec);
        } else if constexpr (E::kind == RecordType::Sync) {
          const SyncRecord& s = ev.rec;
          std::string handle = fmt::format("0x{:x}", s.handle);
          a[0] = Arg{"handle", handle};
          call(r, "sync", s, api_name(static_cast<Api>(s.api)), a, 1, UINT64_MAX, {});
        } else if constexpr (E::kind == RecordType::MemoryOp) {
          const MemoryOpRecord& m = ev.rec;
          a[0] = Arg{"bytes", {}, m.bytes, false};
          a[1] = Arg{"memory", memory_kind_name(static_cast<MemoryKind>(m.memory))};
          call(r, "memory", m, api_name(static_cast<Api>(m.api)), a, 2, UINT64_MAX, {});
        } else if constexpr (is_one_of<E, RecordType::StreamCreate, RecordType::StreamDestroy, RecordType::Capture>) {
          call(r, "stream", ev.rec, api_name(static_cast<Api>(ev.rec.api)), a, 0, ev.rec.stream, {});
        } else if constexpr (E::kind == RecordType::GpuSpan) {
          gpu_span(r, ev.rec);
        }
      });
    });
  }
  sink->finish(any_simulated);
  stats.bytes = sink->bytes();
  for (const auto& in : inputs)
    if (in.trace->truncated_while_reading() && unreadable)
      unreadable->push_back(
          {in.trace->path(), fmt::format("the trace was truncated while being read (it had {} bytes when opened): "
                                         "the timeline holds its records up to that point",
                                         in.trace->file_size())});
  return stats;
}

}  // namespace asyncwatch
