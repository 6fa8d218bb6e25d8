// The checks of one record's fields beyond its size (validation of a trace, trace_reader.h): one
// definition for the reader's slow path, which names the problem, and its fast path, which only
// asks whether there is one (FieldChecks::what null). Inline: the fast path runs per record.
#pragma once

#include <asyncwatch/python_lines.h>
#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <type_traits>
#include <utility>

namespace asyncwatch::reader_checks {

using namespace trace;

// The checks of one record's fields beyond its size, by struct: each says whether the fields are
// valid, and bad() keeps what is wrong. Dispatched by the generated switch below (from the record
// table).
struct FieldChecks {
  uint16_t api_count;
  std::string* what;                  // receives the problem (null: only whether there is one)
  uint32_t version = kFormatVersion;  // of the trace (StackRecord.python_own is v7's)

  __attribute__((cold)) bool bad(std::string w) {
    if (what) *what = std::move(w);
    return false;
  }
  // head()'s and the copy body's answer without naming a problem (the fast path's test, no
  // FieldChecks object needed: head_problem and copy_problem find one exactly when these fail).
  __attribute__((always_inline)) static bool head_ok(const CallHead& c, uint16_t api_count) {
    return c.api < api_count && c.driver_fn < api_count && c.stream_kind < kStreamKindCount &&
           ((c.flags & kFlagInFlight) || c.end_ns >= c.start_ns);
  }
  __attribute__((always_inline)) static bool copy_ok(const CopyRecord& c) {
    return c.direction < kDirectionCount && c.src_memory < kMemoryKindCount && c.dst_memory < kMemoryKindCount;
  }
  __attribute__((always_inline)) bool head(const CallHead& c) {
    if (__builtin_expect(head_ok(c, api_count), 1)) return true;
    return head_problem(c);
  }
  __attribute__((cold, noinline)) bool head_problem(const CallHead& c) {
    if (c.api >= api_count) return bad(fmt::format("unknown api id {}", c.api));
    if (c.driver_fn >= api_count) return bad(fmt::format("unknown driver function id {}", c.driver_fn));
    if (c.stream_kind >= kStreamKindCount) return bad(fmt::format("unknown stream kind {}", c.stream_kind));
    // In flight: the call had not returned when the trace ended; result and end_ns are not set.
    if (!(c.flags & kFlagInFlight) && c.end_ns < c.start_ns)
      return bad(fmt::format("end time {} is before start time {}", c.end_ns, c.start_ns));
    return true;
  }
  bool memory(uint8_t k, const char* side) {
    return k < kMemoryKindCount || bad(fmt::format("unknown {} memory kind {}", side, k));
  }
  // A record without checks of its body: NoBody (true), so that kHeadChecksOnly can tell.
  struct NoBody {
    constexpr operator bool() const { return true; }
  };
  template <class T>
  NoBody body(const T&) {
    return {};
  }
  __attribute__((always_inline)) bool body(const CopyRecord& c) {
    if (__builtin_expect(copy_ok(c), 1)) return true;
    return copy_problem(c);
  }
  __attribute__((cold, noinline)) bool copy_problem(const CopyRecord& c) {
    if (c.direction >= kDirectionCount) return bad(fmt::format("unknown direction {}", c.direction));
    return memory(c.src_memory, "source") && memory(c.dst_memory, "destination");
  }
  bool body(const MemoryOpRecord& m) { return memory(m.memory, ""); }
  bool body(const HostFuncRunRecord& e) {
    return e.end_ns >= e.start_ns || bad(fmt::format("end time {} is before start time {}", e.end_ns, e.start_ns));
  }
  bool body(const GpuSpanRecord& g) {
    if (g.op >= kGpuOpCount) return bad(fmt::format("unknown GPU operation {}", g.op));
    if (g.stream_kind >= kStreamKindCount) return bad(fmt::format("unknown stream kind {}", g.stream_kind));
    if (g.host_after_ns < g.host_before_ns) return bad("host times out of order");
    return g.end_ns >= g.start_ns || bad(fmt::format("GPU end time {} is before start time {}", g.end_ns, g.start_ns));
  }
  bool body(const NvtxRangeRecord& n) {
    return n.kind < kNvtxKindCount || bad(fmt::format("unknown NVTX event kind {}", n.kind));
  }
  bool body(const ModuleRecord& m) {
    if (m.build_id_len > sizeof(m.build_id)) return bad(fmt::format("build id length {} exceeds 20", m.build_id_len));
    return m.high >= m.low || bad("address range ends before it starts");
  }
  bool body(const StackRecord& s) {
    if (s.stack_id == 0) return bad("stack id 0 (ids start at 1)");
    if (s.depth > kMaxStackDepth)
      return bad(fmt::format("stack depth {} exceeds the maximum {}", s.depth, kMaxStackDepth));
    if (s.python_depth > kMaxPythonDepth)
      return bad(fmt::format("python depth {} exceeds the maximum {}", s.python_depth, kMaxPythonDepth));
    if (s.python_end >= kPythonWalkEndCount) return bad(fmt::format("unknown python walk end {}", s.python_end));
    // Before v7 the byte was python_depth's high one: 0 in every valid trace.
    if (s.python_own && version < 7)
      return bad(
          fmt::format("python depth {} exceeds the maximum {}", s.python_depth + 256u * s.python_own, kMaxPythonDepth));
    const uint32_t lender = python_lender(s);
    if (s.python_own && !lender) return bad(fmt::format("{} own Python frames without a lender", s.python_own));
    return lender == 0 || ((lender & kPythonLenderBorrowed) && s.python_depth > s.python_own) ||
           bad(fmt::format("python lender {:#x} without borrowed Python frames", lender));
  }
  bool body(const PyCodeRecord& c) {
    if (c.code_id == 0) return bad("code id 0 (ids start at 1)");
    return c.line_table_format <= static_cast<uint8_t>(python_lines::LineTableFormat::kCpython311) ||
           bad(fmt::format("unknown line table format {}", c.line_table_format));
  }
  bool body(const PythonInfoRecord& i) {
    return (i.availability == 1 || i.availability == 2) || bad(fmt::format("unknown availability {}", i.availability));
  }
  bool body(const StringRecord& s) {
    if (s.string_id == 0) return bad("string id 0 (ids start at 1)");
    return s.len <= kBlockSize || bad(fmt::format("string length {} exceeds a block", s.len));
  }
  bool body(const SiteSummaryRecord& s);  // below fields_valid (its call is checked as a record)
  bool body(const HandoffRecord& h) { return h.tid != 0 || bad("hands the block to thread id 0"); }
  bool body(const LostRecord& l) {
    return l.reason < kLostReasonCount || bad(fmt::format("unknown loss reason {}", l.reason));
  }

  // `p` is 8-aligned (records are, in the mapping and in the v1 scratch) and holds sizeof(T)
  // bytes (the size was checked): read in place, not copied.
  template <class T>
  __attribute__((always_inline)) bool check(const uint8_t* p) {
    const T& r = *reinterpret_cast<const T*>(p);
    if constexpr (is_call_record<T>) {
      if (!head(r)) return false;
    }
    return body(r);
  }
};

// The call records whose checks are the head's (FieldChecks::head_ok) and, for a copy, its body's
// (copy_ok), nothing else: the reader's fast path tests those from a table row, without a jump on
// the type (TraceFile::fast_call).
template <class T>
inline constexpr bool kHeadChecksOnly =
    is_call_record<T> &&
    (std::is_same_v<decltype(std::declval<FieldChecks&>().body(std::declval<const T&>())), FieldChecks::NoBody> ||
     std::is_same_v<T, CopyRecord>);

// Whether the record at `p` (of type T, its size checked) passes FieldChecks::check<T>, without
// naming the problem: the reader's fast path (the common records need no FieldChecks object).
template <class T>
__attribute__((always_inline)) inline bool fields_ok(const uint8_t* p, uint16_t api_count) {
  const T& r = *reinterpret_cast<const T*>(p);
  if constexpr (is_call_record<T>) {
    if (!FieldChecks::head_ok(r, api_count)) return false;
  }
  if constexpr (std::is_same_v<T, CopyRecord>) {
    return FieldChecks::copy_ok(r);
  } else {
    FieldChecks quiet{api_count, nullptr};
    return quiet.body(r);
  }
}

// The field checks of the record at `p` (its size checked) by its type: the generated switch.
__attribute__((always_inline)) inline bool fields_valid(FieldChecks& c, RecordType type, const uint8_t* p) {
  switch (type) {
#define ASYNCWATCH_CHECK_ROW(id, name, type, since) \
  case RecordType::name: return c.check<type>(p);
    ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_CHECK_ROW)
#undef ASYNCWATCH_CHECK_ROW
    default: return c.bad("unexpected record type");
  }
}

// A summary's call record: a fixed-size call type of its table size, completed, times zero, its fields
// valid; its counts consistent (the histogram may hold one call more than `count`: a kill inside an
// update, trace_format.h).
inline bool FieldChecks::body(const SiteSummaryRecord& s) {
  RecordHeader ch;
  std::memcpy(&ch, s.call, sizeof ch);
  const RecordInfo& info = record_info(ch.type);
  if (!info.call || info.size_rule != SizeRule::Fixed || ch.size != info.fixed || ch.size > kSummaryCallBytes)
    return bad(fmt::format("its call record has type {} and size {} (a call record of its fixed size expected)",
                           ch.type, ch.size));
  const auto& h = *reinterpret_cast<const CallHead*>(s.call);
  if (h.flags & kFlagInFlight) return bad("its call record is marked in flight");
  if (h.start_ns || h.end_ns) return bad("its call record has times (zero expected)");
  if (!fields_valid(*this, static_cast<RecordType>(ch.type), s.call)) return false;
  uint64_t in_histogram = 0;
  for (uint32_t n : s.histogram) in_histogram += n;
  if (in_histogram != s.count && in_histogram != s.count + 1)
    return bad(fmt::format("its histogram holds {} calls, its count is {}", in_histogram, s.count));
  if (s.count && (s.first_start_ns == 0 || s.last_start_ns < s.first_start_ns || s.max_ns > s.total_ns))
    return bad("its times are inconsistent (first start after last start, or maximum above total)");
  return true;
}

}  // namespace asyncwatch::reader_checks
