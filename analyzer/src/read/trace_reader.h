// Reads one asyncwatch trace: maps the file, validates every byte it uses, and streams the
// records either in file order (dump) or merged by time across threads (report, timeline).
// Nothing here trusts the file: every field that steers a read is checked first, and each
// problem becomes a TraceError naming the file, the block, the offset and what is wrong.
// Memory is bounded (options.h, Limits): stacks and strings are indexed by their offset in the
// file and read when asked for, never copied as they pass.
#pragma once

#include "options.h"
#include "read/trace_reader_checks.h"
#include "read/summary_replay.h"
#include "read/trace_v1.h"

#include <asyncwatch/python_lines.h>
#include <asyncwatch/trace_format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One record as it lies in the mapping (already validated when handed out), always in the layout
// of the current version (trace_format.h): a version-1 record is handed out converted (trace_v1.h).
struct RecordView {
  trace::RecordType type;
  uint32_t size;
  const uint8_t* data;   // points at the RecordHeader
  uint64_t file_offset;  // of the RecordHeader
  uint32_t tid;          // owner of the block
  uint64_t block_index;
  uint32_t stored_size;  // bytes it takes in the file (== size, except in a version-1 trace)
  uint32_t thread = 0;   // the merged walks: the owner's index in TraceFile::threads() (per-thread state)

  // Copies the fixed part of a record (the file gives no alignment guarantee we rely on).
  template <class T>
  T as() const {
    T value;
    std::memcpy(&value, data, sizeof(T));
    return value;
  }
  // The fixed part read in place: records are 8-aligned in the mapping and in the v1 adapter's
  // scratch, and a validated record holds at least sizeof(T) bytes.
  template <class T>
  const T& ref() const {
    return *reinterpret_cast<const T*>(data);
  }
  const uint8_t* payload(size_t fixed) const { return data + fixed; }
};

struct ModuleInfo {
  std::string path;
  uint64_t load_bias = 0;
  uint64_t low = 0;
  uint64_t high = 0;
  std::vector<uint8_t> build_id;
};

// A call record still in flight when the trace ended: its head as published before the call (api,
// start_ns, flags; stack_id where the writer took the stack before the call, else, when the
// record holds its caller's return address, the id of a one-frame stack of that address:
// TraceFile::stack, kCallerSiteStackBase), its type and thread.
struct InFlightCall {
  trace::RecordType type = trace::RecordType{};
  uint32_t tid = 0;
  trace::CallHead head{};
};

struct ThreadInfo {
  uint32_t tid = 0;
  std::string name;
  // The thread's chain in file order: block indices, each with the block offset where the thread's
  // part starts in bits 48 and up (0: after the block header; in a block handed on, version 5: after
  // the thread's Handoff record, its part ending at the next Handoff). piece_block / piece_start.
  std::vector<uint64_t> blocks;
};
inline constexpr uint64_t piece_block(uint64_t entry) { return entry & ((uint64_t{1} << 48) - 1); }
inline constexpr uint32_t piece_start(uint64_t entry) {
  return entry >> 48 ? static_cast<uint32_t>(entry >> 48) : static_cast<uint32_t>(sizeof(trace::BlockHeader));
}

// An in-band LostRecord: `count` records of thread `tid` that could not be written (version 2).
struct LostReport {
  uint32_t tid = 0;
  uint64_t count = 0;
  uint64_t first_ns = 0, last_ns = 0;
  trace::LostReason reason = trace::LostReason::Unknown;
};

// A Python code object of the trace (PyCodeRecord).
struct PyCodeInfo {
  std::string filename;
  std::string qualname;
  std::vector<uint8_t> line_table;  // raw co_linetable (asyncwatch/python_lines.h)
  int32_t first_line = 0;
  uint32_t instructions = 0;
  python_lines::LineTableFormat format = python_lines::LineTableFormat::kUnknown;
  bool line_table_truncated = false;
};

// The interpreter the preload library found (PythonInfoRecord); absent without Python.
struct PythonInfo {
  bool present = false;
  bool ready = false;  // frames were read (else: unsupported, detail says why)
  uint32_t version_hex = 0;
  std::string detail;  // the object that defines _PyRuntime ("the executable"), or why not
};

// The flight recorder's window (TraceFile::window()): the ring blocks found and the calls in them.
struct FlightWindow {
  bool present = false;        // a flight-recorder trace
  uint64_t ring_blocks = 0;    // the ring's size (FileHeader::flight_ring_blocks)
  uint64_t blocks = 0;         // ring blocks holding a window part
  uint64_t blocks_reused = 0;  // FileHeader::flight_blocks_reused
  uint64_t copies_missed = 0;  // FileHeader::flight_copies_missed
  uint64_t start_ns = 0;       // FileHeader::flight_window_start_ns: every later call is in the ring
  uint64_t records = 0;        // call records in the ring
  uint64_t calls = 0;          // the calls they stand for (a folded query's repeat)
  uint64_t first_ns = 0;       // the earliest start among them, 0: none
  uint64_t last_ns = 0;        // the latest end
};

struct DeviceInfo {
  bool present = false;
  int32_t driver_version = 0;
  int32_t ordinal = 0;
  bool simulated = false;
  std::string name;
};

// Offsets of start_ns / end_ns by record type (0: the record has no time).
struct RecordTimeOffsets {
  uint8_t start[trace::kRecordTypeLimit];
  uint8_t end[trace::kRecordTypeLimit];
};
extern const RecordTimeOffsets kRecordTimeOffsets;

// The 8-byte time at `offset` in a record (a row's start_offset / end_offset), 0 for offset 0: the
// record has no such time.
inline uint64_t time_at(const RecordView& r, uint32_t offset) {
  if (!offset) return 0;
  uint64_t v;
  std::memcpy(&v, r.data + offset, sizeof v);
  return v;
}
// Time key of a record for the k-way merge: its start time; records without a time
// (stacks, strings, modules...) return 0 and keep their place in their thread's order.
inline uint64_t record_time(const RecordView& r) {
  return time_at(r, kRecordTimeOffsets.start[static_cast<size_t>(r.type)]);
}
// End time of a call record, 0 for records without one.
inline uint64_t record_end_time(const RecordView& r) {
  return time_at(r, kRecordTimeOffsets.end[static_cast<size_t>(r.type)]);
}

// The string a record of struct T refers to: its id's offset in the record, 0 for none (the one
// definition of the reader's string references: absorb_event's and the fast paths').
// (A call record is not standard-layout, its CallHead a base, but GCC lays it out as written.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
template <class T>
constexpr uint8_t string_ref_at() {
  if constexpr (std::is_same_v<T, trace::LaunchRecord>) return offsetof(trace::LaunchRecord, kernel_name_id);
  if constexpr (std::is_same_v<T, trace::NvtxRangeRecord>) return offsetof(trace::NvtxRangeRecord, name_id);
  return 0;
}
#pragma GCC diagnostic pop
// The same by record type.
struct StringRefOffsets {
  uint8_t at[trace::kRecordTypeLimit];
};
inline constexpr StringRefOffsets kStringRefAt = [] {
  StringRefOffsets t{};
#define ASYNCWATCH_STRING_REF_ROW(id, name, type, since) t.at[id] = string_ref_at<trace::type>();
  ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_STRING_REF_ROW)
#undef ASYNCWATCH_STRING_REF_ROW
  return t;
}();

// What the validating walk's fast path does with a record type, in this trace's version (TraceFile::
// fast_rows_, made by open()). `size`: the type's fixed size, which the record's must be, or
// UINT32_MAX (no record's is): the slow path's type (metadata, variable sizes, a version-1 trace).
// `by_table`: the type's checks are the head's and a copy's body (reader_checks::kHeadChecksOnly),
// tested from this row without a jump on the type (TraceFile::fast_call); `copy`: with the copy's;
// `string_at`: the string it refers to (string_ref_at). The other fast types (a body of their own,
// or not a call) take the switch on the type (fast_switched).
struct FastRow {
  uint32_t size = UINT32_MAX;
  uint8_t string_at = 0;
  bool by_table = false;
  bool copy = false;
};

// Ids (of stacks, strings) -> the file offset of a record: a dense vector while the ids are dense
// (writers hand them out from 1), a hash map for the others. At most `limit` ids: add() says
// when it is full. Memory: at most 16 bytes per id (dense), about 40 (hash map). Id 0 is "none":
// add(0) records nothing and is true, found at the dense table's slot 0 (never an id's) like an id
// seen before, so that a record's reference is added without a test of whether it has one.
class IdOffsets {
 public:
  static constexpr uint32_t kDense = 1u << 27;  // a cap only: ids beyond 2 x count + 4096 go to the map
  // Records the first offset of `id`; false when `id` is new and `limit` ids are already held.
  __attribute__((always_inline)) bool add(uint32_t id, uint64_t offset, uint64_t limit) {
    if (id < dense_size_ && dense_[id]) return true;  // the common case: an id seen before
    return add_slow(id, offset, limit);
  }
  // The offset of `id`, or UINT64_MAX.
  uint64_t find(uint32_t id) const;
  size_t size() const { return count_; }
  template <class F>
  void each(F&& f) const {  // f(id, offset)
    for (size_t id = 1; id < dense_.size(); ++id)
      if (dense_[id]) f(static_cast<uint32_t>(id), dense_[id] - 1);
    for (const auto& [id, off] : sparse_) f(id, off);
  }

 private:
  bool add_slow(uint32_t id, uint64_t offset, uint64_t limit);
  static constexpr uint64_t kNone = UINT64_MAX;  // dense_[0]: add(0)'s answer without add_slow
  std::vector<uint64_t> dense_;                  // id -> offset + 1, 0 = absent; [0]: kNone, once it has any slot
  uint32_t dense_size_ = 0;                      // dense_.size(), for add()'s test (kDense bounds it)
  std::unordered_map<uint32_t, uint64_t> sparse_;
  size_t count_ = 0;
};

class TraceFile {
 public:
  // Maps the file and validates the file header. Throws TraceError. `limits`: what the index
  // may hold (stacks, strings, modules).
  static std::unique_ptr<TraceFile> open(const std::string& path, const Limits& limits = {});
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  const std::string& path() const { return path_; }
  // The file shrank while it was read (a live or rotated file truncated by someone else): the
  // blocks past its new end read as unused, so the records up to that point are what was read
  // (read/mapping_guard.h). Never a SIGBUS.
  bool truncated_while_reading() const;
  const trace::FileHeader& header() const { return header_; }
  bool closed_cleanly() const { return header_.closed == trace::kClosedCleanly; }
  uint64_t block_count() const { return block_count_; }
  uint64_t file_size() const { return size_; }

  // Validates every block and record in file order and calls `visit` for each record.
  // Blocks whose header is all zero (claimed but never written, or preallocated) are
  // skipped. `on_block(index, tid, used)` is called per block when given. Throws TraceError
  // at the first problem, after visiting everything before it.
  void scan(const std::function<void(const RecordView&)>& visit,
            const std::function<void(uint64_t, uint32_t, bool)>& on_block = {}) const;
  // (The merged walks below take any callable `visit(const RecordView&)`: a template, so that the
  // per-record call is inlined rather than made through a std::function.)

  // Reads only the block headers (validating them): the per-thread block chains.
  void index_blocks();

  // Two-pass mode, pass 1: scan() everything, index threads, stacks, strings, modules, device
  // info, count records and the last time seen, and check every stack/string id reference.
  void index();

  // Single-pass mode (the report): every event record once, merged across threads by time,
  // each record validated when reached and the metadata absorbed into the index as it comes
  // (a record may refer to a stack or string that appears later: resolve ids after the
  // pass). References are checked at the end. Throws TraceError.
  template <class F>
  void stream_merged(F&& visit);

  // Pass 2 (after index()): every record except the metadata kinds (ThreadInfo, Module,
  // Stack, String, DeviceInfo, Lost, Padding) and in-flight call records, merged across threads by record_time (each thread's
  // own order is kept). Memory stays bounded: the pages of consumed blocks are released.
  // In a flight-recorder trace (the timeline's walk) the calls are the window's, the raw copies in the
  // ring, and not the whole run's summaries: the records that are not calls (NVTX ranges, GPU times,
  // host-function runs) come from the threads' blocks as always.
  template <class F>
  void for_each_merged(F&& visit) const;

  // Index results.
  const std::vector<ThreadInfo>& threads() const { return threads_; }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  const DeviceInfo& device() const { return device_; }
  // The frames of a stack / the text of a string, read from the file (nullopt: not defined).
  std::optional<std::vector<uint64_t>> stack(uint32_t id) const;
  std::optional<std::string> string(uint32_t id) const;
  // The Python frames of a stack (v3), innermost first; empty when it has none.
  std::vector<trace::PythonFrameRef> python_frames(uint32_t stack_id) const;
  // StackRecord.python_lender of the stack: 0 when its Python frames are its thread's own (or it
  // has none), else where they were borrowed from (trace_format.h, python_lender_encode).
  uint32_t python_lender(uint32_t stack_id) const;
  // StackRecord.python_own: with a lender, how many of its Python frames (the first) are its
  // thread's own; the rest are the lender's. 0 otherwise (and before v7).
  uint32_t python_own(uint32_t stack_id) const;
  // A Python code object by id (nullopt: not in the trace).
  std::optional<PyCodeInfo> py_code(uint32_t id) const;
  const PythonInfo& python() const { return python_; }
  size_t stack_count() const { return stacks_.size(); }
  uint64_t record_count() const { return record_count_; }
  uint64_t event_record_count() const { return event_record_count_; }
  uint64_t lost_in_records() const { return lost_in_records_; }
  // The in-band loss reports (the total stays FileHeader.records_lost: these say where and why).
  const std::vector<LostReport>& lost_reports() const { return lost_reports_; }
  // Call records still marked in flight (the process ended inside the call): not handed to the
  // merged visitors (their result and end time were never written), counted here.
  uint64_t in_flight_records() const { return in_flight_records_; }
  // A summary trace (ASYNCWATCH_SUMMARY=1, header kConfigSummary): its SiteSummary records and the
  // calls they folded (the merged walks hand those out as records: SummaryReplay), after the walk.
  bool summary() const { return (header_.config_flags & trace::kConfigSummary) != 0; }
  uint64_t summary_records() const { return summary_records_; }
  uint64_t summary_calls() const { return summary_calls_; }
  // The report's note on a summary trace ("" for a full trace).
  std::string summary_note() const;
  // A flight-recorder trace (ASYNCWATCH_TRACE_LIMIT, header kConfigFlight, version 6): a summary trace
  // (summary() is true too: the merged walks hand out the whole run's calls) plus a ring of blocks
  // holding raw copies of the last calls, the window (FlightWindow, read with the rest: index() or
  // stream_merged()).
  bool flight() const { return (header_.config_flags & trace::kConfigFlight) != 0; }
  const FlightWindow& window() const { return window_; }
  // The window's first instant: its first record's start, or the last reused block's release when
  // later (records before it may be missing).
  uint64_t window_first_ns() const { return std::max(window_.first_ns, window_.start_ns); }
  // Whether block `b` is a ring block (after index_blocks).
  bool in_ring(uint64_t b) const { return b < ring_flags_.size() && ring_flags_[b]; }
  // The report's note on a flight-recorder trace ("" otherwise); `whole_run_calls`: the calls the
  // analysis counted.
  std::string flight_note(uint64_t whole_run_calls) const;
  // Their heads, the first kMaxInFlightKept of them (one per thread that died in a call, in practice).
  static constexpr size_t kMaxInFlightKept = 4096;
  const std::vector<InFlightCall>& in_flight_calls() const { return in_flight_calls_; }
  // Stack ids from here on name the one-frame stacks of in-flight calls that have only their
  // caller's return address (trace::in_flight_caller); stack() answers them before the file's.
  static constexpr uint32_t kCallerSiteStackBase = 0xFFFF0000u;
  uint32_t version() const { return version_; }
  uint64_t last_time_ns() const { return last_time_ns_; }
  const std::string* thread_name(uint32_t tid) const;

  // Releases the mapped pages of [offset, offset+len) (they stay in the page cache).
  void release(uint64_t offset, uint64_t len) const;

  // The merged walks give back the pages of the blocks they have read a window at a time, not one
  // madvise per 64 KiB block (each call flushes the TLB: on the development VM ~2.5 us a call, 0.06
  // s of sys time for the 22 k blocks of the 20 M-record trace).
  // A block is consumed when its cursor leaves it (block_done); the consumed prefix of
  // the file is released once it is kReleaseBlocks blocks past what was released. A thread whose
  // block lags behind (its records' times come later) holds the prefix back: once the others have
  // consumed release_lag_ blocks past the released part, the runs of consumed blocks there are
  // released, the lagging blocks skipped (never a block a cursor still reads), and those are
  // released one by one when done. Resident: at most kReleaseBlocks + release_lag_ blocks of the
  // mapping beyond the blocks the cursors read.
  static constexpr uint64_t kReleaseBlocks = 16;  // 1 MiB
  static constexpr uint64_t kReleaseLag = 64;     // 4 MiB, + 2 blocks a thread (release_lag_)

 private:
  TraceFile() = default;
  // The StackRecord of a stack id, when the trace has it and its version is at least `min_version`
  // (the field the caller reads came then), and its offset in the file into *offset when given:
  // python_frames, python_lender, python_own.
  std::optional<trace::StackRecord> stack_record(uint32_t id, uint32_t min_version, uint64_t* offset = nullptr) const;
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(uint64_t block, uint64_t offset, const std::string& what) const;
  void validate_record(const RecordView& r) const;
  // *ring_seq: a ring block's sequence number (its block_index), else untouched.
  bool check_block(uint64_t b, uint32_t* tid, bool* shared = nullptr, bool* ring = nullptr,
                   uint64_t* ring_seq = nullptr) const;
  void read_window();
  bool read_record(uint64_t b, uint32_t off, uint32_t tid, RecordView* out, uint8_t* scratch) const;
  bool absorb(const RecordView& r);  // true for event records
  [[noreturn]] void over_limit(const char* what, uint64_t limit, const char* option) const;
  void check_references();
  void reset_index();
  void begin_release();                  // a merged walk starts: no block consumed
  void block_done(uint64_t b);           // a cursor has left block b
  void release_blocks_to(uint64_t end);  // the consumed runs of [released_blocks_, end)
  struct CursorState;
  template <bool kValidate>
  struct Cursor;
  // The validating walk's step (single-pass mode): the next event record of the cursor's thread,
  // validated, the metadata before it absorbed; false at the end of the chain.
  bool next_validated(CursorState& c);
  bool absorb_metadata(const RecordView& r);
  // A SiteSummary record the walk of `c`'s chain reached (validated): its calls join the chain's.
  void add_summary(CursorState& c, const RecordView& r);
  bool absorb_event(const RecordView& r, uint64_t* start);  // *start: record_time(r)
  // The validating walk's fast path for the record at `p` (inside the block, below fast_end_):
  // its field checks and absorb_event in one; false (nothing absorbed) for a call in flight, a
  // type or size it does not take, or any problem: the slow path's, which names it. A call of a
  // row `by_table` is tested by fast_call; the other types by fast_switched, the generated switch
  // on the type, to fast_event<T>, the type known at compile time.
  bool fast_event(trace::RecordHeader rh, const uint8_t* p, uint64_t offset, uint64_t* start);
  bool fast_call(const FastRow& row, const uint8_t* p, uint64_t offset, uint64_t* start);
  bool fast_switched(trace::RecordHeader rh, const uint8_t* p, uint64_t offset, uint64_t* start);
  template <class T>
  bool fast_event(const uint8_t* p, uint64_t offset, uint64_t* start);
  void absorb_in_flight(const RecordView& r, const trace::CallHead& h);
  template <bool kValidate, class F>
  void merge(F& visit);

  // A reference to a stack or string (id 0: none, IdOffsets::add's true).
  __attribute__((always_inline)) void use_stack(uint32_t id, uint64_t file_offset) {
    if (!first_stack_use_.add(id, file_offset, limits_.stacks))
      over_limit("distinct call stacks referred to", limits_.stacks, "--max-stacks");
  }
  __attribute__((always_inline)) void use_string(uint32_t id, uint64_t file_offset) {
    if (!first_string_use_.add(id, file_offset, limits_.strings))
      over_limit("distinct strings referred to", limits_.strings, nullptr);
  }
  // The string id at byte `at` of the record at `rec` (string_ref_at), referred to.
  __attribute__((always_inline)) void use_string_at(const uint8_t* rec, uint8_t at, uint64_t file_offset) {
    uint32_t id;
    std::memcpy(&id, rec + at, sizeof id);
    use_string(id, file_offset);
  }
  // An event record counted, with its start and end times (the trace's last).
  __attribute__((always_inline)) bool count_event(uint64_t start_ns, uint64_t end_ns, uint64_t* start) {
    ++event_record_count_;
    if (end_ns > last_time_ns_) last_time_ns_ = end_ns;
    *start = start_ns;
    return true;
  }

  std::string path_;
  Limits limits_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  int guard_ = -1;               // the mapping's mapping_guard slot
  mutable bool shrunk_ = false;  // a block header could not be read: the file is shorter now
  uint64_t block_count_ = 0;
  trace::FileHeader header_{};

  std::vector<ThreadInfo> threads_;
  std::unordered_map<uint32_t, size_t> thread_by_tid_;
  std::vector<ModuleInfo> modules_;
  DeviceInfo device_;
  IdOffsets stacks_;    // stack id -> its StackRecord
  IdOffsets strings_;   // string id -> its StringRecord
  IdOffsets py_codes_;  // code id -> its PyCodeRecord
  PythonInfo python_;
  uint64_t module_path_bytes_ = 0;
  uint64_t record_count_ = 0;
  uint64_t event_record_count_ = 0;
  uint64_t lost_in_records_ = 0;
  uint64_t in_flight_records_ = 0;
  uint64_t summary_records_ = 0, summary_calls_ = 0;
  std::vector<ThreadInfo> window_threads_;  // each thread's ring blocks in sequence order (index_blocks)
  bool window_walk_ = false;                // the merged walk reads the window (for_each_merged, flight)
  struct RingBlock {
    uint64_t seq, block;
    uint32_t tid;
  };
  std::vector<RingBlock> ring_blocks_;  // in sequence order (index_blocks)
  std::vector<uint8_t> ring_flags_;     // by block: 1 for a ring block (empty: none)
  FlightWindow window_;
  std::vector<InFlightCall> in_flight_calls_;
  std::vector<uint64_t> caller_sites_;  // the one-frame stacks, by id - kCallerSiteStackBase
  std::vector<LostReport> lost_reports_;
  uint32_t version_ = trace::kFormatVersion;
  uint16_t api_count_ = 0;                      // kApiCountInVersion[version_]
  FastRow fast_rows_[trace::kRecordTypeLimit];  // by record type (row 0, None, takes no record)
  // The fast path takes records that start below kBlockSize - (the largest fast size) + 1: they
  // end inside the block whatever their type (CursorState::fast_end).
  uint32_t fast_end_ = 0;
  uint64_t last_time_ns_ = 0;
  IdOffsets first_stack_use_;  // id -> the first record that refers to it
  IdOffsets first_string_use_;
  bool blocks_indexed_ = false;
  bool indexed_ = false;
  // The merged walk's release (block_done): by block, 1 once consumed or not in any thread's chain.
  std::vector<uint8_t> consumed_;
  uint64_t released_blocks_ = 0;  // [0, this): released, but for blocks not yet consumed then
  uint64_t consumed_to_ = 0;      // [0, this): consumed, or below released_blocks_
  uint64_t furthest_done_ = 0;    // 1 + the last block consumed
  uint64_t release_lag_ = kReleaseLag;
};

// The event records: their references and times; true unless the call was still in flight.
__attribute__((always_inline)) inline bool TraceFile::absorb_event(const RecordView& r, uint64_t* start) {
  ++record_count_;
  if (const uint8_t at = kStringRefAt.at[static_cast<size_t>(r.type)]) use_string_at(r.data, at, r.file_offset);
  const trace::RecordInfo& info = trace::record_info(static_cast<uint16_t>(r.type));
  if (info.call) {
    const trace::CallHead& h = r.ref<trace::CallHead>();
    use_stack(h.stack_id, r.file_offset);
    if (__builtin_expect(h.flags & trace::kFlagInFlight, 0)) {
      absorb_in_flight(r, h);
      return false;
    }
  }
  // record_time / record_end_time, from the row at hand
  return count_event(time_at(r, info.start_offset), time_at(r, info.end_offset), start);
}

template <class T>
__attribute__((always_inline)) inline bool TraceFile::fast_event(const uint8_t* p, uint64_t offset, uint64_t* start) {
  constexpr bool kCall = trace::is_call_record<T>;
  if constexpr (!kCall && !trace::detail::has_times<T>::value) {
    return false;  // metadata: the slow path's
  } else {
    const T& r = *reinterpret_cast<const T*>(p);  // 8-aligned, sizeof(T) bytes inside the block
    if constexpr (kCall) {
      if (__builtin_expect(r.flags & trace::kFlagInFlight, 0)) return false;  // absorb_in_flight's
    }
    if (__builtin_expect(!reader_checks::fields_ok<T>(p, api_count_), 0)) return false;
    // absorb_event, the type known: its references (in the same order), counts and times.
    if constexpr (constexpr uint8_t at = string_ref_at<T>()) use_string_at(p, at, offset);
    if constexpr (kCall) use_stack(r.stack_id, offset);
    ++record_count_;
    return count_event(r.start_ns, r.end_ns, start);
  }
}

// A call of a row `by_table`: the same checks, references, counts and times as fast_event<T>'s,
// from the row. No jump on the type: the analysis' switch when the record is visited is then the
// one dispatch on its type (the reader's and the analysis' indirect jumps on a random mix of types
// mispredicted about once a record between them in cachegrind's simulation).
__attribute__((always_inline)) inline bool TraceFile::fast_call(const FastRow& row, const uint8_t* p, uint64_t offset,
                                                                uint64_t* start) {
  using reader_checks::FieldChecks;
  const trace::CallHead& h = *reinterpret_cast<const trace::CallHead*>(p);
  if (__builtin_expect(h.flags & trace::kFlagInFlight, 0)) return false;  // absorb_in_flight's
  if (__builtin_expect(!FieldChecks::head_ok(h, api_count_), 0)) return false;
  if (row.copy && __builtin_expect(!FieldChecks::copy_ok(*reinterpret_cast<const trace::CopyRecord*>(p)), 0))
    return false;
  if (row.string_at) use_string_at(p, row.string_at, offset);
  use_stack(h.stack_id, offset);
  ++record_count_;
  return count_event(h.start_ns, h.end_ns, start);
}

// The generated switch over the record table: one jump on the type (its size was tested).
__attribute__((always_inline)) inline bool TraceFile::fast_switched(trace::RecordHeader rh, const uint8_t* p,
                                                                    uint64_t offset, uint64_t* start) {
  switch (static_cast<trace::RecordType>(rh.type)) {
#define ASYNCWATCH_FAST_ROW(id, name, type_, since) \
  case trace::RecordType::name: return fast_event<trace::type_>(p, offset, start);
    ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_FAST_ROW)
#undef ASYNCWATCH_FAST_ROW
    default: return false;
  }
}

// The row of the record's type; its size against the row's; a call by the row, the others by the switch.
__attribute__((always_inline)) inline bool TraceFile::fast_event(trace::RecordHeader rh, const uint8_t* p,
                                                                 uint64_t offset, uint64_t* start) {
  const FastRow& row = fast_rows_[rh.type < trace::kRecordTypeLimit ? rh.type : 0];
  if (__builtin_expect(rh.size != row.size, 0)) return false;
  if (__builtin_expect(row.by_table, 1)) return fast_call(row, p, offset, start);
  return fast_switched(rh, p, offset, start);
}

// Records that are not events: the metadata kinds (no call head, no times: ThreadInfo, Module,
// Stack, String, Lost, DeviceInfo, Padding), from the record table.
inline bool is_metadata(trace::RecordType t) {
  const trace::RecordInfo& i = trace::record_info(static_cast<uint16_t>(t));
  return !i.call && i.start_offset == 0;
}

// Where a walk of one thread's chain of blocks stands (non-template: the validating walk is in
// trace_reader.cpp, TraceFile::next_validated).
struct TraceFile::CursorState {
  const std::vector<uint64_t>* blocks;
  size_t block_pos = 0;
  uint32_t off = 0;
  uint32_t tid = 0;
  RecordView current{};
  uint64_t time = 0;
  const uint8_t* block = nullptr;  // the block being read (validating walk), null between blocks
  uint64_t base = 0;               // its file offset
  uint64_t block_index = 0;
  // Records at offsets below this take the inline fast path (TraceFile::fast_end_ inside a block, 0
  // between blocks: one comparison says both). `current`'s tid and block_index are the block's
  // while it is read: the fast path sets only the fields that change per record.
  uint32_t fast_end = 0;
  // The walk hands out no call record and no summary of this chain (a flight-recorder trace's
  // threads' blocks when the window's calls are walked instead: for_each_merged).
  bool skip_calls = false;
  alignas(8) uint8_t scratch[trace_v1::kScratchBytes];  // `current` of a version-1 trace, converted
  // A summary trace (trace_format.h, SiteSummaryRecord): the calls of the summaries the walk has
  // passed, merged by time with the chain's own records (`held`: the next of those, read ahead).
  std::unique_ptr<SummaryReplay> replay;
  RecordView held{};
  uint64_t held_time = 0;
  bool held_valid = false;
  bool raw_done = false;
};

// Walks one thread's chain of blocks. kValidate: checks each record as it reaches it and
// absorbs the metadata records into the index (single-pass mode); otherwise the records
// were validated by index() already.
template <bool kValidate>
struct TraceFile::Cursor : CursorState {
  TraceFile* file;

  // `thread`: the chain's index in threads().
  Cursor(TraceFile* f, const std::vector<uint64_t>* b, uint32_t t, uint32_t thread) : file(f) {
    blocks = b;
    tid = t;
    current.thread = thread;
  }
  Cursor(const Cursor&) = delete;  // `current` may point into `scratch`
  Cursor& operator=(const Cursor&) = delete;

  // Moves to the next event record; false at the end of the chain. Inline into the merge loop
  // (LTO made it a call).
  __attribute__((always_inline)) bool next() {
    const uint32_t thread = current.thread;  // (the walks below may rebuild `current`)
    bool more;
    if (__builtin_expect(replay != nullptr, 0)) {
      more = next_replayed();
    } else {
      more = next_raw();
      // The chain ended right after its first summaries (a thread whose last records are summaries):
      // their calls are still to be handed out.
      if (__builtin_expect(!more && replay != nullptr, 0)) {
        raw_done = true;
        more = next_replayed();
      }
    }
    current.thread = thread;
    return more;
  }

  // A chain with summaries: the earlier of its next own record and the summaries' next call.
  __attribute__((noinline)) bool next_replayed() {
    if (!held_valid && !raw_done) {
      const uint64_t t0 = time;  // the own record's time is the cursor's only once it is handed out
      if (next_raw()) {
        held = current;
        held_time = time;
        held_valid = true;
      } else {
        raw_done = true;
      }
      time = t0;
    }
    if (!replay->empty() && (!held_valid || replay->next_time() < held_time)) {
      uint64_t t, offset;
      const uint8_t* p = replay->pop(&t, &offset);
      trace::RecordHeader rh;
      std::memcpy(&rh, p, sizeof rh);
      // (tid and block_index stay the block's: the fast path sets only the fields below)
      current.type = static_cast<trace::RecordType>(rh.type);
      current.size = current.stored_size = rh.size;
      current.data = p;
      current.file_offset = offset;
      time = t > time ? t : time;
      return true;
    }
    if (!held_valid) return false;
    current = held;
    held_valid = false;
    time = held_time > time ? held_time : time;
    return true;
  }

  // Inline: once per record of every pass (the JSON report's records per second).
  __attribute__((always_inline)) bool next_raw() {
    if constexpr (kValidate) {
      // The common record inline: a fixed-size event record of its table size, inside the block
      // being read, whose fields pass; the rest (metadata, in-flight calls, the next block, any
      // problem, which it names) is next_validated's.
      if (__builtin_expect(off < fast_end, 1)) {
        const uint8_t* p = block + off;
        // The trace is read once: fetched ahead as non-temporal, it pushes fewer of the analysis'
        // tables (the groups' statistics) out of the caches. The JSON report's CPU records per
        // second: 2-4 % more in interleaved pairs on the benchmark's 20 M-record trace (2-core VM).
        __builtin_prefetch(p + 4096, 0, 0);
        trace::RecordHeader rh;
        std::memcpy(&rh, p, sizeof rh);
        uint64_t t;
        if (file->fast_event(rh, p, base + off, &t)) {
          current.type = static_cast<trace::RecordType>(rh.type);
          current.size = current.stored_size = rh.size;
          current.data = p;
          current.file_offset = base + off;
          off += rh.size;
          time = t > time ? t : time;  // keep the thread's own order even if its clock goes back
          return true;
        }
      }
      return file->next_validated(*this);
    } else {
      while (block_pos < blocks->size()) {
        const uint64_t b = piece_block((*blocks)[block_pos]);
        if (off == 0) off = piece_start((*blocks)[block_pos]);
        const uint8_t* at = file->map_ + trace::kHeaderSize + b * trace::kBlockSize;
        while (off + sizeof(trace::RecordHeader) <= trace::kBlockSize) {
          trace::RecordHeader rh;
          std::memcpy(&rh, at + off, sizeof rh);
          if (rh.type == 0 || rh.type == static_cast<uint16_t>(trace::RecordType::Handoff))
            break;  // the thread's part ends
          current = RecordView{static_cast<trace::RecordType>(rh.type),
                               rh.size,
                               at + off,
                               trace::kHeaderSize + b * trace::kBlockSize + off,
                               tid,
                               b,
                               rh.size};
          off += rh.size;
          if (__builtin_expect(current.type == trace::RecordType::SiteSummary, 0) && !skip_calls)
            file->add_summary(*this, current);
          if (is_metadata(current.type)) continue;
          if (__builtin_expect(file->version_ == 1, 0)) {  // validated by index(): converts
            std::string why;
            current.data = trace_v1::to_v2(rh.type, rh.size, current.data, scratch, &current.size, &why);
          }
          if (trace::record_info(rh.type).call) {
            uint32_t flags;
            std::memcpy(&flags, current.data + offsetof(trace::CallHead, flags), sizeof flags);
            if ((flags & trace::kFlagInFlight) || skip_calls) continue;
          }
          uint64_t t = record_time(current);
          time = t > time ? t : time;
          return true;
        }
        file->block_done(b);
        ++block_pos;
        off = 0;
      }
      return false;
    }
  }
};

template <class F>
void TraceFile::for_each_merged(F&& visit) const {
  if (!indexed_) throw std::logic_error("for_each_merged before index");
  auto* self = const_cast<TraceFile*>(this);
  self->window_walk_ = flight();
  self->merge<false>(visit);  // reads only
  self->window_walk_ = false;
  release(trace::kHeaderSize, size_ - trace::kHeaderSize);  // as stream_merged: what the window left
}

template <class F>
void TraceFile::stream_merged(F&& visit) {
  if (!blocks_indexed_) index_blocks();
  merge<true>(visit);
  release(trace::kHeaderSize, size_ - trace::kHeaderSize);
  read_window();
  check_references();
  indexed_ = true;
}

// The merge of up to N threads by a scan of their times (merge, below): the scan unrolled for
// each count of live threads (`live` <= N), run at that count until a thread ends.
template <size_t N, class C, class F>
void scan_merge(size_t live, C** cursors, uint64_t* times, F& visit) {
  if constexpr (N == 0) {
    (void)live, (void)cursors, (void)times, (void)visit;
  } else {
    if (live < N) return scan_merge<N - 1>(live, cursors, times, visit);
    F v = visit;  // a local copy: its captures stay in registers across the loop (the caller's aliased memory)
    size_t next;
    for (;;) {
      next = 0;
      uint64_t earliest = times[0];
#pragma GCC unroll 8
      for (size_t i = 1; i < N; ++i)  // (N is a constant: unrolled)
        if (times[i] < earliest) earliest = times[i], next = i;
      C& c = *cursors[next];
      v(c.current);
      if (__builtin_expect(!c.next(), 0)) break;
      times[next] = c.time;
    }
    for (size_t i = next; i + 1 < N; ++i) cursors[i] = cursors[i + 1], times[i] = times[i + 1];  // it ended
    scan_merge<N - 1>(N - 1, cursors, times, visit);
  }
}

template <bool kValidate, class F>
void TraceFile::merge(F& visit) {
  using C = Cursor<kValidate>;
  begin_release();
  std::vector<std::unique_ptr<C>> owned;  // cursors do not move: `current` may point into their scratch
  owned.reserve(threads_.size());
  for (const auto& t : threads_) {
    auto c = std::make_unique<C>(this, &t.blocks, t.tid, static_cast<uint32_t>(&t - threads_.data()));
    c->skip_calls = window_walk_;
    if (c->next()) owned.push_back(std::move(c));
  }
  if (window_walk_) {
    for (const auto& t : window_threads_) {
      // A window's records are their thread's (its index in threads()); a ring block of a thread
      // with no block of its own (nothing of it to refer to: a damaged file) is left out.
      auto it = thread_by_tid_.find(t.tid);
      if (it == thread_by_tid_.end()) continue;
      auto c = std::make_unique<C>(this, &t.blocks, t.tid, static_cast<uint32_t>(it->second));
      if (c->next()) owned.push_back(std::move(c));
    }
  }
  // Which cursor is next: the earliest current record, the first thread on a tie. Up to kScanned
  // threads, a scan of their times (scan_merge, unrolled for each count of threads), kept in thread
  // order (the first of equal times wins; an exhausted cursor leaves the arrays): fewer
  // instructions than the tree's replay below.
  constexpr size_t kScanned = 8;
  if (owned.size() <= kScanned) {
    C* cursors[kScanned];
    uint64_t times[kScanned];
    for (size_t i = 0; i < owned.size(); ++i) cursors[i] = owned[i].get(), times[i] = owned[i]->time;
    scan_merge<kScanned>(owned.size(), cursors, times, visit);
    return;
  }
  // Beyond kScanned threads: a loser tree
  // (tournament) over the cursors: after each record only its cursor's path to the root is
  // replayed, log2(threads) comparisons, none for one thread. A cursor's key is its time, ties
  // broken by `rank`: its index while it has records, leaves + index once exhausted (so that it
  // loses to every live cursor, whatever their times). 64-bit keys: a comparison is one `cmp`,
  // the rank read only on equal times (16-byte keys of time << 32 | index cost twice as much).
  const size_t n = owned.size();
  size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  std::vector<uint64_t> key(leaves, UINT64_MAX);
  std::vector<uint32_t> rank(leaves);
  for (size_t i = 0; i < leaves; ++i) rank[i] = static_cast<uint32_t>(i < n ? i : leaves + i);
  for (size_t i = 0; i < n; ++i) key[i] = owned[i]->time;
  // The order: the earlier key first, the lower rank on equal keys (the rank read only then).
  const auto before_keyed = [](uint64_t ka, uint64_t kb, const uint32_t* ranks, uint32_t a, uint32_t b) {
    return ka < kb || (ka == kb && ranks[a] < ranks[b]);
  };
  const auto before = [&](uint32_t a, uint32_t b) { return before_keyed(key[a], key[b], rank.data(), a, b); };
  std::vector<uint32_t> loser(leaves), winner(2 * leaves);  // loser[node] for nodes 1..leaves-1
  for (size_t i = 0; i < leaves; ++i) winner[leaves + i] = static_cast<uint32_t>(i);
  for (size_t node = leaves - 1; node >= 1; --node) {
    const uint32_t a = winner[2 * node], b = winner[2 * node + 1];
    const bool a_first = before(a, b);
    winner[node] = a_first ? a : b;
    loser[node] = a_first ? b : a;
  }
  uint32_t next = winner[leaves > 1 ? 1 : leaves];
  uint64_t* const keys = key.data();
  uint32_t* const ranks = rank.data();
  uint32_t* const losers = loser.data();
  const uint32_t live = static_cast<uint32_t>(leaves);
  while (ranks[next] < live) {
    C& c = *owned[next];
    visit(c.current);
    uint64_t k;
    if (c.next()) {
      k = c.time;
    } else {
      k = UINT64_MAX;
      ranks[next] = live + next;
    }
    keys[next] = k;
    for (size_t node = (leaves + next) >> 1; node; node >>= 1) {  // replay its matches
      const uint32_t other = losers[node];
      const uint64_t ko = keys[other];
      if (before_keyed(ko, k, ranks, other, next)) {
        losers[node] = next;
        next = other;
        k = ko;
      }
    }
  }
}

// "more than LIMIT WHAT: beyond the analyzer's limit; raise it with OPTION (...)": the one
// message for a trace beyond a Limits bound (`option` null: no option raises it).
std::string limit_message(const char* what, uint64_t limit, const char* option);

// Text helpers shared by dump, reports and timeline.
const char* record_type_name(trace::RecordType t);
const char* memory_kind_name(trace::MemoryKind k);  // "pageable", "pinned", ...
const char* direction_name(trace::Direction d);     // "HtoD", ... or "unknown"
const char* stream_kind_name(trace::StreamKind k);
std::string record_flags_text(uint32_t flags);
// A fixed-size char field that may lack its NUL.
std::string fixed_string(const char* s, size_t n);
bool is_driver_api(trace::Api api);

}  // namespace asyncwatch
