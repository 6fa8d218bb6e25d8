#include "timeline_export.h"

#include "analysis.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "format.h"
#include "trace_reader.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
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
    uint64_t a = u.ns < 0 ? static_cast<uint64_t>(-u.ns) : static_cast<uint64_t>(u.ns);
    return fmt::format_to(ctx.out(), "{}{}.{:03}", u.ns < 0 ? "-" : "", a / 1000, a % 1000);
  }
};

namespace asyncwatch {

using namespace trace;

namespace {

// Buffered writer: fmt into memory, fwrite in large chunks.
class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) { buf_.reserve(1 << 20); }
  ~Out() { flush(); }
  template <class S, class... A>
  void put(const S& s, A&&... args) {
    fmt::format_to(fmt::appender(buf_), s, std::forward<A>(args)...);
    if (buf_.size() > (1 << 20)) flush();
  }
  void flush() {
    if (buf_.size() != 0) std::fwrite(buf_.data(), 1, buf_.size(), f_);
    buf_.clear();
  }

 private:
  std::FILE* f_;
  fmt::memory_buffer buf_;
};

// Length of the valid UTF-8 sequence at s[i], 0 when invalid.
size_t utf8_length(const std::string& s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

// JSON string contents: quotes, backslashes and control characters escaped; bytes that are
// not valid UTF-8 (names in a trace can be anything) become U+FFFD.
std::string json_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      o += fmt::format("\\u{:04x}", c);
      ++i;
    } else if (size_t n = utf8_length(s, i)) {
      o.append(s, i, n);
      i += n;
    } else {
      o += "\\ufffd";
      ++i;
    }
  }
  return o;
}

constexpr uint64_t kStreamTidBase = 1'000'000'000;

}  // namespace

TimelineStats write_timeline(std::FILE* file, const std::vector<std::string>& paths, uint64_t min_blocked_ns,
                             const Limits& limits, std::vector<UnreadableTrace>* unreadable) {
  // Open and validate everything first: no half-written timeline for a bad input.
  std::vector<std::unique_ptr<TraceFile>> traces;
  for (const auto& p : paths) {
    try {
      auto t = TraceFile::open(p, limits);
      t->index();
      traces.push_back(std::move(t));
    } catch (const TraceError& e) {
      if (!unreadable) throw;
      unreadable->push_back(unreadable_trace(p, e));
    } catch (const std::bad_alloc& e) {
      if (!unreadable) throw;
      unreadable->push_back(unreadable_trace(p, e));
    }
  }
  TimelineStats stats;
  if (traces.empty()) return stats;
  stats.traces = traces.size();
  uint64_t base_realtime = UINT64_MAX;
  for (const auto& t : traces) base_realtime = std::min(base_realtime, t->header().start_realtime_ns);

  Out out(file);
  out.put(FMT_COMPILE("{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"));
  bool first = true;
  auto sep = [&]() -> const char* {
    if (first) {
      first = false;
      return "";
    }
    return ",\n";
  };
  for (const auto& t : traces) {
    const FileHeader& h = t->header();
    const uint64_t pid = h.pid;
    // Time in microseconds since the earliest process start (wall clock aligns processes).
    const int64_t offset = static_cast<int64_t>(h.start_realtime_ns - base_realtime) - static_cast<int64_t>(h.start_monotonic_ns);
    auto ts = [&](uint64_t mono) { return Us{static_cast<int64_t>(mono) + offset}; };
    auto dur = [](uint64_t start, uint64_t end) { return Us{static_cast<int64_t>(end - start)}; };
    std::string exe = fixed_string(h.executable, sizeof h.executable);
    std::string exe_base = exe.substr(exe.rfind('/') + 1);
    out.put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"{} (pid {})\"}}}}"), sep(), pid,
            json_escape(exe_base), pid);
    for (const auto& th : t->threads()) {
      out.put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{} (tid {})\"}}}}"),
              sep(), pid, th.tid, json_escape(th.name.empty() ? std::string("thread") : th.name), th.tid);
    }
    std::unordered_map<uint32_t, std::string> kernel_names;  // string id -> escaped display name
    auto kernel_of = [&](uint32_t id) -> const std::string& {
      auto it = kernel_names.find(id);
      if (it != kernel_names.end()) return it->second;
      auto k = id ? t->string(id) : std::nullopt;
      return kernel_names.emplace(id, k ? json_escape(kernel_display_name(*k)) : std::string("?")).first->second;
    };
    std::unordered_map<uint64_t, uint64_t> stream_tracks;  // stream key -> track tid
    auto stream_track = [&](uint8_t kind, uint64_t handle, uint32_t tid) {
      events::StreamRef stream = events::resolve_stream(kind, handle, tid);
      uint64_t key = stream.key;
      std::string name;
      if (stream_tracks.size() >= limits.streams && !stream_tracks.count(key)) {
        // Bounded (Limits::streams): the streams beyond share one track.
        key = UINT64_MAX;
        name = fmt::format("streams beyond the first {}", limits.streams);
      }
      auto [it, inserted] = stream_tracks.emplace(key, kStreamTidBase + stream_tracks.size());
      if (inserted) {
        if (name.empty()) name = events::stream_name(stream);
        out.put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}"), sep(), pid,
                it->second, name);
        out.put(FMT_COMPILE("{}{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}"),
                sep(), pid, it->second, 1000 + stream_tracks.size());
      }
      return it->second;
    };
    struct Pending {
      uint64_t track;
      uint16_t api;
      uint64_t function;
    };
    events::HostFunctionJoin<Pending> host_functions(limits.pending_callbacks);
    auto emit_run = [&](const Pending& p, const HostFuncRunRecord& run) {
      out.put(FMT_COMPILE("{}{{\"ph\":\"X\",\"cat\":\"host-function\",\"name\":\"host function (0x{:x})\",\"pid\":{},\"tid\":{},"
              "\"ts\":{},\"dur\":{},\"args\":{{\"callback_id\":{},\"enqueued_by\":\"{}\"}}}}"),
              sep(), p.function, pid, p.track, ts(run.start_ns), dur(run.start_ns, run.end_ns),
              run.callback_id, api_name(static_cast<Api>(p.api)));
      ++stats.events;
    };
    auto joined = [&](events::HostFunctionJoin<Pending>::Outcome outcome, const Pending& p,
                      const HostFuncRunRecord& run) {
      using Outcome = events::HostFunctionJoin<Pending>::Outcome;
      if (outcome == Outcome::Joined) emit_run(p, run);
      else if (outcome == Outcome::OverLimit) ++stats.host_functions_dropped;  // bounded (Limits::pending_callbacks)
    };
    std::vector<std::string> flag_names(256);
    auto flags_text = [&](uint32_t flags) -> const std::string& {
      if (flags >= flag_names.size()) {
        static thread_local std::string other;
        other = record_flags_text(flags);
        return other;
      }
      std::string& text = flag_names[flags];
      if (text.empty()) text = record_flags_text(flags);
      return text;
    };
    // Writes an event up to its args' common part; the caller appends more args, then
    // `,"name":...` and the closing braces (see close()).
    auto call = [&](const RecordView& r, const char* cat, uint64_t start, uint64_t end, uint32_t flags) {
      bool blocked = end - start >= min_blocked_ns && !(flags & kFlagCaptureActive);
      out.put(FMT_COMPILE("{}{{\"ph\":\"X\",\"cat\":\"{}{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
              "\"args\":{{\"blocked_ns\":{},\"flags\":\"{}\""),
              sep(), cat, blocked ? ",blocked" : "", pid, r.tid, ts(start), dur(start, end), end - start,
              flags_text(flags));
      ++stats.events;
    };
    t->for_each_merged([&](const RecordView& r) {
      ++stats.records;
      switch (r.type) {
        case RecordType::Copy:
        case RecordType::Memset: {
          auto c = r.as<CopyRecord>();
          bool copy = r.type == RecordType::Copy;
          call(r, copy ? "copy" : "memset", c.start_ns, c.end_ns, c.flags);
          out.put(FMT_COMPILE(",\"bytes\":{},\"src\":\"{}\",\"dst\":\"{}\",\"stream\":\"0x{:x}\",\"driver\":\"{}\"}},"
                  "\"name\":\"{}{}{} {}\"}}"),
                  c.bytes, memory_kind_name(static_cast<MemoryKind>(c.src_memory)),
                  memory_kind_name(static_cast<MemoryKind>(c.dst_memory)), c.stream,
                  api_name(static_cast<Api>(c.driver_fn)), api_name(static_cast<Api>(c.api)), copy ? " " : "",
                  copy ? direction_name(static_cast<Direction>(c.direction)) : "", format_bytes(c.bytes));
          break;
        }
        case RecordType::Launch: {
          auto l = r.as<LaunchRecord>();
          const std::string& kernel = kernel_of(l.kernel_name_id);
          call(r, "launch", l.start_ns, l.end_ns, l.flags);
          out.put(FMT_COMPILE(",\"kernel\":\"{}\",\"stream\":\"0x{:x}\",\"grid\":[{},{},{}],\"block\":[{},{},{}]}},"
                  "\"name\":\"{} {}\"}}"),
                  kernel, l.stream, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                  api_name(static_cast<Api>(l.api)), kernel);
          break;
        }
        case RecordType::HostFuncEnqueue: {
          auto e = r.as<HostFuncEnqueueRecord>();
          call(r, "host-function", e.start_ns, e.end_ns, e.flags);
          out.put(FMT_COMPILE(",\"callback_id\":{},\"stream\":\"0x{:x}\"}},\"name\":\"{}\"}}"), e.callback_id, e.stream,
                  api_name(static_cast<Api>(e.api)));
          Pending p{stream_track(e.stream_kind, e.stream, r.tid), e.api, e.user_function};
          HostFuncRunRecord run{};
          joined(host_functions.enqueue(e.callback_id, p, &run), p, run);
          break;
        }
        case RecordType::HostFuncRun: {
          auto run = r.as<HostFuncRunRecord>();
          Pending p{};
          joined(host_functions.run(run, &p), p, run);
          break;
        }
        case RecordType::Sync: {
          auto s = r.as<SyncRecord>();
          call(r, "sync", s.start_ns, s.end_ns, s.flags);
          out.put(FMT_COMPILE(",\"handle\":\"0x{:x}\"}},\"name\":\"{}\"}}"), s.handle, api_name(static_cast<Api>(s.api)));
          break;
        }
        case RecordType::MemoryOp: {
          auto m = r.as<MemoryOpRecord>();
          call(r, "memory", m.start_ns, m.end_ns, m.flags);
          out.put(FMT_COMPILE(",\"bytes\":{},\"memory\":\"{}\"}},\"name\":\"{}\"}}"), m.bytes,
                  memory_kind_name(static_cast<MemoryKind>(m.memory)), api_name(static_cast<Api>(m.api)));
          break;
        }
        case RecordType::StreamCreate:
        case RecordType::StreamDestroy: {
          auto s = r.as<StreamCreateRecord>();
          call(r, "stream", s.start_ns, s.end_ns, 0);
          out.put(FMT_COMPILE(",\"stream\":\"0x{:x}\"}},\"name\":\"{}\"}}"), s.stream, api_name(static_cast<Api>(s.api)));
          break;
        }
        case RecordType::Capture: {
          auto c = r.as<CaptureRecord>();
          call(r, "stream", c.start_ns, c.end_ns, 0);
          out.put(FMT_COMPILE(",\"stream\":\"0x{:x}\"}},\"name\":\"{}\"}}"), c.stream, api_name(static_cast<Api>(c.api)));
          break;
        }
        default: break;
      }
    });
  }
  out.put(FMT_COMPILE("\n]}}\n"));
  out.flush();
  return stats;
}

}  // namespace asyncwatch
