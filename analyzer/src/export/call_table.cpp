#include "export/call_table.h"

#include "events/event.h"
#include "findings/rules.h"
#include "read/trace_reader.h"
#include "report/reports.h"
#include "symbols/call_site.h"
#include "timeline/flagged_calls.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <unordered_map>

namespace asyncwatch {

using namespace trace;

namespace {

struct Row {
  const char* record = "";
  const CallHead* head = nullptr;
  uint64_t stream = UINT64_MAX;
  const char* direction = "";
  const char* src = "";
  const char* dst = "";
  uint64_t bytes = 0;
  bool has_bytes = false;
  const std::string* kernel = nullptr;
};

// Text that is empty is "not applicable" (an empty CSV cell, NULL in SQL).
Cell text_or_null(std::string_view t) { return t.empty() ? Cell{} : Cell::of(t); }

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

CsvCallSink::CsvCallSink(std::FILE* out) : out_(out) {
  for (size_t i = 0; i < kCallColumnCount; ++i) {
    if (i) std::fputc(',', out_);
    std::fputs(kCallColumns[i].name, out_);
  }
  std::fputc('\n', out_);
}

void CsvCallSink::row(const CallRow& cells) {
  line_.clear();
  for (size_t i = 0; i < kCallColumnCount; ++i) {
    if (i) line_ += ',';
    const Cell& c = cells[i];
    if (c.kind == Cell::Kind::Integer)
      fmt::format_to(std::back_inserter(line_), "{}", c.integer);
    else if (c.kind == Cell::Kind::Text)
      line_ += csv_field(c.text);
  }
  line_ += '\n';
  std::fwrite(line_.data(), 1, line_.size(), out_);
}

CallTableStats write_call_table(CallTableSink& sink, const std::vector<std::string>& paths, const Options& options,
                                std::vector<UnreadableTrace>* unreadable) {
  CallTableStats stats;
  for (const auto& path : paths) {
    std::unique_ptr<TraceFile> t;
    ProcessResult analysis;
    FlaggedCalls<uint32_t> marks;
    try {
      t = TraceFile::open(path, options.limits);
      t->index();
      std::vector<CallMark> calls;
      analysis = analyze_trace(path, options, &calls);
      for (const auto& m : calls) marks.add(m.tid, m.start_ns, m.finding);
    } catch (const std::exception& e) {
      if (!unreadable) throw;
      unreadable->push_back(unreadable_trace(path, e));
      continue;
    }
    ++stats.traces;
    // A finding's cells once: its rule id, its rank in this trace (1 = blocked longest) and its call site.
    struct FindingCells {
      std::string id, call_site;
      int64_t rank = 0;
    };
    std::vector<FindingCells> findings;
    // Groups below their rule's group-level threshold (implicit-sync's call count) are no finding
    // in the report (build_report): their calls get none here either.
    std::vector<size_t> order;
    for (size_t i = 0; i < analysis.findings.size(); ++i) {
      const Finding& f = analysis.findings[i];
      const auto reported = rule_info(f.id).hooks.reported;
      const bool is_finding = !reported || reported(f, options);
      findings.push_back(FindingCells{is_finding ? rule_info(f.id).name : "",
                                      is_finding && f.call_site_known ? frame_text(f.call_site) : "", 0});
      if (is_finding) order.push_back(i);
    }
    // Ranks: by blocked time, as the report orders a single trace's findings.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return analysis.findings[a].blocked.total() > analysis.findings[b].blocked.total();
    });
    for (size_t r = 0; r < order.size(); ++r) findings[order[r]].rank = static_cast<int64_t>(r + 1);
    const FileHeader& h = t->header();
    const auto pid = static_cast<int64_t>(h.pid);
    const uint64_t t0 = h.start_monotonic_ns;
    const int64_t simulated = t->device().simulated ? 1 : 0;
    std::unordered_map<uint32_t, std::string> kernels;
    auto kernel_of = [&](uint32_t id) -> const std::string* {
      auto it = kernels.find(id);
      if (it == kernels.end()) {
        auto k = id ? t->string(id) : std::nullopt;
        it = kernels.emplace(id, k ? kernel_display_name(*k) : std::string()).first;
      }
      return &it->second;
    };
    // Signed: a call recorded before the header's start time (its clock read first) is negative.
    auto since_start = [&](uint64_t ns) { return static_cast<int64_t>(ns - t0); };
    std::string stream_text, flags_text;
    t->for_each_merged([&](const RecordView& r) {
      Row row;
      // Call records only: the head, and the fields of the kinds that have them.
      const bool call = events::visit(r, [&](const auto& ev) {
        using E = std::decay_t<decltype(ev)>;
        using events::is_one_of;
        if constexpr (!E::kCall) {
          return false;
        } else {
          row.head = &ev.rec;  // Sync and the other call records: the head alone
          if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset>) {
            if constexpr (E::kind == RecordType::Copy)
              row.direction = direction_name(static_cast<Direction>(ev.rec.direction));
            row.src = memory_kind_name(static_cast<MemoryKind>(ev.rec.src_memory));
            row.dst = memory_kind_name(static_cast<MemoryKind>(ev.rec.dst_memory));
            row.bytes = ev.rec.bytes;
            row.has_bytes = true;
          } else if constexpr (E::kind == RecordType::Launch) {
            row.kernel = kernel_of(ev.rec.kernel_name_id);
          } else if constexpr (E::kind == RecordType::MemoryOp) {
            row.src = memory_kind_name(static_cast<MemoryKind>(ev.rec.memory));
            row.bytes = ev.rec.bytes;
            row.has_bytes = true;
          }
          // The stream of the kinds that show it (not a batch's, a graph's or a managed operation's).
          if constexpr (is_one_of<E, RecordType::Copy, RecordType::Memset, RecordType::Launch,
                                  RecordType::HostFuncEnqueue, RecordType::StreamCreate, RecordType::StreamDestroy,
                                  RecordType::Capture>)
            row.stream = ev.rec.stream;
          return true;
        }
      });
      if (!call) return;
      row.record = record_type_name(r.type);
      const CallHead& c = *row.head;
      const uint32_t* f = marks.empty() ? nullptr : marks.find(r.tid, c.start_ns);
      const FindingCells* fc = f && *f < findings.size() && !findings[*f].id.empty() ? &findings[*f] : nullptr;
      const uint64_t duration = c.end_ns > c.start_ns ? c.end_ns - c.start_ns : 0;
      const bool has_stream = row.stream != UINT64_MAX && c.stream_kind != 0;
      stream_text = has_stream ? fmt::format("0x{:x}", row.stream) : std::string();
      flags_text = record_flags_text(c.flags);
      CallRow cells = {
          Cell::of(path),
          Cell::of(pid),
          Cell::of(static_cast<int64_t>(r.tid)),
          Cell::of(row.record),
          Cell::of(api_name(static_cast<Api>(c.api))),
          c.driver_fn ? Cell::of(api_name(static_cast<Api>(c.driver_fn))) : Cell{},
          Cell::of(since_start(c.start_ns)),
          Cell::of(since_start(c.end_ns)),
          Cell::of(static_cast<int64_t>(duration)),
          Cell::of(static_cast<int64_t>(c.result)),
          has_stream ? Cell::of(stream_kind_text(static_cast<StreamKind>(c.stream_kind))) : Cell{},
          text_or_null(stream_text),
          text_or_null(row.direction),
          text_or_null(row.src),
          text_or_null(row.dst),
          row.has_bytes ? Cell::of(static_cast<int64_t>(row.bytes)) : Cell{},
          row.kernel ? text_or_null(*row.kernel) : Cell{},
          text_or_null(flags_text),
          Cell::of(static_cast<int64_t>(c.stack_id)),
          fc ? Cell::of(fc->id) : Cell{},
          fc ? Cell::of(fc->rank) : Cell{},
          Cell::of(fc ? static_cast<int64_t>(duration) : 0),
          fc ? text_or_null(fc->call_site) : Cell{},
          Cell::of(simulated),
      };
      sink.row(cells);
      ++stats.rows;
    });
  }
  return stats;
}

}  // namespace asyncwatch
