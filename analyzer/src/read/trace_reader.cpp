#include "read/trace_reader.h"

#include "read/mapping_guard.h"

#include "read/trace_reader_checks.h"
#include "read/trace_v1.h"

#include <asyncwatch/trace_io.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fmt/format.h>

#define AW_READER_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace asyncwatch {

using namespace trace;
using reader_checks::FieldChecks;
using reader_checks::fields_valid;

const char* record_type_name(RecordType t) {
  auto id = static_cast<uint16_t>(t);
  return id == 0 || record_info(id).since ? record_info(id).name : "unknown";
}
const char* memory_kind_name(MemoryKind k) { return memory_kind_text(k); }
const char* direction_name(Direction d) { return direction_text(d); }
const char* stream_kind_name(StreamKind k) { return stream_kind_text(k); }

std::string record_flags_text(uint32_t flags) {
  const auto& kNames = kRecordFlagNames;
  std::string out;
  uint32_t rest = flags;
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) {
      if (!out.empty()) out += '|';
      out += name;
      rest &= ~bit;
    }
  }
  if (rest) {
    if (!out.empty()) out += '|';
    out += fmt::format("0x{:x}", rest);
  }
  return out.empty() ? "0" : out;
}

std::string fixed_string(const char* s, size_t n) {
  size_t len = 0;
  while (len < n && s[len] != '\0') ++len;
  return std::string(s, len);
}

bool is_driver_api(Api api) {
  const char* name = api_name(api);
  return name[0] == 'c' && name[1] == 'u' && std::strncmp(name, "cuda", 4) != 0;
}

namespace {
constexpr RecordTimeOffsets make_time_offsets() {
  RecordTimeOffsets o{};
  for (uint16_t t = 0; t < kRecordTypeLimit; ++t) {
    o.start[t] = record_info(t).start_offset;
    o.end[t] = record_info(t).end_offset;
  }
  return o;
}
}  // namespace

const RecordTimeOffsets kRecordTimeOffsets = make_time_offsets();

namespace {
// An error that the file's shrinking caused is said as such.
std::string shrink_cause(const TraceFile& t) {
  return t.truncated_while_reading()
             ? fmt::format("the trace was truncated while being read (it had {} bytes when opened): ", t.file_size())
             : std::string();
}
}  // namespace

void TraceFile::fail(const std::string& what) const {
  throw TraceError(fmt::format("{}: {}{}", path_, shrink_cause(*this), what));
}

void TraceFile::fail_at(uint64_t block, uint64_t offset, const std::string& what) const {
  throw TraceError(
      fmt::format("{}: {}block {} (file offset 0x{:x}): {}", path_, shrink_cause(*this), block, offset, what));
}

std::unique_ptr<TraceFile> TraceFile::open(const std::string& path, const Limits& limits) {
  std::unique_ptr<TraceFile> t(new TraceFile());
  t->path_ = path;
  t->limits_ = limits;
  // O_NONBLOCK: a FIFO named like a trace must not block the open (it is refused below).
  t->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (t->fd_ < 0) t->fail(fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (fstat(t->fd_, &st) != 0) t->fail(fmt::format("cannot stat: {}", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) t->fail("is a directory, not a trace file");
  if (!S_ISREG(st.st_mode)) t->fail("is not a regular file");
  t->size_ = static_cast<uint64_t>(st.st_size);
  if (t->size_ == 0)
    t->fail("the file is empty (0 bytes): not an asyncwatch trace, or the traced process never wrote it");
  void* m = mmap(nullptr, t->size_, PROT_READ, MAP_PRIVATE, t->fd_, 0);
  if (m == MAP_FAILED) t->fail(fmt::format("cannot map: {}", std::strerror(errno)));
  t->map_ = static_cast<const uint8_t*>(m);
  t->guard_ = mapping_guard::add(m, t->size_);
  // Tests: the file shrinks to this many bytes once it is mapped, as another process may do it.
  if (const char* shrink = std::getenv("ASYNCWATCH_TEST_SHRINK_TRACE_TO"); shrink && *shrink)
    if (truncate(path.c_str(), static_cast<off_t>(std::strtoull(shrink, nullptr, 10))) != 0)
      t->fail(fmt::format("ASYNCWATCH_TEST_SHRINK_TRACE_TO: {}", std::strerror(errno)));

  if (t->size_ < sizeof(kMagic) || std::memcmp(t->map_, kMagic, sizeof(kMagic)) != 0)
    t->fail("not an asyncwatch trace (wrong magic: the file does not start with \"ASYNCWTR\")");
  if (t->size_ < kHeaderSize)
    t->fail(fmt::format("truncated: {} bytes, shorter than the {}-byte file header", t->size_, kHeaderSize));
  std::memcpy(&t->header_, t->map_, sizeof(FileHeader));
  const FileHeader& h = t->header_;
  if (h.version > kFormatVersion)
    t->fail(
        fmt::format("trace format version {} is newer than this asyncwatch supports ({})", h.version, kFormatVersion));
  if (h.version < kOldestReadableVersion)
    t->fail(fmt::format("trace format version {} is not valid (this asyncwatch reads versions {} to {})", h.version,
                        kOldestReadableVersion, kFormatVersion));
  t->version_ = h.version;
  t->api_count_ = kApiCountInVersion[h.version];
  // The fast path of the validating walk takes the fixed-size event records of this version; a
  // version-1 trace (converted record by record) and everything else take the slow path.
  uint32_t largest_fast = 0;
  bool by_table[kRecordTypeLimit] = {}, copy[kRecordTypeLimit] = {};  // FastRow's, by the type's struct
#define ASYNCWATCH_BY_TABLE_ROW(id, name, type, since) \
  by_table[id] = reader_checks::kHeadChecksOnly<type>; \
  copy[id] = std::is_same_v<type, CopyRecord>;
  ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_BY_TABLE_ROW)
#undef ASYNCWATCH_BY_TABLE_ROW
  for (uint16_t type = 0; type < kRecordTypeLimit; ++type) {
    const RecordInfo& info = record_info(type);
    const bool fast = h.version >= 2 && type != 0 && info.since != 0 && info.since <= h.version &&
                      info.size_rule == SizeRule::Fixed && !is_metadata(static_cast<RecordType>(type));
    if (!fast) continue;
    FastRow& row = t->fast_rows_[type];
    row.size = info.fixed;
    row.by_table = by_table[type];
    row.copy = copy[type];
    row.string_at = kStringRefAt.at[type];
    largest_fast = std::max<uint32_t>(largest_fast, info.fixed);
  }
  t->fast_end_ = largest_fast ? kBlockSize - largest_fast + 1 : 0;
  if (h.header_size != kHeaderSize)
    t->fail(fmt::format("corrupt header: header size {} (expected {})", h.header_size, kHeaderSize));
  if (h.block_size != kBlockSize)
    t->fail(fmt::format("corrupt header: block size {} (expected {})", h.block_size, kBlockSize));
  if (h.closed != 0 && h.closed != kClosedCleanly)
    t->fail(fmt::format("corrupt header: 'closed' is 0x{:x} (expected 0 or 0x{:x})", h.closed, kClosedCleanly));
  uint64_t body = t->size_ - kHeaderSize;
  if (body % kBlockSize != 0)
    t->fail(fmt::format("truncated: the last block has {} of its {} bytes (file size {})", body % kBlockSize,
                        kBlockSize, t->size_));
  t->block_count_ = body / kBlockSize;
  // A clean close truncates the file to exactly the claimed blocks. In an unclean file the
  // counter may run ahead of what was written (a claim whose segment could not be added).
  if (h.blocks_claimed > t->block_count_ && h.closed == kClosedCleanly)
    t->fail(fmt::format("truncated: the header says {} blocks were claimed but the file holds only {}",
                        h.blocks_claimed, t->block_count_));
  if (h.closed == kClosedCleanly && h.end_monotonic_ns < h.start_monotonic_ns)
    t->fail(
        fmt::format("corrupt header: end time {} is before start time {}", h.end_monotonic_ns, h.start_monotonic_ns));
  if (h.config_flags & kConfigFlight) {
    // The ring's size steers nothing but the report's figures; it must still be one a writer makes.
    if (h.version < 6)
      t->fail(fmt::format("corrupt header: the flight-recorder flag in a version-{} trace (it exists since version 6)",
                          h.version));
    if (!(h.config_flags & kConfigSummary))
      t->fail("corrupt header: a flight-recorder trace without summary mode (the writer sets both)");
    if (h.flight_ring_blocks == 0 || h.flight_ring_blocks > kMaxTraceLimit / kBlockSize)
      t->fail(fmt::format("corrupt header: flight-recorder ring of {} blocks (expected 1 to {})", h.flight_ring_blocks,
                          kMaxTraceLimit / kBlockSize));
  }
  madvise(const_cast<uint8_t*>(t->map_), t->size_, MADV_SEQUENTIAL);
  return t;
}

TraceFile::~TraceFile() {
  mapping_guard::remove(guard_);
  if (map_) munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

bool TraceFile::truncated_while_reading() const { return shrunk_ || mapping_guard::truncated(guard_); }

void TraceFile::release(uint64_t offset, uint64_t len) const {
  long page = sysconf(_SC_PAGESIZE);
  uint64_t start = offset & ~static_cast<uint64_t>(page - 1);
  if (start >= size_) return;
  len = std::min(len + (offset - start), size_ - start);
  madvise(const_cast<uint8_t*>(map_ + start), len, MADV_DONTNEED);
}

void TraceFile::begin_release() {
  consumed_.assign(block_count_, 1);
  for (const auto& t : threads_)
    for (uint64_t e : t.blocks) consumed_[piece_block(e)] = 0;
  if (window_walk_)
    for (const auto& t : window_threads_)
      for (uint64_t e : t.blocks) consumed_[piece_block(e)] = 0;
  released_blocks_ = consumed_to_ = furthest_done_ = 0;
  while (consumed_to_ < block_count_ && consumed_[consumed_to_]) ++consumed_to_;
  release_lag_ = kReleaseLag + 2 * threads_.size();  // many threads read many blocks at once
}

void TraceFile::release_blocks_to(uint64_t end) {
  end = std::min(end, block_count_);
  for (uint64_t b = released_blocks_; b < end;) {
    while (b < end && !consumed_[b]) ++b;  // still read, or to be read: released when done
    const uint64_t from = b;
    while (b < end && consumed_[b]) ++b;
    if (b > from) release(kHeaderSize + from * kBlockSize, (b - from) * kBlockSize);
  }
  if (end > released_blocks_) released_blocks_ = end;
  if (consumed_to_ < released_blocks_) consumed_to_ = released_blocks_;
}

void TraceFile::block_done(uint64_t b) {
  if (b < released_blocks_) {  // a lagging thread's block, skipped when the blocks around it were released
    release(kHeaderSize + b * kBlockSize, kBlockSize);
    return;
  }
  consumed_[b] = 1;
  if (b >= furthest_done_) furthest_done_ = b + 1;
  while (consumed_to_ < block_count_ && consumed_[consumed_to_]) ++consumed_to_;
  if (consumed_to_ - released_blocks_ >= kReleaseBlocks)
    release_blocks_to(consumed_to_);
  else if (furthest_done_ - released_blocks_ >= release_lag_)
    release_blocks_to(furthest_done_);
}

void TraceFile::validate_record(const RecordView& r) const {
  auto bad = [&](const std::string& what) {
    fail_at(r.block_index, r.file_offset,
            fmt::format("{} record at block offset 0x{:x}: {}", record_type_name(r.type),
                        r.file_offset - kHeaderSize - r.block_index * kBlockSize, what));
  };
  // The size from the table: fixed; or at least the fixed part, then (variable types) the fixed part
  // plus the payload its fields announce, checked after those fields (a stack deeper than allowed
  // is named as such, not as a size mismatch).
  const RecordInfo& info = record_info(static_cast<uint16_t>(r.type));
  if (info.size_rule == SizeRule::Fixed) {
    if (r.size != info.fixed) bad(fmt::format("size {} (expected {})", r.size, info.fixed));
  } else if (r.size < info.fixed) {
    bad(fmt::format("size {} is too small", r.size));
  }
  std::string what;
  FieldChecks c{api_count_, &what, version_};
  if (!fields_valid(c, r.type, r.data)) bad(what);
  if (info.size_rule == SizeRule::Variable) {
    uint32_t want = record_size_aligned(info.struct_size + record_payload_bytes(static_cast<uint16_t>(r.type), r.data));
    if (r.size != want) bad(fmt::format("size {} (expected {})", r.size, want));
  }
}

// Checks a block header; false for an unused (all-zero) block.
// Reads with pread, not through the mapping: a pass over the block headers alone would map
// (fault-around) most of the file and count it as resident.
bool TraceFile::check_block(uint64_t b, uint32_t* tid, bool* shared, bool* ring, uint64_t* ring_seq) const {
  const uint64_t base = kHeaderSize + b * kBlockSize;
  uint8_t head[sizeof(BlockHeader) + sizeof(RecordHeader)];
  if (pread(fd_, head, sizeof head, static_cast<off_t>(base)) != static_cast<ssize_t>(sizeof head)) {
    struct stat st {};
    if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < size_) {
      shrunk_ = true;  // truncated since open: an unused block, as the mapping reads it
      return false;
    }
    fail_at(b, base, fmt::format("cannot read the block header: {}", std::strerror(errno)));
  }
  BlockHeader bh;
  std::memcpy(&bh, head, sizeof bh);
  if (bh.magic == 0) {
    // Claimed but never written (the writer stores the magic last), or preallocated space of a
    // process that did not close cleanly: unused. Its records must be absent too.
    RecordHeader first;
    std::memcpy(&first, head + sizeof(BlockHeader), sizeof first);
    if (first.type != 0 || first.size != 0)
      fail_at(b, base, "the block has no magic (unused) but holds records (corrupt block header)");
    return false;
  }
  const bool handed_on = bh.magic == kBlockMagicShared && version_ >= 5;  // holds Handoff records
  // A flight recorder's ring block (version 6): its block_index is its sequence number in the ring.
  const bool in_ring = bh.magic == kBlockMagicRing && flight();
  if (bh.magic != kBlockMagic && !handed_on && !in_ring)
    fail_at(b, base, fmt::format("bad block magic 0x{:08x} (expected 0x{:08x} \"BLK1\")", bh.magic, kBlockMagic));
  if (shared) *shared = handed_on;
  if (ring) *ring = in_ring;
  if (ring_seq && in_ring) *ring_seq = bh.block_index;
  if (!in_ring && bh.block_index != b)
    fail_at(b, base, fmt::format("the block says it is block {} (corrupt or reordered file)", bh.block_index));
  if (bh.tid == 0) fail_at(b, base, "owning thread id 0");
  *tid = bh.tid;
  return true;
}

// Validates the record at `off` of block `b`; false at the end of the block's valid part. In a
// version-1 trace the record is converted to its v2 struct (into `scratch` where the layouts differ).
bool TraceFile::read_record(uint64_t b, uint32_t off, uint32_t tid, RecordView* out, uint8_t* scratch) const {
  static_assert(kBlockSize % 8 == 0 && sizeof(BlockHeader) % 8 == 0);
  const uint64_t base = kHeaderSize + b * kBlockSize;
  const uint8_t* block = map_ + base;
  trace_io::RawRecord rh;
  switch (trace_io::frame_at(block, off, version_, &rh)) {  // the framing: trace_io.h
    case trace_io::Frame::Ok: break;
    case trace_io::Frame::End: return false;
    case trace_io::Frame::EndWithSize:
      fail_at(b, base + off,
              fmt::format("record at block offset 0x{:x}: type 0 (end of block) with size {}", off, rh.size));
    case trace_io::Frame::UnknownType:
      fail_at(b, base + off, fmt::format("record at block offset 0x{:x}: unknown record type {}", off, rh.type));
    case trace_io::Frame::TypeTooNew: {
      const RecordInfo& info = record_info(rh.type);
      fail_at(b, base + off,
              fmt::format("record at block offset 0x{:x}: unknown record type {} in a version-{} trace "
                          "({} records exist since version {})",
                          off, rh.type, version_, info.name, info.since));
    }
    case trace_io::Frame::SizeNotMultiple:
      fail_at(b, base + off,
              fmt::format("record at block offset 0x{:x}: size {} is not a positive multiple of 8", off, rh.size));
    case trace_io::Frame::PastBlock:
      fail_at(b, base + off,
              fmt::format("record at block offset 0x{:x}: its {} bytes run past the end of the block", off, rh.size));
  }
  const RecordInfo& info = record_info(rh.type);
  *out = RecordView{static_cast<RecordType>(rh.type), rh.size, block + off, base + off, tid, b, rh.size};
  if (AW_READER_UNLIKELY(version_ == 1)) {
    std::string why;
    const uint8_t* v2 = trace_v1::to_v2(rh.type, rh.size, block + off, scratch, &out->size, &why);
    if (!v2) fail_at(b, base + off, fmt::format("{} record at block offset 0x{:x}: {}", info.name, off, why));
    out->data = v2;
  }
  validate_record(*out);
  if (AW_READER_UNLIKELY(rh.type == static_cast<uint16_t>(RecordType::Handoff))) {
    uint32_t magic;
    std::memcpy(&magic, block, sizeof magic);
    if (magic != kBlockMagicShared)
      fail_at(b, base + off,
              fmt::format("record at block offset 0x{:x}: a Handoff in a block not marked handed on (BLK2)", off));
  }
  return true;
}

void TraceFile::scan(const std::function<void(const RecordView&)>& visit,
                     const std::function<void(uint64_t, uint32_t, bool)>& on_block) const {
  alignas(8) uint8_t scratch[trace_v1::kScratchBytes];
  for (uint64_t b = 0; b < block_count_; ++b) {
    uint32_t tid = 0;
    bool used = check_block(b, &tid);
    if (on_block) on_block(b, tid, used);
    if (!used) continue;
    RecordView r;
    for (uint32_t off = sizeof(BlockHeader); read_record(b, off, tid, &r, scratch); off += r.stored_size) {
      if (r.type == RecordType::Handoff) tid = r.tid = r.as<HandoffRecord>().tid;  // the rest is its thread's
      if (r.type != RecordType::Padding) visit(r);
    }
  }
}

bool IdOffsets::add_slow(uint32_t id, uint64_t offset, uint64_t limit) {
  if (id == 0) return true;  // none (the dense table has no slot yet)
  if (find(id) != UINT64_MAX) return true;
  if (count_ >= limit) return false;
  // Dense while the ids are (a few far-out ids must not allocate the whole vector).
  if (id < kDense && (id < dense_.size() || id <= 2 * count_ + 4096)) {
    if (id >= dense_.size()) {
      dense_.resize(std::min<size_t>(std::max<size_t>(id + 1, dense_.size() * 2), kDense), 0);
      dense_[0] = kNone;
      dense_size_ = static_cast<uint32_t>(dense_.size());
    }
    dense_[id] = offset + 1;
  } else {
    sparse_.emplace(id, offset);
  }
  ++count_;
  return true;
}

uint64_t IdOffsets::find(uint32_t id) const {
  if (id == 0) return UINT64_MAX;  // none (dense_[0] is kNone)
  if (id < dense_.size() && dense_[id]) return dense_[id] - 1;
  if (sparse_.empty()) return UINT64_MAX;
  auto it = sparse_.find(id);
  return it == sparse_.end() ? UINT64_MAX : it->second;
}

std::string limit_message(const char* what, uint64_t limit, const char* option) {
  return fmt::format("more than {} {}: beyond the analyzer's limit{} (docs/reliability.md, \"Analyzer memory\")", limit,
                     what, option ? fmt::format("; raise it with {}", option) : std::string());
}

void TraceFile::over_limit(const char* what, uint64_t limit, const char* option) const {
  fail(limit_message(what, limit, option));
}

bool TraceFile::absorb(const RecordView& r) {
  switch (r.type) {
    case RecordType::ThreadInfo:
    case RecordType::Module:
    case RecordType::Stack:
    case RecordType::PyCode:
    case RecordType::PythonInfo:
    case RecordType::String:
    case RecordType::Lost:
    case RecordType::DeviceInfo:
    case RecordType::SiteSummary:
    case RecordType::Padding: return absorb_metadata(r);
    default: {
      uint64_t start;
      return absorb_event(r, &start);  // GpuClock too: handed to the walk's visitor
    }
  }
}

// The metadata records (ThreadInfo, Module, Stack, ...): into the index; never events.
bool TraceFile::absorb_metadata(const RecordView& r) {
  ++record_count_;
  switch (r.type) {
    case RecordType::ThreadInfo: {
      auto t = r.as<ThreadInfoRecord>();
      auto it = thread_by_tid_.find(r.tid);
      if (it != thread_by_tid_.end()) threads_[it->second].name = fixed_string(t.name, sizeof t.name);
      return false;
    }
    case RecordType::Module: {
      auto m = r.as<ModuleRecord>();
      if (modules_.size() >= limits_.modules) over_limit("module records", limits_.modules, nullptr);
      module_path_bytes_ += m.path_len;
      if (module_path_bytes_ > limits_.module_path_bytes)
        over_limit("bytes of module paths", limits_.module_path_bytes, nullptr);
      ModuleInfo info;
      info.path.assign(reinterpret_cast<const char*>(r.payload(sizeof(ModuleRecord))), m.path_len);
      info.load_bias = m.load_bias;
      info.low = m.low;
      info.high = m.high;
      info.build_id.assign(m.build_id, m.build_id + m.build_id_len);
      modules_.push_back(std::move(info));
      return false;
    }
    case RecordType::Stack:  // the first definition of an id counts
      if (!stacks_.add(r.as<StackRecord>().stack_id, r.file_offset, limits_.stacks))
        over_limit("distinct call stacks", limits_.stacks, "--max-stacks");
      return false;
    case RecordType::PyCode:
      if (!py_codes_.add(r.as<PyCodeRecord>().code_id, r.file_offset, limits_.strings))
        over_limit("distinct Python code objects", limits_.strings, nullptr);
      return false;
    case RecordType::PythonInfo: {
      auto i = r.as<PythonInfoRecord>();
      python_.present = true;
      python_.ready = i.availability == 1;
      python_.version_hex = i.version_hex;
      python_.detail = fixed_string(i.detail, sizeof i.detail);
      return false;
    }
    case RecordType::String:
      if (!strings_.add(r.as<StringRecord>().string_id, r.file_offset, limits_.strings))
        over_limit("distinct strings", limits_.strings, nullptr);
      return false;
    case RecordType::Lost: {
      auto l = r.as<LostRecord>();
      lost_in_records_ += l.count;
      if (lost_reports_.size() < limits_.modules)  // bounded like the module list (one per stretch of losses)
        lost_reports_.push_back(
            LostReport{r.tid, l.count, l.first_lost_ns, l.last_lost_ns, static_cast<LostReason>(l.reason)});
      return false;
    }
    case RecordType::DeviceInfo: {
      auto d = r.as<DeviceInfoRecord>();
      device_.present = true;
      device_.driver_version = d.driver_version;
      device_.ordinal = d.device_ordinal;
      device_.simulated = d.simulated != 0;
      device_.name = fixed_string(d.name, sizeof d.name);
      return false;
    }
    case RecordType::SiteSummary: {  // the calls' references; the calls are the merged walk's (add_summary)
      const auto& site = r.ref<SiteSummaryRecord>();
      const auto& call = *reinterpret_cast<const CallHead*>(site.call);
      use_stack(call.stack_id, r.file_offset);
      if (const uint8_t at = kStringRefAt.at[call.h.type]) use_string_at(site.call, at, r.file_offset);
      ++summary_records_;
      summary_calls_ += site.count;
      return false;
    }
    case RecordType::Padding: --record_count_; return false;  // not a record of the application's
    default: return false;
  }
}

// A call that had not returned when the trace ended: no result, no end time; counted, kept (the
// first kMaxInFlightKept) for the in-flight rule, not handed to the walk's visitor.
void TraceFile::absorb_in_flight(const RecordView& r, const CallHead& h) {
  ++in_flight_records_;
  if (in_flight_calls_.size() < kMaxInFlightKept) {
    InFlightCall call{r.type, r.tid, h};
    if (!h.stack_id && in_flight_caller(h)) {  // only the caller's address: a one-frame stack of it
      call.head.stack_id = kCallerSiteStackBase + static_cast<uint32_t>(caller_sites_.size());
      caller_sites_.push_back(in_flight_caller(h));
    }
    in_flight_calls_.push_back(call);
  }
  if (h.start_ns > last_time_ns_) last_time_ns_ = h.start_ns;
}

bool TraceFile::next_validated(CursorState& c) {
  while (c.block_pos < c.blocks->size()) {
    const uint64_t b = piece_block((*c.blocks)[c.block_pos]);
    const uint64_t base = kHeaderSize + b * kBlockSize;
    const uint8_t* block = map_ + base;
    if (c.off == 0) c.off = piece_start((*c.blocks)[c.block_pos]);
    c.block = block;  // Cursor::next's inline fast path reads on in it
    c.base = base;
    c.block_index = b;
    c.fast_end = fast_end_;
    c.current.tid = c.tid;  // (the fast path sets the other fields)
    c.current.block_index = b;
    for (;;) {
      // Fast path: a fixed-size event record of this version, of its table size, inside the
      // block, whose fields pass their checks (the same checks as read_record's, without the
      // words: any problem takes the slow path, which names it).
      if (c.off + sizeof(RecordHeader) <= kBlockSize) {
        RecordHeader rh;
        std::memcpy(&rh, block + c.off, sizeof rh);
        FieldChecks quiet{api_count_, nullptr, version_};
        if (rh.type < kRecordTypeLimit && rh.size == fast_rows_[rh.type].size && c.off + rh.size <= kBlockSize &&
            fields_valid(quiet, static_cast<RecordType>(rh.type), block + c.off)) {
          c.current =
              RecordView{static_cast<RecordType>(rh.type), rh.size, block + c.off, base + c.off, c.tid, b, rh.size};
          c.off += rh.size;
          uint64_t t;
          if (!absorb_event(c.current, &t)) continue;  // in flight
          c.time = t > c.time ? t : c.time;            // keep the thread's own order even if its clock goes back
          return true;
        }
      }
      if (!read_record(b, c.off, c.tid, &c.current, c.scratch)) break;
      if (c.current.type == RecordType::Handoff) break;  // the rest of the block is another thread's
      c.off += c.current.stored_size;
      if (AW_READER_UNLIKELY(c.current.type == RecordType::SiteSummary)) add_summary(c, c.current);
      if (!absorb(c.current)) continue;
      const uint64_t t = record_time(c.current);
      c.time = t > c.time ? t : c.time;
      return true;
    }
    block_done(b);
    ++c.block_pos;
    c.off = 0;
    c.block = nullptr;
    c.fast_end = 0;
  }
  return false;
}

void TraceFile::add_summary(CursorState& c, const RecordView& r) {
  if (!c.replay) c.replay = std::make_unique<SummaryReplay>();
  c.replay->add(r.ref<SiteSummaryRecord>(), r.file_offset);
}

std::string TraceFile::summary_note() const {
  if (!summary()) return {};
  // A flight-recorder trace's timeline draws the window's raw calls, not the summaries' (for_each_merged).
  const char* timeline =
      flight() ? "the timeline draws the flight recorder's window of raw calls instead of the folded calls"
               : "the folded calls' times in the timeline are spread evenly between the first and the last of each "
                 "summary";
  return fmt::format(
      "summary trace (asyncwatch run --{}): {} calls were folded into {} summaries by call site and "
      "signature (the first 2 calls of each are records of their own); counts, totals, maxima and "
      "call sites are exact, percentiles within the histogram's resolution (a quarter of the value), and {}",
      flight() ? "trace-limit" : "summary", summary_calls_, summary_records_, timeline);
}

void TraceFile::check_references() {
  auto check = [&](const IdOffsets& uses, const IdOffsets& defined, const char* what) {
    uses.each([&](uint32_t id, uint64_t offset) {
      if (defined.find(id) == UINT64_MAX)
        fail(fmt::format("record at file offset 0x{:x} refers to {} id {}, which the trace never defines", offset, what,
                         id));
    });
  };
  check(first_stack_use_, stacks_, "stack");
  check(first_string_use_, strings_, "string");
}

void TraceFile::reset_index() {
  threads_.clear();
  thread_by_tid_.clear();
  modules_.clear();
  stacks_ = IdOffsets{};
  strings_ = IdOffsets{};
  py_codes_ = IdOffsets{};
  python_ = PythonInfo{};
  module_path_bytes_ = 0;
  device_ = DeviceInfo{};
  record_count_ = event_record_count_ = lost_in_records_ = last_time_ns_ = in_flight_records_ = 0;
  summary_records_ = summary_calls_ = 0;
  ring_blocks_.clear();
  ring_flags_.clear();
  window_threads_.clear();
  window_ = FlightWindow{};
  in_flight_calls_.clear();
  caller_sites_.clear();
  lost_reports_.clear();
  first_stack_use_ = IdOffsets{};
  first_string_use_ = IdOffsets{};
}

void TraceFile::index_blocks() {
  reset_index();
  const auto add_piece = [&](uint32_t tid, uint64_t entry) {
    auto [it, inserted] = thread_by_tid_.emplace(tid, threads_.size());
    if (inserted) threads_.push_back(ThreadInfo{tid, {}, {}});
    threads_[it->second].blocks.push_back(entry);
  };
  for (uint64_t b = 0; b < block_count_; ++b) {
    uint32_t tid = 0;
    bool shared = false, ring = false;
    uint64_t seq = 0;
    if (!check_block(b, &tid, &shared, &ring, &seq)) continue;
    if (ring) {  // the flight recorder's window: not in the threads' chains (read_window)
      if (ring_flags_.empty()) ring_flags_.assign(block_count_, 0);
      ring_flags_[b] = 1;
      ring_blocks_.push_back({seq, b, tid});
      continue;
    }
    add_piece(tid, b);
    if (!shared) continue;
    // A block handed on (version 5): each Handoff starts a part of its thread's chain. The framing
    // only (a bad record ends the walk here; the chain's validating walk names it).
    const uint8_t* block = map_ + kHeaderSize + b * kBlockSize;
    trace_io::RawRecord r;
    for (uint32_t off = sizeof(BlockHeader); trace_io::frame_at(block, off, version_, &r) == trace_io::Frame::Ok;
         off += r.size) {
      if (r.type != static_cast<uint16_t>(RecordType::Handoff) || r.size != sizeof(HandoffRecord)) continue;
      const uint32_t next = trace_io::handoff_tid(r);
      if (next == 0) fail_at(b, kHeaderSize + b * kBlockSize + off, "a Handoff record to thread id 0");
      if (off + r.size < kBlockSize) add_piece(next, b | (static_cast<uint64_t>(off + r.size) << 48));
    }
  }
  // The window in the ring's order. Sequence numbers are unique (each claim takes the next); two
  // alike are a corrupt file, not something to guess an order for.
  std::sort(ring_blocks_.begin(), ring_blocks_.end(), [](const RingBlock& a, const RingBlock& b) {
    return a.seq < b.seq || (a.seq == b.seq && a.block < b.block);
  });
  for (size_t i = 1; i < ring_blocks_.size(); ++i)
    if (ring_blocks_[i].seq == ring_blocks_[i - 1].seq)
      fail_at(ring_blocks_[i].block, kHeaderSize + ring_blocks_[i].block * kBlockSize,
              fmt::format("ring block with sequence {}, as block {} (corrupt flight-recorder ring)",
                          ring_blocks_[i].seq, ring_blocks_[i - 1].block));
  if (flight() && ring_blocks_.size() > header_.flight_ring_blocks)
    fail(fmt::format("corrupt flight-recorder ring: {} ring blocks, more than the {} the header gives it",
                     ring_blocks_.size(), header_.flight_ring_blocks));
  std::unordered_map<uint32_t, size_t> window_by_tid;
  for (const RingBlock& rb : ring_blocks_) {
    auto [it, inserted] = window_by_tid.emplace(rb.tid, window_threads_.size());
    if (inserted) window_threads_.push_back(ThreadInfo{rb.tid, {}, {}});
    window_threads_[it->second].blocks.push_back(rb.block);
  }
  blocks_indexed_ = true;
}

// The flight recorder's window (the ring blocks, in sequence order): every record validated as any
// other, each a completed call record (the writer copies nothing else), its references checked with
// the rest; counted, not handed to the walks (the whole run's calls are the summaries').
void TraceFile::read_window() {
  window_ = FlightWindow{};
  if (!flight()) return;
  window_.present = true;
  window_.ring_blocks = header_.flight_ring_blocks;
  window_.blocks_reused = header_.flight_blocks_reused;
  window_.copies_missed = header_.flight_copies_missed;
  window_.start_ns = header_.flight_window_start_ns;
  window_.blocks = ring_blocks_.size();
  alignas(8) uint8_t scratch[trace_v1::kScratchBytes];
  for (const RingBlock& rb : ring_blocks_) {
    RecordView r;
    for (uint32_t off = sizeof(BlockHeader); read_record(rb.block, off, rb.tid, &r, scratch); off += r.stored_size) {
      const RecordInfo& info = record_info(static_cast<uint16_t>(r.type));
      if (!info.call)
        fail_at(rb.block, r.file_offset,
                fmt::format("{} record in a flight-recorder ring block (which holds call records only)", info.name));
      const CallHead& h = r.ref<CallHead>();
      if (h.flags & kFlagInFlight)
        fail_at(rb.block, r.file_offset,
                "a call in flight in a flight-recorder ring block (which holds completed calls)");
      use_stack(h.stack_id, r.file_offset);
      if (const uint8_t at = kStringRefAt.at[static_cast<size_t>(r.type)]) use_string_at(r.data, at, r.file_offset);
      uint64_t calls = 1;
      if (r.type == RecordType::Sync) calls = std::max<uint64_t>(1, r.ref<SyncRecord>().repeat);
      window_.calls += calls;
      ++window_.records;
      if (!window_.first_ns || h.start_ns < window_.first_ns) window_.first_ns = h.start_ns;
      window_.last_ns = std::max(window_.last_ns, h.end_ns);
    }
    release(kHeaderSize + rb.block * kBlockSize, kBlockSize);
  }
}

std::string TraceFile::flight_note(uint64_t whole_run_calls) const {
  if (!window_.present) return {};
  const uint64_t start = header_.start_monotonic_ns;
  auto at = [&](uint64_t t) {
    return fmt::format("+{:.3f} s", t > start ? static_cast<double>(t - start) / 1e9 : 0.0);
  };
  const std::string window = window_.records == 0 ? std::string("the ring holds no call record")
                                                  : fmt::format(
                                                        "its raw records cover {} to {}: {} calls in {} of the "
                                                        "ring's {} blocks",
                                                        at(window_first_ns()), at(window_.last_ns), window_.calls,
                                                        window_.blocks, window_.ring_blocks);
  const uint64_t before = whole_run_calls > window_.calls ? whole_run_calls - window_.calls : 0;
  const uint64_t ring = window_.ring_blocks * kBlockSize;
  return fmt::format(
      "flight-recorder trace (asyncwatch run --trace-limit {}): findings, counts and totals are the whole run's "
      "{} calls, from its summaries; {}{}{}",
      ring % (1u << 20) ? fmt::format("{}K", ring >> 10) : fmt::format("{}M", ring >> 20), whole_run_calls, window,
      window_.blocks_reused ? fmt::format("; {} ring blocks were reused: the {} calls before the window are in the "
                                          "summaries only",
                                          window_.blocks_reused, before)
                            : std::string("; the ring never wrapped"),
      window_.copies_missed
          ? fmt::format("; {} calls got no raw copy (every ring block was held by a thread)", window_.copies_missed)
          : std::string());
}

void TraceFile::index() {
  index_blocks();
  uint64_t last_released = kHeaderSize;
  scan([&](const RecordView& r) {
    if (!in_ring(r.block_index)) absorb(r);  // the ring's records: read_window's
    // Give back what we have read every 16 MiB: resident memory stays bounded.
    if (r.file_offset - last_released >= (16u << 20)) {
      release(last_released, r.file_offset - last_released);
      last_released = r.file_offset;
    }
  });
  release(last_released, size_ - last_released);
  read_window();
  check_references();
  indexed_ = true;
}

// Both read a record that absorb() validated (its pages may have been released since: they are
// read again from the file).
std::optional<std::vector<uint64_t>> TraceFile::stack(uint32_t id) const {
  if (id >= kCallerSiteStackBase && id - kCallerSiteStackBase < caller_sites_.size())
    return std::vector<uint64_t>{caller_sites_[id - kCallerSiteStackBase]};
  uint64_t off = stacks_.find(id);
  if (off == UINT64_MAX) return std::nullopt;
  uint32_t depth, at;
  if (version_ == 1) {
    depth = trace_v1::stack_depth(map_ + off);
    at = trace_v1::kStackPayloadOffset;
  } else {
    StackRecord s;
    std::memcpy(&s, map_ + off, sizeof s);
    depth = s.depth;
    at = sizeof(StackRecord);
  }
  std::vector<uint64_t> frames(depth);
  if (depth) std::memcpy(frames.data(), map_ + off + at, 8ull * depth);
  return frames;
}

std::optional<StackRecord> TraceFile::stack_record(uint32_t id, uint32_t min_version, uint64_t* offset) const {
  if (id >= kCallerSiteStackBase && id - kCallerSiteStackBase < caller_sites_.size()) return std::nullopt;
  const uint64_t off = stacks_.find(id);
  if (off == UINT64_MAX || version_ < min_version) return std::nullopt;
  StackRecord s;
  std::memcpy(&s, map_ + off, sizeof s);
  if (offset) *offset = off;
  return s;
}

std::vector<PythonFrameRef> TraceFile::python_frames(uint32_t id) const {
  uint64_t off = 0;
  const std::optional<StackRecord> s = stack_record(id, 3, &off);
  if (!s || !s->python_depth) return {};
  std::vector<PythonFrameRef> frames(s->python_depth);
  std::memcpy(frames.data(), map_ + off + sizeof(StackRecord) + 8ull * s->depth, 8ull * s->python_depth);
  return frames;
}

uint32_t TraceFile::python_lender(uint32_t id) const {
  const std::optional<StackRecord> s = stack_record(id, 3);
  return s ? trace::python_lender(*s) : 0;
}

uint32_t TraceFile::python_own(uint32_t id) const {
  const std::optional<StackRecord> s = stack_record(id, 7);
  return s && trace::python_lender(*s) ? s->python_own : 0;
}

std::optional<PyCodeInfo> TraceFile::py_code(uint32_t id) const {
  uint64_t off = py_codes_.find(id);
  if (off == UINT64_MAX) return std::nullopt;
  PyCodeRecord c;
  std::memcpy(&c, map_ + off, sizeof c);
  const char* p = reinterpret_cast<const char*>(map_ + off + sizeof(PyCodeRecord));
  PyCodeInfo info;
  info.filename.assign(p, c.filename_len);
  info.qualname.assign(p + c.filename_len, c.qualname_len);
  info.line_table.assign(p + c.filename_len + c.qualname_len, p + c.filename_len + c.qualname_len + c.line_table_len);
  info.first_line = c.first_line;
  info.instructions = c.instructions;
  info.format = static_cast<python_lines::LineTableFormat>(c.line_table_format);
  info.line_table_truncated = (c.flags & kPyCodeLineTableTruncated) != 0;
  return info;
}

std::optional<std::string> TraceFile::string(uint32_t id) const {
  uint64_t off = strings_.find(id);
  if (off == UINT64_MAX) return std::nullopt;
  StringRecord s;
  std::memcpy(&s, map_ + off, sizeof s);
  return std::string(reinterpret_cast<const char*>(map_ + off + sizeof(StringRecord)), s.len);
}

const std::string* TraceFile::thread_name(uint32_t tid) const {
  auto it = thread_by_tid_.find(tid);
  if (it == thread_by_tid_.end() || threads_[it->second].name.empty()) return nullptr;
  return &threads_[it->second].name;
}

}  // namespace asyncwatch
