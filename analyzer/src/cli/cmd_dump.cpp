// asyncwatch dump TRACE: the file header and every raw record in file order, one per line,
// enums by name. Records are printed up to the first problem, then the problem (exit 2).
// Text from the trace is shown through printable(..., quoted): a name cannot drive the
// terminal or end its "..." field early.
#include "cli/commands.h"
#include "report/format.h"
#include "report/printable.h"
#include "events/event.h"
#include "read/trace_reader.h"

#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <type_traits>

namespace asyncwatch {

using namespace trace;

namespace {

std::string api_text(uint16_t api) { return api_name(static_cast<Api>(api)); }

std::string describe(const RecordView& r) {
  std::string head =
      fmt::format("@0x{:x} blk {} tid {} {}", r.file_offset, r.block_index, r.tid, record_type_name(r.type));
  return events::visit(r, [&](const auto& ev) -> std::string {
    using E = std::decay_t<decltype(ev)>;
    using events::is_one_of;
    // A call still in flight has no end: end_ns holds its caller's return address (trace_format.h).
    bool in_flight = false;
    if constexpr (E::kCall) in_flight = (ev.rec.flags & kFlagInFlight) != 0;
    [[maybe_unused]] auto times = [in_flight](uint64_t start, uint64_t end) {
      if (in_flight) return fmt::format("start={} in-flight caller=0x{:x}", start, end);
      return fmt::format("start={} end={} blocked={}ns", start, end, end - start);
    };
    if constexpr (E::kind == RecordType::ThreadInfo) {
      const auto& t = ev.rec;
      return fmt::format("{} tid={} name=\"{}\"", head, t.tid, printable(fixed_string(t.name, sizeof t.name), true));
    }
    if constexpr (E::kind == RecordType::Module) {
      const auto& m = ev.rec;
      std::string path(reinterpret_cast<const char*>(ev.payload()), m.path_len);
      std::string id;
      for (int i = 0; i < m.build_id_len; ++i) id += fmt::format("{:02x}", m.build_id[i]);
      return fmt::format("{} path=\"{}\" load_bias=0x{:x} low=0x{:x} high=0x{:x} build_id={}", head,
                         printable(path, true), m.load_bias, m.low, m.high, id.empty() ? "-" : id);
    }
    if constexpr (E::kind == RecordType::Stack) {
      const auto& s = ev.rec;
      std::string frames;
      for (uint32_t i = 0; i < s.depth; ++i) {
        uint64_t a;
        std::memcpy(&a, ev.payload() + 8 * i, 8);
        frames += fmt::format(" 0x{:x}", a);
      }
      std::string text = fmt::format("{} stack_id={} depth={} frames:{}", head, s.stack_id, s.depth, frames);
      if (s.python_depth) {
        text += fmt::format(" python_depth={} python_end={}", s.python_depth,
                            python_walk_end_text(static_cast<PythonWalkEnd>(s.python_end)));
        if (s.python_own) text += fmt::format(" python_own={}", s.python_own);  // then the lender's
        text += " python:";
        for (uint32_t i = 0; i < s.python_depth; ++i) {
          PythonFrameRef f;
          std::memcpy(&f, ev.payload() + 8 * (s.depth + i), sizeof f);
          text += fmt::format(" {}@{}", f.code_id, f.instr);
        }
      }
      return text;
    }
    if constexpr (E::kind == RecordType::PyCode) {
      const auto& c = ev.rec;
      const char* p = reinterpret_cast<const char*>(ev.payload());
      return fmt::format(
          "{} code_id={} file=\"{}\" name=\"{}\" first_line={} instructions={} line_table={} bytes "
          "(format {}) flags={}",
          head, c.code_id, printable(std::string(p, c.filename_len), true),
          printable(std::string(p + c.filename_len, c.qualname_len), true), c.first_line, c.instructions,
          c.line_table_len, c.line_table_format, c.flags);
    }
    if constexpr (E::kind == RecordType::PythonInfo) {
      const auto& i = ev.rec;
      return fmt::format("{} version=0x{:08x} availability={} detail=\"{}\"", head, i.version_hex,
                         i.availability == 1 ? "ready" : "unsupported",
                         printable(fixed_string(i.detail, sizeof i.detail), true));
    }
    if constexpr (E::kind == RecordType::String) {
      const auto& s = ev.rec;
      std::string text(reinterpret_cast<const char*>(ev.payload()), s.len);
      return fmt::format("{} string_id={} \"{}\"", head, s.string_id, printable(text, true));
    }
    if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset>) {
      const auto& c = ev.rec;
      return fmt::format(
          "{} api={} driver={} dir={} src={} dst={} stream_kind={} stream=0x{:x} bytes={} flags={} "
          "result={} stack={} {}",
          head, api_text(c.api), api_text(c.driver_fn), direction_name(static_cast<Direction>(c.direction)),
          memory_kind_name(static_cast<MemoryKind>(c.src_memory)),
          memory_kind_name(static_cast<MemoryKind>(c.dst_memory)),
          stream_kind_name(static_cast<StreamKind>(c.stream_kind)), c.stream, c.bytes, record_flags_text(c.flags),
          c.result, c.stack_id, times(c.start_ns, c.end_ns));
    }
    if constexpr (E::kind == RecordType::Launch) {
      const auto& l = ev.rec;
      return fmt::format(
          "{} api={} driver={} kernel_name_id={} grid={}x{}x{} block={}x{}x{} shared={} stream_kind={} "
          "stream=0x{:x} flags={} result={} stack={} {}",
          head, api_text(l.api), api_text(l.driver_fn), l.kernel_name_id, l.grid[0], l.grid[1], l.grid[2], l.block[0],
          l.block[1], l.block[2], l.shared_mem_bytes, stream_kind_name(static_cast<StreamKind>(l.stream_kind)),
          l.stream, record_flags_text(l.flags), l.result, l.stack_id, times(l.start_ns, l.end_ns));
    }
    if constexpr (E::kind == RecordType::HostFuncEnqueue) {
      const auto& e = ev.rec;
      return fmt::format(
          "{} api={} driver={} callback_id={} function=0x{:x} stream_kind={} stream=0x{:x} flags={} "
          "result={} stack={} {}",
          head, api_text(e.api), api_text(e.driver_fn), e.callback_id, e.user_function,
          stream_kind_name(static_cast<StreamKind>(e.stream_kind)), e.stream, record_flags_text(e.flags), e.result,
          e.stack_id, times(e.start_ns, e.end_ns));
    }
    if constexpr (E::kind == RecordType::HostFuncRun) {
      const auto& e = ev.rec;
      return fmt::format("{} callback_id={} start={} end={} ran={}ns", head, e.callback_id, e.start_ns, e.end_ns,
                         e.end_ns - e.start_ns);
    }
    if constexpr (E::kind == RecordType::GpuSpan) {
      const auto& g = ev.rec;
      return fmt::format(
          "{} op={} stream_kind={} stream=0x{:x} host_before={} host_after={} gpu_start={} gpu_end={} ran={}ns", head,
          gpu_op_text(static_cast<GpuOp>(g.op)), stream_kind_name(static_cast<StreamKind>(g.stream_kind)), g.stream,
          g.host_before_ns, g.host_after_ns, g.start_ns, g.end_ns, g.end_ns - g.start_ns);
    }
    if constexpr (E::kind == RecordType::NvtxRange) {
      const auto& n = ev.rec;
      return fmt::format("{} kind={} range_id={} name={}{} time={}", head,
                         nvtx_kind_text(static_cast<NvtxKind>(n.kind)), n.range_id, n.name_id,
                         n.domain ? fmt::format(" domain={}", n.domain) : std::string(), n.start_ns);
    }
    if constexpr (E::kind == RecordType::SiteSummary) {  // the folded calls' record, described as a record of its own
      const auto& site = ev.rec;
      RecordHeader ch;
      std::memcpy(&ch, site.call, sizeof ch);
      RecordView call{
          static_cast<RecordType>(ch.type), ch.size, site.call, r.file_offset, r.tid, r.block_index, ch.size};
      return fmt::format("{} count={} total={}ns max={}ns first_start={} last_start={} call=[{}]", head, site.count,
                         site.total_ns, site.max_ns, site.first_start_ns, site.last_start_ns, describe(call));
    }
    if constexpr (E::kind == RecordType::GpuClock) {
      const auto& c = ev.rec;
      return fmt::format("{} host={} uncertainty={}ns spans_dropped={}", head, c.host_ns, c.uncertainty_ns,
                         c.spans_dropped);
    }
    if constexpr (E::kind == RecordType::Sync) {
      const auto& s = ev.rec;
      return fmt::format("{} api={} driver={} stream_kind={} handle=0x{:x} flags={} result={} stack={} {}{}", head,
                         api_text(s.api), api_text(s.driver_fn),
                         stream_kind_name(static_cast<StreamKind>(s.stream_kind)), s.handle, record_flags_text(s.flags),
                         s.result, s.stack_id, times(s.start_ns, s.end_ns),
                         s.repeat > 1 ? fmt::format(" repeat={}", s.repeat) : std::string());
    }
    if constexpr (E::kind == RecordType::MemoryOp) {
      const auto& m = ev.rec;
      return fmt::format(
          "{} api={} driver={} memory={} address=0x{:x} bytes={} alloc_flags=0x{:x} flags={} result={} "
          "stack={} {}",
          head, api_text(m.api), api_text(m.driver_fn), memory_kind_name(static_cast<MemoryKind>(m.memory)), m.address,
          m.bytes, m.alloc_flags, record_flags_text(m.flags), m.result, m.stack_id, times(m.start_ns, m.end_ns));
    }
    if constexpr (is_one_of<E, RecordType::StreamCreate, RecordType::StreamDestroy>) {
      const auto& s = ev.rec;
      return fmt::format("{} api={} driver={} stream=0x{:x} stream_flags=0x{:x} priority={} result={} {}", head,
                         api_text(s.api), api_text(s.driver_fn), s.stream, s.stream_flags, s.priority, s.result,
                         times(s.start_ns, s.end_ns));
    }
    if constexpr (E::kind == RecordType::Capture) {
      const auto& c = ev.rec;
      return fmt::format("{} api={} driver={} stream=0x{:x} mode={} result={} {}", head, api_text(c.api),
                         api_text(c.driver_fn), c.stream, c.mode, c.result, times(c.start_ns, c.end_ns));
    }
    if constexpr (E::kind == RecordType::BatchCopy) {
      const auto& b = ev.rec;
      return fmt::format(
          "{} api={} driver={} elements={} classified={} pageable_elements={} pageable_bytes={} "
          "stream_order_pageable_sources={} stream_order_pageable_bytes={} dir={} src={} dst={} "
          "stream_kind={} stream=0x{:x} bytes={} flags={} result={} stack={} {}",
          head, api_text(b.api), api_text(b.driver_fn), b.elements, b.classified, b.pageable_elements, b.pageable_bytes,
          b.stream_order_pageable_sources, b.stream_order_pageable_bytes,
          direction_name(static_cast<Direction>(b.direction)), memory_kind_name(static_cast<MemoryKind>(b.src_memory)),
          memory_kind_name(static_cast<MemoryKind>(b.dst_memory)),
          stream_kind_name(static_cast<StreamKind>(b.stream_kind)), b.stream, b.bytes, record_flags_text(b.flags),
          b.result, b.stack_id, times(b.start_ns, b.end_ns));
    }
    if constexpr (E::kind == RecordType::ManagedOp) {
      const auto& m = ev.rec;
      return fmt::format(
          "{} api={} driver={} memory={} address=0x{:x} bytes={} location_type={} location_id={} "
          "op_flags=0x{:x} stream_kind={} stream=0x{:x} flags={} result={} stack={} {}",
          head, api_text(m.api), api_text(m.driver_fn), memory_kind_name(static_cast<MemoryKind>(m.memory)), m.address,
          m.bytes, m.location_type, m.location_id, m.op_flags, stream_kind_name(static_cast<StreamKind>(m.stream_kind)),
          m.stream, record_flags_text(m.flags), m.result, m.stack_id, times(m.start_ns, m.end_ns));
    }
    if constexpr (E::kind == RecordType::GraphOp) {
      const auto& g = ev.rec;
      return fmt::format(
          "{} api={} driver={} graph=0x{:x} exec=0x{:x} node=0x{:x} stream=0x{:x} dir={} src={} dst={} "
          "bytes={} flags={} result={} stack={} {}",
          head, api_text(g.api), api_text(g.driver_fn), g.graph, g.exec, g.node, g.stream,
          direction_name(static_cast<Direction>(g.direction)), memory_kind_name(static_cast<MemoryKind>(g.src_memory)),
          memory_kind_name(static_cast<MemoryKind>(g.dst_memory)), g.bytes, record_flags_text(g.flags), g.result,
          g.stack_id, times(g.start_ns, g.end_ns));
    }
    if constexpr (E::kind == RecordType::GraphLaunch) {
      const auto& l = ev.rec;
      return fmt::format("{} api={} driver={} exec=0x{:x} stream_kind={} stream=0x{:x} flags={} result={} stack={} {}",
                         head, api_text(l.api), api_text(l.driver_fn), l.exec,
                         stream_kind_name(static_cast<StreamKind>(l.stream_kind)), l.stream, record_flags_text(l.flags),
                         l.result, l.stack_id, times(l.start_ns, l.end_ns));
    }
    if constexpr (E::kind == RecordType::Lost) return fmt::format("{} count={}", head, ev.rec.count);
    if constexpr (E::kind == RecordType::DeviceInfo) {
      const auto& d = ev.rec;
      return fmt::format("{} name=\"{}\" ordinal={} driver_version={} simulated={}", head,
                         printable(fixed_string(d.name, sizeof d.name), true), d.device_ordinal, d.driver_version,
                         d.simulated);
    }
    return head;
  });
}

}  // namespace

int cmd_dump(const std::string& path) {
  std::unique_ptr<TraceFile> t;
  try {
    t = TraceFile::open(path);
  } catch (const TraceError& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  const FileHeader& h = t->header();
  std::string out;
  out += fmt::format("file {}\n", printable(path));
  out +=
      fmt::format("header version={} header_size={} block_size={} closed={} ({}) blocks_in_file={} blocks_claimed={}\n",
                  h.version, h.header_size, h.block_size, h.closed == kClosedCleanly ? "cleanly" : "not cleanly",
                  fmt::format("0x{:x}", h.closed), t->block_count(), h.blocks_claimed);
  out += fmt::format("header pid={} ppid={} parent_pid_if_forked={} exit_status={} records_lost={}\n", h.pid, h.ppid,
                     h.parent_pid_if_forked, h.exit_status, h.records_lost);
  if (h.pause_count || h.paused_ns || h.paused_since_ns)
    out += fmt::format("header pauses={} paused_ns={} paused_since_ns={}\n", h.pause_count, h.paused_ns,
                       h.paused_since_ns);
  if (h.capture_mode || h.capture_ranges)
    out += fmt::format(
        "header capture={} ranges={} first_start_ns={} last_start_ns={} last_end_ns={} delay_ns={} duration_ns={}\n",
        trace::capture_mode_text(h.capture_mode), h.capture_ranges, h.capture_first_start_ns, h.capture_last_start_ns,
        h.capture_last_end_ns, h.capture_delay_ns, h.capture_duration_ns);
  out += fmt::format("header start_monotonic_ns={} start_realtime_ns={} end_monotonic_ns={} wall={}\n",
                     h.start_monotonic_ns, h.start_realtime_ns, h.end_monotonic_ns,
                     h.end_monotonic_ns >= h.start_monotonic_ns
                         ? format_duration(h.end_monotonic_ns - h.start_monotonic_ns)
                         : std::string("?"));
  out += fmt::format("header config_flags=0x{:x} launch_stack_threshold_ns={} hostname=\"{}\"\n", h.config_flags,
                     h.launch_stack_threshold_ns, printable(fixed_string(h.hostname, sizeof h.hostname), true));
  out += fmt::format("header executable=\"{}\"\n", printable(fixed_string(h.executable, sizeof h.executable), true));
  out +=
      fmt::format("header command_line=\"{}\"\n", printable(fixed_string(h.command_line, sizeof h.command_line), true));
  out += fmt::format("header cuda_env=\"{}\"\n", printable(fixed_string(h.cuda_env, sizeof h.cuda_env), true));
  std::fwrite(out.data(), 1, out.size(), stdout);
  uint64_t records = 0;
  try {
    t->scan(
        [&](const RecordView& r) {
          std::string line = describe(r);
          line += '\n';
          std::fwrite(line.data(), 1, line.size(), stdout);
          ++records;
        },
        [&](uint64_t b, uint32_t tid, bool used) {
          std::string line = used ? fmt::format("block {} tid {}\n", b, tid) : fmt::format("block {} unused\n", b);
          std::fwrite(line.data(), 1, line.size(), stdout);
        });
  } catch (const TraceError& e) {
    std::fflush(stdout);
    print_error(e.what());
    return kExitInvalid;
  }
  std::printf("%llu records\n", static_cast<unsigned long long>(records));
  return std::ferror(stdout) ? kExitInvalid : kExitOk;
}

}  // namespace asyncwatch
