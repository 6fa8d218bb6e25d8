#include "findings/analysis.h"

#include "symbols/call_site.h"
#include "events/allocations.h"
#include "events/concurrent_calls.h"
#include "symbols/debuginfo.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "findings/rules.h"
#include "report/format.h"
#include "report/printable.h"
#include "symbols/names.h"
#include "findings/hidden_sync.h"
#include "findings/impact.h"
#include "symbols/python_symbols.h"
#include "symbols/symbolizer.h"
#include "read/trace_reader.h"

#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <iterator>
#include <memory>
#include <optional>
#include <unordered_map>

namespace asyncwatch {

using namespace trace;

std::string cuda_env_value(const std::string& env, const std::string& name) {
  size_t pos = 0;
  while (pos < env.size()) {
    size_t end = env.find(';', pos);
    if (end == std::string::npos) end = env.size();
    std::string item = env.substr(pos, end - pos);
    if (item.size() > name.size() && item.compare(0, name.size(), name) == 0 && item[name.size()] == '=')
      return item.substr(name.size() + 1);
    pos = end + 1;
  }
  return {};
}

bool foreign_trace(const struct stat& st) { return st.st_uid != geteuid(); }

void say_foreign_traces(const std::vector<std::string>& foreign) {
  if (foreign.empty()) return;
  std::string list;
  for (const auto& f : foreign) list += (list.empty() ? "" : ", ") + f;
  std::fprintf(stderr, "%s\n",
               printable(fmt::format("asyncwatch: skipped {} owned by another user: {} (--allow-foreign-traces "
                                     "reads them)",
                                     foreign.size() == 1 ? "1 trace" : fmt::format("{} traces", foreign.size()), list))
                   .c_str());
}

TraceInputs expand_trace_inputs(const std::vector<std::string>& inputs, bool allow_foreign) {
  TraceInputs out;
  for (const auto& in : inputs) {
    struct stat st {};
    if (stat(in.c_str(), &st) != 0) {
      out.unreadable.push_back({in, std::strerror(errno)});
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      out.paths.push_back(in);
      continue;
    }
    DIR* d = opendir(in.c_str());
    if (!d) {
      out.unreadable.push_back({in, fmt::format("cannot read the directory: {}", std::strerror(errno))});
      continue;
    }
    std::vector<std::string> found;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 8 && name.compare(name.size() - 8, 8, ".awtrace") == 0) {
        std::string path = in + (in.back() == '/' ? "" : "/") + name;
        struct stat fst {};
        if (!allow_foreign && stat(path.c_str(), &fst) == 0 && foreign_trace(fst)) {
          out.foreign.push_back(fmt::format("{} (uid {})", path, fst.st_uid));
          continue;
        }
        found.push_back(std::move(path));
      }
    }
    closedir(d);
    if (found.empty()) {
      bool skipped = !out.foreign.empty();
      out.unreadable.push_back(
          {in, skipped ? "the directory holds no .awtrace files of yours" : "the directory holds no .awtrace files"});
      continue;
    }
    std::sort(found.begin(), found.end());
    out.paths.insert(out.paths.end(), found.begin(), found.end());
  }
  return out;
}

bool no_usable_device_error(int32_t result) {
  switch (result) {
    case 3:
    case 34:
    case 35:
    case 46:
    case 100:
    case 802:
    case 803:
    case 804: return true;
    default: return false;
  }
}

UnreadableTrace unreadable_trace(const std::string& path, const std::exception& e) {
  std::string what = e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e)) what = "not enough memory to analyze it";
  const std::string prefix = path + ": ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  return {path, what};
}

std::string kernel_display_name(const std::string& mangled) {
  // "void (anonymous namespace)::reduce<float>(float*, int)" -> "(anonymous namespace)::reduce<float>":
  // the return type and the argument list go, namespaces, classes and template arguments stay.
  return name_without_signature(demangle(mangled.c_str()));
}

namespace {

// What a loss reason means to the user (trace_format.h's ASYNCWATCH_LOST_REASONS names them).
std::string lost_reason_text(const std::string& reason) {
  if (reason == "no-block") return "no trace block could be claimed: tracing had stopped";
  if (reason == "file-limit") return "the trace file could not grow: disk full or RLIMIT_FSIZE";
  if (reason == "signal-handler") return "made inside a signal handler that interrupted the library";
  if (reason == "too-large") return "a record larger than a trace block";
  return "reason unknown";
}

// What a capture range (FileHeader::capture_*) let into the trace, in one line. The header is
// untrusted: times outside the trace's span are clamped to it.
std::string capture_note(const FileHeader& h, uint64_t end, const ProcessSummary& p) {
  const uint64_t start = h.start_monotonic_ns;
  auto at = [&](uint64_t t) { return format_duration(t > start ? std::min(t, end) - start : 0); };
  std::string mode = trace::capture_mode_text(h.capture_mode);
  std::string settings;
  if (h.capture_delay_ns) settings += fmt::format(", delay {}", format_duration(h.capture_delay_ns));
  if (h.capture_duration_ns) settings += fmt::format(", duration {}", format_duration(h.capture_duration_ns));
  if (h.capture_ranges == 0) {
    const char* why = h.capture_mode == static_cast<uint8_t>(trace::CaptureMode::ProfilerApi)
                          ? "cudaProfilerStart (or cuProfilerStart) was never called"
                      : h.capture_mode == static_cast<uint8_t>(trace::CaptureMode::Nvtx)
                          ? "no NVTX range of that name was opened"
                          : "the run ended before the delay did";
    return fmt::format(
        "capture range {}{}: no range opened ({}), so no CUDA call was recorded: this trace says "
        "nothing about the run's calls",
        mode, settings, why);
  }
  const bool open_at_end = h.capture_last_end_ns < h.capture_last_start_ns;
  return fmt::format(
      "capture range {}{}: {} range{} recorded, {} of the run's {} (from {} to {}); calls outside the "
      "range{} are not in this trace, and shares of wall time count the recorded time only",
      mode, settings, h.capture_ranges, h.capture_ranges == 1 ? "" : "s",
      format_duration(p.wall_ns > p.paused_ns ? p.wall_ns - p.paused_ns : 0), format_duration(p.wall_ns),
      "+" + at(h.capture_first_start_ns), open_at_end ? "the end" : "+" + at(h.capture_last_end_ns),
      h.capture_ranges == 1 ? "" : "s");
}

constexpr uint32_t kGraphKernel = events::StreamTable::kGraphKernel;
// Bit t: record type t is a call record (record_info(t).call), one test per record.
constexpr uint64_t kCallTypes = [] {
  static_assert(kRecordTypeLimit <= 64);
  uint64_t m = 0;
  for (uint16_t t = 0; t < kRecordTypeLimit; ++t)
    if (record_info(t).call) m |= uint64_t{1} << t;
  return m;
}();
constexpr size_t kMaxWaitedKernels = 64;     // distinct kernels a finding names as waited for
constexpr size_t kMaxRangesPerGroup = 64;    // distinct NVTX ranges a finding names
constexpr uint32_t kMaxRangeDomains = 64;    // NVTX domains followed (the library makes at most 32)
constexpr size_t kMaxRangeDepth = 256;       // push ranges open on one thread that are followed
constexpr size_t kMaxOpenRanges = 4096;      // start/end ranges open at once that are followed
constexpr size_t kMaxThreadsPerGroup = 256;  // threads a group keeps its blocked time for (shares of wall)
constexpr size_t kMaxRepeatKeys = 4096;      // distinct sizes/addresses a group remembers (implicit-sync)

// 16 bytes without padding, in this order: the first 8 and the last 8 are each one 64-bit word
// (compared and hashed as two words: observe builds, hashes and compares a key per grouped call).
struct GroupKey {
  uint8_t id;
  uint8_t cause;
  int8_t direction;  // -1 = none
  int8_t memory;     // -1 = none
  uint16_t api;      // Api id as recorded
  uint16_t driver_fn;
  uint32_t kernel;
  uint32_t site;  // stack id during the pass
  uint64_t word(size_t i) const {
    uint64_t w;
    std::memcpy(&w, reinterpret_cast<const char*>(this) + 8 * i, sizeof w);
    return w;
  }
  bool operator==(const GroupKey& o) const { return word(0) == o.word(0) && word(1) == o.word(1); }
};
static_assert(sizeof(GroupKey) == 16 && offsetof(GroupKey, kernel) == 8);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GroupKey's words");
struct GroupKeyHash {
  // (id << 56) ^ (cause << 48) ^ (direction << 40) ^ (memory << 32) ^ api ^ (driver_fn << 16), mixed with
  // the kernel and the site, from the two words: those four bytes are word 0's low half, byte-swapped.
  size_t operator()(const GroupKey& k) const {
    const uint64_t w0 = k.word(0), w1 = k.word(1);
    uint64_t h = __builtin_bswap64(w0 & 0xffffffffu) ^ ((w0 >> 32) & 0xffffu) ^ ((w0 >> 48) << 16);
    h ^= ((w1 & 0xffffffffu) * 0x9e3779b97f4a7c15ull) ^ ((w1 >> 32) * 0xc2b2ae3d27d4eb4full);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Launches waited for, by kernel name id: at most kMaxWaitedKernels ids (add() refuses more).
// Open addressing in a table grown at 3/4 load (an explicit synchronization adds each kernel
// its stream ran since it was last idle: a hash-map look-up each was most of its cost; at half
// load these tables were the largest part of a pass with 100 k call sites: docs/performance.md).
class WaitedKernels {
 public:
  bool add(uint32_t id, uint64_t n) {
    if (__builtin_expect(size_ >= limit_, 0)) {  // full: refuse new ids at kMaxWaitedKernels, else grow
      if (size_ >= kMaxWaitedKernels) return find_add(id, n, false);
      grow();
    }
    return find_add(id, n, true);
  }
  // Adds each kernel of `t` (add() for each, in its order; the rest, refused, go to *others). Ids
  // already held, the common case, are found at their home slot without add()'s tests.
  void add_all(const KernelTally& t, uint64_t* others) {
    if (__builtin_expect(slots_.empty(), 0)) {
      t.each([&](uint32_t id, uint64_t n) {
        if (!add(id, n)) *others += n;
      });
      return;
    }
    Slot* slots = slots_.data();
    size_t mask = slots_.size() - 1;
    t.each([&](uint32_t id, uint64_t n) {
      Slot& s = slots[(id * 2654435761u) & mask];
      if (__builtin_expect(s.tag == tag_of(id), 1)) {
        s.n += n;
        return;
      }
      if (!add(id, n)) *others += n;
      slots = slots_.data();  // add() may have grown the table
      mask = slots_.size() - 1;
    });
  }
  size_t size() const { return size_; }
  template <class F>
  void each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.tag) f(static_cast<uint32_t>(s.tag), s.n);
  }

 private:
  struct Slot {
    uint64_t tag = 0;  // tag_of(id) when used, 0 when free: one comparison finds an id at its slot
    uint64_t n = 0;
  };
  static uint64_t tag_of(uint32_t id) { return uint64_t{1} << 32 | id; }
  bool find_add(uint32_t id, uint64_t n, bool may_insert) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = (id * 2654435761u) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.tag == tag_of(id)) {
        s.n += n;
        return true;
      }
      if (!s.tag) {
        if (!may_insert) return false;
        s = Slot{tag_of(id), n};
        ++size_;
        return true;
      }
    }
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    size_ = 0;
    limit_ = static_cast<uint32_t>(std::min(kMaxWaitedKernels, slots_.size() * 3 / 4));
    for (const Slot& s : old)
      if (s.tag) find_add(static_cast<uint32_t>(s.tag), s.n, true);
  }
  std::vector<Slot> slots_;  // power of two, never full (grown at 3/4 load, kMaxWaitedKernels * 2 at most)
  uint32_t size_ = 0;
  uint32_t limit_ = 0;  // add() grows the table (or refuses new ids) at this size: one test per call
};

struct Group {
  uint64_t count = 0;
  uint64_t bytes = 0;
  DurationStats blocked;
  uint64_t evidence_checked = 0;
  uint64_t completed_at_return = 0;
  uint64_t drained = 0;
  uint64_t outstanding_max = 0;
  uint64_t pending_copies = 0, pending_copy_bytes = 0;  // the most of one call (first-launch)
  WaitedKernels waited;
  uint64_t waited_others = 0;
  uint32_t stack_id = 0;  // a stack that shows the call site
  uint64_t at_threshold = 0;
  uint64_t event_waits = 0;
  bool context_creation_visible = false;
  bool ended_cleanly = true;
  // tid -> blocked ns, by tid (bounded): a sorted vector, as most groups have one thread (a hash
  // map was ~150 bytes more per group).
  std::vector<std::pair<uint32_t, uint64_t>> thread_blocked;
  uint32_t last_tid = 0;          // the thread of the last call, and the index of its entry
  size_t last_thread = SIZE_MAX;  // SIZE_MAX: none
  // NVTX range name id -> calls made inside it (bounded); implicit-sync: the addresses freed
  // (frees) seen, and how many calls repeated one (a free of one of them, an allocation made again). Made on first use: most groups have
  // neither (two empty hash maps in every group were 112 bytes).
  std::unique_ptr<std::unordered_map<uint32_t, uint64_t>> ranges;
  std::unique_ptr<std::unordered_map<uint64_t, uint32_t>> repeat_keys;
  uint64_t repeated = 0;
  // The first call's graph memcpy node (blocking-launch of a graph), for building the finding; the
  // other fields of that call are in the key (not the whole Observation: groups can be 100 k+).
  uint64_t graph_pageable_nodes = 0;
  uint64_t graph_memory_nodes = 0;
  GraphMemcpyNode graph_node;
  ConcurrentCall concurrent;           // the first call's (blocking-launch other-thread-call)
  uint32_t serial = 0;                 // order of creation (CallMark::finding before finish maps it)
  impact::Sink sink;                   // what fixing the calls would save end to end (impact.h); its owner is `serial`
  uint32_t cause_serial = UINT32_MAX;  // sink.cause's owner, read before the groups are freed (finish)
};

// A call site: the frame, and the library function it called (module empty when none).
struct Site {
  Frame frame;
  Frame via;
  bool user = true;
  uint32_t python_lender = 0;             // the frame is a Python frame borrowed from another thread (Finding)
  const char* framework_phase = nullptr;  // made inside a framework's compilation (framework_phase)
};

struct SiteRef {
  uint32_t site = 0;            // 0 = unknown
  uint32_t api_override = 0;    // interned runtime API name, 0 = none
  bool chevron_launch = false;  // the stack shows nvcc's launch stub: kernel<<<...>>>
};

class ProcessAnalyzer final : public RuleContext {
  using HostFunctions = events::HostFunctionJoin<HostFuncEnqueueRecord>;

 public:
  ProcessAnalyzer(TraceFile& t, const Options& o, std::vector<CallMark>* marks = nullptr)
      : trace_(t), opt_(o), streams_(t.path(), o.limits.streams), host_functions_(o.limits.pending_callbacks) {
    std::string env = fixed_string(t.header().cuda_env, sizeof t.header().cuda_env);
    launch_blocking_ = cuda_env_value(env, "CUDA_LAUNCH_BLOCKING") == "1";
    module_loading_ = cuda_env_value(env, "CUDA_MODULE_LOADING");
    marks_ = marks;
    gpu_times_ = (t.header().config_flags & kConfigGpuTimes) != 0;
    names_.push_back("");  // interned id 0 = none
    sites_.push_back(Site{});
    policy_.executable = fixed_string(t.header().executable, sizeof t.header().executable);
    policy_.user_code = o.user_code;
    for (size_t i = 0; i < std::size(rules_); ++i) {
      rules_[i] = &rules_for(static_cast<Trigger>(i));
      const bool threshold_only = std::all_of(rules_[i]->begin(), rules_[i]->end(),
                                              [](const RuleInfo* r) { return r->hooks.at_threshold_only; });
      skip_below_[i] = threshold_only ? o.min_blocked_ns : 0;
      copy_classes_[i] = 0;
      for (const RuleInfo* r : *rules_[i]) copy_classes_[i] |= r->hooks.copies;
    }
  }

  const Options& options() const override { return opt_; }
  bool launch_blocking_env() const override { return launch_blocking_; }

  void run() {
    // Inline into the merge loop: a call per record cost its prologue, epilogue and the view's
    // fields through memory (docs/performance.md).
    trace_.stream_merged([this](const RecordView& r) __attribute__((always_inline)) { record(r); });
  }

  __attribute__((always_inline)) void record(const RecordView& r) {
    current_tid_ = r.tid;
    // (current_stream_: the stream of a copy, memset or launch, UINT64_MAX for the other records)
    // The records of the hot path are read in place (8-aligned in the mapping: RecordView::ref).
    // The common records (copies, memsets, launches, syncs, host functions) in their own case:
    // a call's head bookkeeping (on_call) without the call-type test the others take (other_record).
    switch (r.type) {
      case RecordType::Copy:
      case RecordType::Memset: {
        const CopyRecord& c = r.ref<CopyRecord>();
        on_call(c);
        current_stream_ = stream_key(c.stream_kind, c.stream, r.tid);
        on_copy(r, c, current_stream_);
        break;
      }
      case RecordType::Launch: {
        const LaunchRecord& l = r.ref<LaunchRecord>();
        on_call(l);
        current_stream_ = stream_key(l.stream_kind, l.stream, r.tid);
        on_launch(l, current_stream_);
        break;
      }
      case RecordType::Sync: {
        const SyncRecord& sync = r.ref<SyncRecord>();
        on_call(sync);
        current_stream_ = UINT64_MAX;
        on_sync(r, sync);
        break;
      }
      case RecordType::HostFuncEnqueue: {
        const HostFuncEnqueueRecord& e = r.ref<HostFuncEnqueueRecord>();
        on_call(e);
        current_stream_ = UINT64_MAX;
        on_enqueue(r, e);
        break;
      }
      case RecordType::HostFuncRun: {
        const HostFuncRunRecord& run = r.ref<HostFuncRunRecord>();
        first_call_ = false;  // not a call; its times are its own (trace_format.h, RecordInfo)
        current_start_ = run.start_ns;
        current_end_ = run.end_ns;
        current_stream_ = UINT64_MAX;
        concurrent_.host_function_run(r.tid, run.start_ns, run.end_ns);
        on_run(run);
        break;
      }
      default: other_record(r); break;
    }
  }

  // The head of a call record: the process's first call (in time order: the one that made the
  // CUDA runtime create the context, when it is a runtime API call, docs/findings.md,
  // context-init), the result, the times (a call record's times are its head's: trace_format.h,
  // RecordInfo). Visited records are never in flight (the reader keeps those apart).
  __attribute__((always_inline)) void on_call(const CallHead& h) {
    first_call_ = false;
    if (__builtin_expect(!seen_call_, 0)) {
      seen_call_ = first_call_ = true;
      first_call_api_ = h.api;
    }
    count_result(h);
    current_start_ = h.start_ns;
    current_end_ = h.end_ns;
    concurrent_.call(current_tid_, h.api, h.stack_id, h.start_ns, h.end_ns);
  }

  // The other records.
  __attribute__((always_inline)) void other_record(const RecordView& r) {
    if ((kCallTypes >> (static_cast<uint16_t>(r.type) & 63)) & 1) {  // record_info(type).call
      on_call(r.ref<CallHead>());
    } else {
      first_call_ = false;
      // (record_time / record_end_time, from the row)
      const RecordInfo& info = record_info(static_cast<uint16_t>(r.type));
      current_start_ = time_at(r, info.start_offset);
      current_end_ = time_at(r, info.end_offset);
    }
    current_stream_ = UINT64_MAX;
    switch (r.type) {
      case RecordType::GraphLaunch: {
        auto g = r.as<GraphLaunchRecord>();
        GraphLaunchInfo graph = graph_launch_info(g.exec);
        on_launch(g, stream_key(g.stream_kind, g.stream, r.tid), &graph);
        break;
      }
      case RecordType::BatchCopy: on_batch(r, r.as<BatchCopyRecord>()); break;
      case RecordType::GraphOp: on_graph_op(r.as<GraphOpRecord>()); break;
      case RecordType::Capture: on_capture(r.as<CaptureRecord>()); break;
      case RecordType::MemoryOp: on_memory_op(r.as<MemoryOpRecord>()); break;
      case RecordType::StreamCreate: streams_.created(r.as<StreamCreateRecord>()); break;
      case RecordType::StreamDestroy: streams_.destroyed(r.as<StreamCreateRecord>().stream); break;
      case RecordType::NvtxRange: on_nvtx(r.tid, r.as<NvtxRangeRecord>()); break;
      case RecordType::GpuSpan: {
        auto g = r.as<GpuSpanRecord>();
        events::StreamRef s = events::resolve_stream(g.stream_kind, g.stream, r.tid);
        overlap_.span(s.key, events::stream_name(s), g.start_ns, g.end_ns);
        if (g.op == static_cast<uint8_t>(GpuOp::Copy)) timed_copy(r.tid, g);
        break;
      }
      default: break;
    }
  }

  // NVTX ranges: push/pop nest per thread and domain (a pop with none open is ignored); start/end
  // pair by id across threads. Names are string ids, resolved in finish().
  static uint64_t range_stack_key(uint32_t domain, uint32_t tid) { return uint64_t{domain} << 32 | tid; }
  void on_nvtx(uint32_t tid, const NvtxRangeRecord& n) {
    if (n.domain > kMaxRangeDomains) return;  // not written by asyncwatch (at most 32 domains)
    const uint64_t key = range_stack_key(n.domain, tid);
    switch (static_cast<NvtxKind>(n.kind)) {
      case NvtxKind::Push: {
        if (std::find(range_domains_.begin(), range_domains_.end(), n.domain) == range_domains_.end())
          range_domains_.push_back(n.domain);
        auto& stack = range_stacks_[key];
        stack.push_back(n.name_id);  // beyond kMaxRangeDepth counted, not named (see ranges_of)
        break;
      }
      case NvtxKind::Pop: {
        auto s = range_stacks_.find(key);
        if (s != range_stacks_.end() && !s->second.empty()) s->second.pop_back();
        break;
      }
      case NvtxKind::Start:
        if (open_ranges_.size() < kMaxOpenRanges) open_ranges_[n.range_id] = n.name_id;
        break;
      case NvtxKind::End: open_ranges_.erase(n.range_id); break;
      default: break;
    }
  }

  // The distinct named ranges the current call is inside: this thread's push ranges, and every
  // start/end range open in the process.
  void add_ranges(Group& g) {
    range_scratch_.clear();
    for (uint32_t domain : range_domains_) {
      auto s = range_stacks_.find(range_stack_key(domain, current_tid_));
      if (s == range_stacks_.end()) continue;
      size_t n = std::min(s->second.size(), kMaxRangeDepth);
      for (size_t i = 0; i < n; ++i) range_scratch_.push_back(s->second[i]);
    }
    for (const auto& [id, name] : open_ranges_) range_scratch_.push_back(name);
    std::sort(range_scratch_.begin(), range_scratch_.end());
    range_scratch_.erase(std::unique(range_scratch_.begin(), range_scratch_.end()), range_scratch_.end());
    for (uint32_t name : range_scratch_) {
      if (name == 0) continue;  // unnamed ranges are not reported
      if (!g.ranges) g.ranges = std::make_unique<std::unordered_map<uint32_t, uint64_t>>();
      auto& ranges = *g.ranges;
      if (auto r = ranges.find(name); r != ranges.end())
        ++r->second;
      else if (ranges.size() < kMaxRangesPerGroup)
        ranges.emplace(name, 1);
    }
  }

  void observe(const Observation& o) override {
    // Grouped by stack during the pass (stacks and modules may still be ahead in the file);
    // stacks are mapped to call sites and groups merged per call site in finish().
    const bool counts_blocking = rule_info(o.id).hooks.counts_blocking;
    if (counts_blocking) flagged_blocking_ = true;
    // The key's two words (GroupKey's layout) built in registers.
    const uint8_t direction = o.has_direction ? static_cast<uint8_t>(o.direction) : uint8_t{0xff};
    const uint8_t memory = o.has_host_memory ? static_cast<uint8_t>(o.host_memory) : uint8_t{0xff};
    const uint64_t w[2] = {uint64_t{static_cast<uint8_t>(o.id)} | uint64_t{static_cast<uint8_t>(o.cause)} << 8 |
                               uint64_t{direction} << 16 | uint64_t{memory} << 24 | uint64_t{o.api} << 32 |
                               uint64_t{o.driver_fn} << 48,
                           uint64_t{o.kernel_name_id} | uint64_t{o.stack_id} << 32};
    GroupKey key;
    std::memcpy(&key, w, sizeof key);
    Group& g = group(key);
    if (g.count == 0) {
      g.graph_pageable_nodes = o.graph_pageable_nodes;
      g.graph_memory_nodes = o.graph_memory_nodes;
      g.graph_node = o.graph_node;
      g.concurrent = o.concurrent;
      g.serial = next_serial_++;
      g.sink.owner = g.serial;
    }
    last_sink_ = &g.sink;
    model_impact(o, g.sink);
    // The host waited in this call, on this stream (GPU overlap figures).
    if (counts_blocking && current_stream_ != UINT64_MAX)
      overlap_.flagged(o.id, current_stream_, current_start_, current_end_);
    if (marks_ && marks_->size() < kMaxCallMarks) marks_->push_back(CallMark{current_tid_, current_start_, g.serial});
    ++g.count;
    g.bytes += o.bytes;
    g.blocked.add(o.blocked_ns);
    g.evidence_checked += o.evidence_checked;
    g.completed_at_return += o.completed_at_return;
    g.drained += o.drained_before_return;
    g.outstanding_max = std::max(g.outstanding_max, o.outstanding_launches);
    if (o.pending_copy_bytes > g.pending_copy_bytes)
      g.pending_copies = o.pending_copies, g.pending_copy_bytes = o.pending_copy_bytes;
    g.at_threshold += o.at_threshold;
    g.event_waits += o.event_waits;
    g.context_creation_visible = g.context_creation_visible || o.context_creation_visible;
    g.ended_cleanly = g.ended_cleanly && o.process_ended_cleanly;
    if (!range_stacks_.empty() || !open_ranges_.empty()) add_ranges(g);
    if (g.last_tid == current_tid_ && g.last_thread != SIZE_MAX) {
      g.thread_blocked[g.last_thread].second += o.blocked_ns;
    } else {
      auto& threads = g.thread_blocked;
      auto t = std::lower_bound(threads.begin(), threads.end(), current_tid_,
                                [](const std::pair<uint32_t, uint64_t>& e, uint32_t tid) { return e.first < tid; });
      if (t != threads.end() && t->first == current_tid_)
        t->second += o.blocked_ns;
      else if (threads.size() < kMaxThreadsPerGroup)
        t = threads.insert(t, {current_tid_, o.blocked_ns});  // (only the entry just made is cached)
      else
        t = threads.end();
      if (t != threads.end()) g.last_tid = current_tid_, g.last_thread = static_cast<size_t>(t - threads.begin());
    }
    g.repeated += o.repeated;
    if (o.repeat_key) {
      if (!g.repeat_keys) g.repeat_keys = std::make_unique<std::unordered_map<uint64_t, uint32_t>>();
      auto& keys = *g.repeat_keys;
      if (auto k = keys.find(o.repeat_key); k != keys.end())
        ++g.repeated;
      else if (keys.size() < kMaxRepeatKeys)
        keys.emplace(o.repeat_key, 1);
    }
    if (!g.stack_id && o.stack_id) g.stack_id = o.stack_id;
    if (o.waited_for) {
      g.waited.add_all(*o.waited_for, &g.waited_others);  // bounded: the rest are "(other kernels)"
      g.waited_others += o.waited_for->others;
    }
  }

  // The device's figures, once the trace has said which device it is (its DeviceInfo record comes
  // before the first call).
  const impact::Figures& figures() {
    if (!figures_ready_) {
      figures_ = impact::device_figures(trace_.device().name, trace_.device().simulated);
      figures_ready_ = trace_.device().present;
    }
    return figures_;
  }
  // What a pinned asynchronous copy in direction `d` (0 host to device, 1 device to host) costs the
  // host: the mean of this trace's own so far, else the device's figure.
  uint64_t pinned_call_ns(size_t d) {
    const DurationStats& s = d == 0 ? pinned_htod_ : pinned_dtoh_;
    return s.count() ? s.total() / s.count() : figures().pinned_call_ns[d];
  }
  // How long `bytes` take at the pinned rate in direction `d`: this trace's own pinned copies' rate
  // so far (GPU times), else the device's figure; `basis` says which.
  uint64_t pinned_transfer_ns(size_t d, uint64_t bytes, uint16_t* basis) {
    if (pinned_rate_ns_[d]) {
      *basis = impact::kMeasuredRate;
      return static_cast<uint64_t>(static_cast<double>(bytes) * static_cast<double>(pinned_rate_ns_[d]) /
                                   static_cast<double>(pinned_rate_bytes_[d]));
    }
    *basis = figures().pinned_basis[d];
    return impact::transfer_ns(bytes, figures().pinned_bytes_per_ns[d]);
  }
  // A GPU span of a copy: a waiting pageable copy's (the impact model's), or a pinned copy's, whose
  // rate becomes the trace's measured pinned rate (copies of 1 MiB or more: smaller ones are latency).
  void timed_copy(uint32_t tid, const GpuSpanRecord& g) {
    tracker_.gpu_span(tid, g.host_before_ns, g.host_after_ns, g.start_ns);
    auto it = timed_pinned_.find(tid);
    if (it == timed_pinned_.end()) return;
    auto& copies = it->second;
    for (size_t i = 0; i < copies.size(); ++i) {
      const TimedPinned& c = copies[i];
      if (g.host_before_ns < c.start || g.host_before_ns > c.end) continue;
      if (g.end_ns > g.start_ns) {
        pinned_rate_bytes_[c.direction] += c.bytes;
        pinned_rate_ns_[c.direction] += g.end_ns - g.start_ns;
      }
      copies.erase(copies.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }

  // The fix's effect on the flagged call being looked at, for the impact model (impact.h;
  // docs/findings.md, "Impact"). A blocking call is followed to the wait that settles its gain;
  // synchronizations are followed in on_sync.
  void model_impact(const Observation& o, impact::Sink& sink) {
    const uint64_t stream = current_stream_;  // UINT64_MAX (impact's kAllStreams) for calls without a stream
    switch (o.id) {
      case FindingId::PageableAsyncCopy: {
        if (o.direction != Direction::HtoD && o.direction != Direction::DtoH) break;
        const size_t d = o.direction == Direction::HtoD ? 0 : 1;
        // The fixed copy returns after a pinned copy's cost and moves the bytes at the pinned rate on
        // the stream, after the work the call waited for (all of it: the stream was idle; else what
        // is left once the pageable transfer's time is taken out, at the pageable rate).
        const uint64_t cost = pinned_call_ns(d);
        uint16_t basis = 0;
        const uint64_t moved = pinned_transfer_ns(d, o.bytes, &basis);
        uint64_t done = cost + moved;
        bool measurable = false;  // a span of this copy (GPU times) says how long it waited
        if (o.cause == Cause::WaitedForStream) {
          const bool idle = !o.waited_for || (o.waited_for->total == 0 && o.event_waits == 0);
          uint64_t copy = o.blocked_ns;
          if (!idle) {
            copy = std::min(o.blocked_ns, impact::transfer_ns(o.bytes, figures().pageable_d2h_bytes_per_ns));
            basis |= figures().pageable_basis;
            measurable = gpu_times_;
          }
          done = o.blocked_ns - copy + moved;
        }
        tracker_.blocking(current_tid_, stream, impact::BlockingCall{current_start_, current_end_, cost, done}, &sink,
                          basis, measurable ? std::max<uint64_t>(moved, 1) : 0);
        return;
      }
      case FindingId::ExplicitSync:
      case FindingId::HiddenSync: return;  // on_sync
      case FindingId::BlockingLaunch:
        if (o.cause == Cause::FirstLaunch || o.cause == Cause::ContextInit) {
          sink.basis |= impact::kMoved;
          return;
        }
        if (o.cause == Cause::LaunchQueueFull) {
          sink.basis |= impact::kGpuBound;
          return;
        }
        if (o.cause == Cause::Unknown) {  // no known cause, no known fix
          sink.basis |= impact::kNotModelled;
          return;
        }
        break;
      case FindingId::LongHostCallback:
      case FindingId::InFlightCall: sink.basis |= impact::kNotModelled; return;
      case FindingId::DeprecatedStreamCallback: sink.basis |= impact::kSameWork; return;
      default: break;
    }
    // The call becomes asynchronous (or goes); the stream work it waited for stays.
    tracker_.blocking(current_tid_, stream, impact::BlockingCall{current_start_, current_end_, 0, o.blocked_ns}, &sink,
                      impact::kStreamWorkStays);
  }

  // The group of `key`, created when new. A direct-mapped cache answers the repeated ones (the
  // groups are node-based: a Group stays where it is until finish() erases it).
  Group& group(const GroupKey& key) {
    const size_t h = GroupKeyHash{}(key);
    GroupCacheEntry& e = group_cache_[h & (kGroupCache - 1)];
    if (e.group && e.key == key) return *e.group;
    auto found = groups_.find(key);
    if (found == groups_.end()) {
      if (groups_.size() >= opt_.limits.call_sites)
        over_limit("distinct findings before merging by source line (rule, cause, API, kernel, call stack)",
                   opt_.limits.call_sites, "--max-call-sites");
      found = groups_.emplace(key, Group{}).first;
    }
    e = GroupCacheEntry{key, &found->second};
    return found->second;
  }

  ProcessResult finish() {
    ProcessResult out;
    const FileHeader& h = trace_.header();
    ProcessSummary& p = out.process;
    p.pid = h.pid;
    p.ppid = h.ppid;
    p.parent_pid_if_forked = h.parent_pid_if_forked;
    if (h.rank_source >= 1 && h.rank_source <= std::size(trace::kRankVariables)) {
      p.rank = h.rank;
      p.rank_source = trace::kRankVariables[h.rank_source - 1];
    }
    p.executable = fixed_string(h.executable, sizeof h.executable);
    p.command_line = fixed_string(h.command_line, sizeof h.command_line);
    p.hostname = fixed_string(h.hostname, sizeof h.hostname);
    p.cuda_env = fixed_string(h.cuda_env, sizeof h.cuda_env);
    p.trace = trace_.path();
    p.closed_cleanly = trace_.closed_cleanly();
    p.exit_status = h.exit_status;
    p.start_monotonic_ns = h.start_monotonic_ns;
    p.start_realtime_ns = h.start_realtime_ns;
    uint64_t end = p.closed_cleanly ? h.end_monotonic_ns : trace_.last_time_ns();
    tracker_.finish(end);
    p.wall_ns = end > h.start_monotonic_ns ? end - h.start_monotonic_ns : 0;
    p.device = trace_.device().present ? trace_.device().name : "";
    p.simulated = trace_.device().simulated;
    p.records = trace_.record_count();
    p.records_lost = std::max(h.records_lost, trace_.lost_in_records());
    p.blocked_ns_total = blocked_total_;
    p.async_calls = async_calls_;
    p.async_calls_blocking = async_blocking_;
    p.async_calls_async = async_calls_ - async_blocking_;
    p.cuda_calls = cuda_calls_;
    p.cuda_calls_ok = cuda_calls_ok_;
    p.cuda_calls_no_device = cuda_calls_no_device_;
    p.no_device_result = no_device_result_;
    if (p.no_usable_device())
      p.notes.push_back(
          fmt::format("no CUDA call succeeded: {} of {} failed with error {} (no usable CUDA driver or "
                      "device); on a machine without a GPU use `asyncwatch run --sim`",
                      p.cuda_calls_no_device, p.cuda_calls, p.no_device_result));
    if (!p.closed_cleanly)
      p.notes.push_back(
          "the process did not exit cleanly (killed or crashed); records up to the last returned call "
          "are included");
    for (const auto& l : trace_.lost_reports()) {
      auto since_start = [&](uint64_t t) { return t > h.start_monotonic_ns ? t - h.start_monotonic_ns : 0; };
      auto reason = static_cast<uint32_t>(l.reason);
      p.lost.push_back({l.tid, l.count, since_start(l.first_ns), since_start(l.last_ns),
                        reason < trace::kLostReasonCount ? trace::kLostReasonNames[reason] : "unknown"});
    }
    if (p.records_lost) {
      std::string where;
      constexpr size_t kShown = 4;  // the note stays one line; JSON's "lost" has every stretch
      for (size_t i = 0; i < p.lost.size() && i < kShown; ++i) {
        const auto& l = p.lost[i];
        where += fmt::format("{}thread {}: {} from {} to {} ({})", i ? "; " : ": ", l.tid, l.count,
                             format_duration(l.first_ns), format_duration(l.last_ns), lost_reason_text(l.reason));
      }
      if (p.lost.size() > kShown) where += fmt::format("; {} more stretches", p.lost.size() - kShown);
      p.notes.push_back(fmt::format("{} records were lost{}; findings may be incomplete", p.records_lost, where));
    }
    p.pauses = h.pause_count;
    p.paused_ns = h.paused_ns;
    if (h.paused_since_ns && end > h.paused_since_ns) p.paused_ns += end - h.paused_since_ns;  // ended paused
    p.paused_ns = std::min(p.paused_ns, p.wall_ns);
    if (h.capture_mode != 0)
      p.notes.push_back(capture_note(h, end, p));
    else if (p.pauses)
      p.notes.push_back(
          fmt::format("recording was paused {} time{} for {} in all (asyncwatch_set_recording): calls "
                      "made while paused are not in this trace, and shares of wall time count the "
                      "recorded time only",
                      p.pauses, p.pauses == 1 ? "" : "s", format_duration(p.paused_ns)));
    p.gpu_times = (h.config_flags & kConfigGpuTimes) != 0;
    p.gpu_overlap = overlap_.figures();
    if (overlap_.partial())
      p.notes.push_back(fmt::format("the GPU overlap figures count the first {} GPU intervals and flagged calls only",
                                    GpuOverlap::kMaxIntervals));
    if (trace_.truncated_while_reading())
      p.notes.push_back(fmt::format(
          "the trace was truncated while being read (it had {} bytes when opened): the records up to that point "
          "are included",
          trace_.file_size()));
    if (p.parent_pid_if_forked) p.notes.push_back(fmt::format("forked from pid {}", p.parent_pid_if_forked));
    if (trace_.in_flight_records() > trace_.in_flight_calls().size())
      p.notes.push_back(fmt::format("{} calls were in flight when the process ended; the first {} are reported",
                                    trace_.in_flight_records(), trace_.in_flight_calls().size()));
    if (seen_call_ && is_driver_api(static_cast<Api>(first_call_api_)))
      p.notes.push_back(fmt::format(
          "the first CUDA call in the trace is {}, a driver entry point: the CUDA context was created before it, by "
          "calls asyncwatch does not record (inside the static CUDA runtime, or cuInit/cuCtxCreate), so the "
          "creation's time is in no finding",
          api_name(static_cast<Api>(first_call_api_))));
    in_flight_calls(end, p.closed_cleanly);
    const char* no_symbols = std::getenv("ASYNCWATCH_NO_SYMBOLS");
    // The report's budget; a trace analyzed alone has one of its own.
    std::shared_ptr<DebugInfoBudget> budget =
        opt_.debug_budget
            ? opt_.debug_budget
            : make_debug_info_budget(opt_.limits.debug_info_module_bytes, opt_.limits.debug_info_total_bytes);
    symbols_ = std::make_unique<Symbolizer>(trace_.modules(), !(no_symbols && *no_symbols && *no_symbols != '0'),
                                            opt_.path_map, budget.get());
    python_ = std::make_unique<PythonSymbols>(trace_, policy_.executable);

    // Each group becomes a finding (merged by call site, as stacks that differ only outside the
    // user's code give one site) and is freed as it goes: groups and findings are never both whole.
    FindingSet findings;
    findings.reserve(groups_.size());  // at most one finding per group; pages never filled are never touched
    // CallMark and the impact model's causes: group -> merged finding.
    bool causes = false;
    // The causes' owners, read now: the loop below frees the groups (and their sinks) as it goes.
    for (auto& [key, g] : groups_)
      if (g.sink.cause) {
        causes = true;
        g.cause_serial = g.sink.cause->owner;
      }
    std::vector<std::string> key_of_serial(marks_ || causes ? next_serial_ : 0);
    std::vector<std::pair<std::string, uint32_t>> caused;  // a finding's key, its cause's serial
    for (auto& e : group_cache_) e = GroupCacheEntry{};
    for (auto it = groups_.begin(); it != groups_.end(); it = groups_.erase(it)) {
      const GroupKey& key = it->first;
      Group& g = it->second;
      SiteRef site = site_of(key.site, key.kernel);
      Finding f;
      f.id = static_cast<FindingId>(key.id);
      const Rule& rule = rule_info(f.id).hooks;
      f.cause = static_cast<Cause>(key.cause);
      bool driver_name = is_driver_api(static_cast<Api>(key.api));
      std::string raw_api = api_name(static_cast<Api>(key.api));
      f.api = public_api_name(driver_name && site.api_override ? names_[site.api_override] : raw_api);
      // kernel<<<...>>>: the stack went through nvcc's stub, or the runtime's internal entry
      // point that only the stubs call was hooked.
      f.chevron_launch = rule.names_kernel && (site.chevron_launch || raw_api.rfind("__cudaLaunchKernel", 0) == 0);
      f.driver_api = key.driver_fn ? api_name(static_cast<Api>(key.driver_fn)) : "";
      f.has_direction = key.direction >= 0;
      f.direction = f.has_direction ? static_cast<Direction>(key.direction) : Direction::Unknown;
      f.has_host_memory = key.memory >= 0;
      f.host_memory = f.has_host_memory ? static_cast<MemoryKind>(key.memory) : MemoryKind::Unknown;
      if (rule.names_kernel) f.kernel = kernel_name(key.kernel);
      f.count = g.count;
      f.bytes = g.bytes;
      f.blocked = std::move(g.blocked);
      f.evidence_checked = g.evidence_checked;
      f.completed_at_return = g.completed_at_return;
      f.drained_before_return = g.drained;
      f.outstanding_launches_max = g.outstanding_max;
      f.pending_copies = g.pending_copies;
      f.pending_copy_bytes = g.pending_copy_bytes;
      if (g.graph_pageable_nodes) {
        const GraphMemcpyNode& n = g.graph_node;
        f.graph_pageable_nodes = g.graph_pageable_nodes;
        auto node = std::make_shared<GraphMemcpyNodeInfo>();
        node->api = public_api_name(api_name(static_cast<Api>(n.api)));
        node->direction = n.direction;
        node->bytes = n.bytes;
        node->captured = n.captured;
        SiteRef origin = site_of(n.stack_id);
        if (origin.site) {
          node->site_known = true;
          node->site = sites_[origin.site].frame;
        }
        f.graph_node_info = std::move(node);
      }
      f.graph_memory_nodes = g.graph_memory_nodes;
      if (g.concurrent.duration_ns) {
        auto c = std::make_shared<ConcurrentCallInfo>();
        const ConcurrentCall& k = g.concurrent;
        if (!k.host_function) c->api = public_api_name(api_name(static_cast<Api>(k.api)));
        c->tid = k.tid;
        c->duration_ns = k.duration_ns;
        c->overlap_ns = k.overlap_ns;
        SiteRef origin = site_of(k.stack_id);
        if (origin.site) {
          c->site_known = true;
          c->site = sites_[origin.site].frame;
        }
        f.concurrent = std::move(c);
      }
      f.at_threshold = g.at_threshold;
      f.below_threshold = rule.ranked_by_threshold && g.at_threshold == 0;
      f.event_waits = g.event_waits;
      f.context_creation_visible = g.context_creation_visible;
      f.process_ended_cleanly = g.ended_cleanly;
      f.repeated_calls = g.repeated;
      f.thread_blocked.reserve(g.thread_blocked.size());
      for (const auto& [tid, ns] : g.thread_blocked) f.add_thread_blocked((p.pid << 32) | tid, ns);
      f.impact_ns = g.sink.impact_ns;
      f.impact_basis = impact::basis_text(g.sink.basis | (p.simulated ? impact::kSimulated : 0));
      g.waited.each([&](uint32_t k, uint64_t n) { f.waited_for[kernel_name(k)] += n; });
      if (g.waited_others) f.waited_for["(other kernels)"] += g.waited_others;
      if (g.ranges)
        for (const auto& [k, n] : *g.ranges) f.ranges[range_name(k)] += n;
      f.module_loading = module_loading_;
      if (site.site) {
        f.call_site_known = true;
        f.call_site = sites_[site.site].frame;
        f.via = sites_[site.site].via;
        f.call_site_is_user_code = sites_[site.site].user;
        f.python_lender = sites_[site.site].python_lender;
        if (const char* phase = sites_[site.site].framework_phase) {
          // The framework's one-time work, kept apart from the same line's steady state: a note.
          f.framework_phase = phase;
          f.below_threshold = true;
        }
      }
      if (g.stack_id)
        if (const auto* stack = stack_of(g.stack_id)) f.stack = *stack;
      // A synchronization reached from inside a library is hidden-sync (its call site says so); an
      // explicit one does not say what it waited for (the code that wrote it knows).
      if (f.id == FindingId::ExplicitSync) {
        if (rules::is_hidden_sync(f, policy_, driver_name)) {
          f.id = FindingId::HiddenSync;
          // Reported whatever one wait cost; a site whose waits total less than --min-blocked-us is a note.
          f.below_threshold = !f.framework_phase.empty() || f.blocked.total() < opt_.min_blocked_ns;
        } else {
          f.waited_for.clear();
        }
      }
      f.processes.push_back(PerProcess{p.pid, f.count, f.blocked.total(), p.rank});
      f.set_key();
      if (!key_of_serial.empty()) key_of_serial[g.serial] = f.key;
      if (g.cause_serial != UINT32_MAX) caused.emplace_back(f.key, g.cause_serial);
      findings.add(std::move(f));
    }
    out.findings = findings.take();
    if (!caused.empty()) {
      std::unordered_map<std::string, size_t> at;
      for (size_t i = 0; i < out.findings.size(); ++i) at.emplace(out.findings[i].key, i);
      for (const auto& [key, cause] : caused) {
        Finding& f = out.findings[at.at(key)];
        if (f.caused_by.empty() && key_of_serial[cause] != key) f.caused_by = key_of_serial[cause];
      }
    }
    if (marks_) {
      std::unordered_map<std::string, uint32_t> index;
      for (size_t i = 0; i < out.findings.size(); ++i) index.emplace(out.findings[i].key, static_cast<uint32_t>(i));
      for (auto& m : *marks_) m.finding = index.at(key_of_serial[m.finding]);
    }
    for (const auto& problem : symbols_->problems()) p.notes.push_back(problem);
    return out;
  }

 private:
  __attribute__((always_inline)) static uint64_t stream_key(uint8_t kind, uint64_t handle, uint32_t tid) {
    return events::stream_key(kind, handle, tid);
  }

  // An event synchronize that returned faster than this did not wait (a completed event's answer).
  static constexpr uint64_t kEventWaitedNs = 20'000;
  // The impact model's stream of a wait: the legacy default stream waits for the others.
  static uint64_t wait_key(uint64_t key) { return key == 0 ? impact::Tracker::kAllStreams : key; }
  // A copy that waits for its stream before returning (streams.h, copy_returned, and host to host).
  static bool copy_waits(const CopyRecord& c, bool sync_api) {
    const Direction d = copy_direction(c);
    return sync_api || d == Direction::HtoH || (c.flags & kFlagSourceStreamOrder) ||
           (d == Direction::DtoH && c.dst_memory == static_cast<uint8_t>(MemoryKind::Pageable));
  }
  static bool waiting_sync(const SyncRecord& s) {
    for (uint16_t a : {s.api, s.driver_fn}) switch (static_cast<Api>(a)) {
        case Api::cudaStreamSynchronize:
        case Api::cudaEventSynchronize:
        case Api::cudaDeviceSynchronize:
        case Api::cuStreamSynchronize:
        case Api::cuEventSynchronize:
        case Api::cuCtxSynchronize: return s.result == 0;
        default: break;
      }
    return false;
  }
  static bool frees_memory(Api api) {
    return api == Api::cudaFree || api == Api::cuMemFree_v2 || api == Api::cudaFreeHost || api == Api::cuMemFreeHost;
  }

  // A call's result. Every visited call has returned (the reader keeps calls still in flight
  // apart: in_flight_calls), so no in-flight test here.
  __attribute__((always_inline)) void count_result(const CallHead& h) {
    const int32_t result = h.result;
    ++cuda_calls_;
    if (result == 0) {
      ++cuda_calls_ok_;
    } else if (no_usable_device_error(result)) {
      if (!cuda_calls_no_device_++) no_device_result_ = result;
    }
  }

  // An asynchronous call; `flagged`: a blocking rule reported it (it blocked above the thresholds
  // for a reason the report names). A call that blocked without matching a rule (a pinned copy
  // behind a busy queue, a small inline copy) is not counted as blocking.
  void count_async(bool flagged, uint64_t blocked) {
    ++async_calls_;
    if (flagged) {
      ++async_blocking_;
      blocked_total_ = saturating_add(blocked_total_, blocked);
    }
  }

  // `key`: the copy's stream (stream_key). Inline: a copy between pinned and device memory, the
  // common one, calls no rule.
  __attribute__((always_inline)) void on_copy(const RecordView& r, const CopyRecord& c, uint64_t key) {
    const bool sync_api = (c.flags & kFlagSynchronousApi) != 0;
    const uint64_t blocked = c.end_ns - c.start_ns;
    if (c.flags & kFlagCaptureActive) {
      if (!sync_api) count_async(false, 0);
      if (r.type != RecordType::Memset) captured_copy(c);
      return;
    }
    StreamState& st = streams_.at(key);
    tracker_.enqueue(current_tid_, key, c.start_ns);
    if (!tracker_.empty() && copy_waits(c, sync_api)) tracker_.wait(current_tid_, wait_key(key), c.start_ns, c.end_ns);
    RuleEvent& e = copy_event_;  // its other fields stay null
    e.copy = &c;
    e.stream = &st;
    if (r.type != RecordType::Memset) {  // Copy, BatchCopy
      if (!sync_api) {
        note_pinned_cost(c, blocked);
        flagged_blocking_ = false;
        detect(Trigger::Copy, e, UINT64_MAX, copy_class(c));
        count_async(flagged_blocking_, blocked);
      }
      streams_.copy_returned(key, st, c);
    } else {
      flagged_blocking_ = false;
      detect(Trigger::Memset, e, blocked, copy_class(c));
      if (!sync_api) count_async(flagged_blocking_, blocked);
    }
  }

  // `key`: the launch's stream; `graph`: what the trace shows of a graph launch's graph.
  __attribute__((always_inline)) void on_launch(const LaunchRecord& l, uint64_t key,
                                                const GraphLaunchInfo* graph = nullptr) {
    const uint64_t blocked = l.end_ns - l.start_ns;
    if (l.flags & kFlagCaptureActive) {
      count_async(false, 0);
      if (l.kernel_name_id) {
        auto& k = capture_kernel_[l.stream];
        if (!k) k = l.kernel_name_id;
      }
      return;
    }
    StreamState& st = streams_.at(key);
    tracker_.enqueue(current_tid_, key, l.start_ns);
    flagged_blocking_ = false;
    if (!skips_detect(Trigger::Launch, blocked)) {
      RuleEvent& e = launch_event_;  // its other fields stay null
      e.launch = &l;
      e.stream = &st;
      e.graph = graph;
      e.first_call = first_call_;
      e.pending = nullptr;
      if ((l.flags & kFlagFirstLaunch) && blocked >= opt_.min_blocked_ns) {  // rare: a first launch that blocked
        streams_.pending(pending_);
        e.pending = &pending_;
      }
      e.concurrent = blocked >= opt_.min_blocked_ns ? concurrent_with(l) : nullptr;
      detect_rules(Trigger::Launch, e, blocked);
    }
    count_async(flagged_blocking_, blocked);
    streams_.launch_returned(key, st, l, launch_blocking_);
  }

  // Another thread's call (or a host function's run) that covered at least half of the launch's wait.
  const ConcurrentCall* concurrent_with(const LaunchRecord& l) {
    uint64_t overlap = 0;
    const events::ThreadCall* t = concurrent_.covering(current_tid_, l.start_ns, l.end_ns, 0.5, &overlap);
    if (!t) return nullptr;
    concurrent_call_ = ConcurrentCall{t->api, t->host_function, t->tid, t->stack_id, t->end_ns - t->start_ns, overlap};
    return &concurrent_call_;
  }

  void on_enqueue(const RecordView& r, const HostFuncEnqueueRecord& e) {
    if (e.flags & kFlagCaptureActive) {
      count_async(false, 0);
      return;
    }
    // No rule flags the enqueue itself for blocking (long-host-callback is about how long the
    // function ran on the driver's thread, deprecated-stream-callback about the API).
    count_async(false, 0);
    tracker_.enqueue(r.tid, stream_key(e.stream_kind, e.stream, r.tid), e.start_ns);
    RuleEvent& ev = enqueue_event_;  // its other fields stay null
    ev.enqueue = &e;
    detect(Trigger::HostFuncEnqueue, ev);
    HostFuncRunRecord run{};
    joined(host_functions_.enqueue(e.callback_id, e, &run), e, run);
  }

  void on_run(const HostFuncRunRecord& run) {
    HostFuncEnqueueRecord e{};
    joined(host_functions_.run(run, &e), e, run);
  }

  void joined(HostFunctions::Outcome outcome, const HostFuncEnqueueRecord& enqueue, const HostFuncRunRecord& run) {
    if (outcome == HostFunctions::Outcome::OverLimit)
      over_limit("host functions enqueued and not seen running (or the reverse)", opt_.limits.pending_callbacks,
                 nullptr);
    if (outcome != HostFunctions::Outcome::Joined) return;
    RuleEvent& e = run_event_;  // its other fields stay null
    e.enqueue = &enqueue;
    e.run = &run;
    detect(Trigger::HostFuncRun, e);
  }

  void on_sync(const RecordView& r, const SyncRecord& s) {
    if (s.flags & kFlagCaptureActive) return;
    RuleEvent& e = sync_event_;  // its other fields stay null
    e.sync = &s;
    const Api api = static_cast<Api>(s.api);
    const bool stream_sync = api == Api::cudaStreamSynchronize || api == Api::cuStreamSynchronize;
    const uint64_t key = stream_sync ? stream_key(s.stream_kind, s.handle, r.tid) : 0;
    StreamState* st = stream_sync ? &streams_.at(key) : nullptr;  // what it waits for
    e.stream = st;
    last_sink_ = nullptr;
    detect(Trigger::Sync, e);
    // Settles the flagged calls it waited for; a flagged one is followed itself. An event's stream and
    // record are not in the trace: an event synchronize that did not wait may be for earlier work
    // (double buffering), so only one that waited settles the thread's calls.
    if (waiting_sync(s)) {
      const bool event = api == Api::cudaEventSynchronize || api == Api::cuEventSynchronize ||
                         static_cast<Api>(s.driver_fn) == Api::cuEventSynchronize;
      if (!event || s.end_ns - s.start_ns >= kEventWaitedNs)
        tracker_.wait(r.tid, stream_sync ? wait_key(key) : impact::Tracker::kAllStreams, s.start_ns, s.end_ns,
                      last_sink_);
      else if (last_sink_)  // followed as a synchronization only
        tracker_.wait(r.tid, impact::Tracker::kNoStream, s.start_ns, s.end_ns, last_sink_);
    }
    if (st && s.result == 0)
      streams_.idle(key, *st);  // sync_returned's answer for a stream synchronize, the state at hand
    else
      streams_.sync_returned(s, r.tid);
  }

  void on_memory_op(const MemoryOpRecord& m) {
    if (m.flags & kFlagCaptureActive) return captured_memory_op(m);
    if (m.result == 0 && frees_memory(static_cast<Api>(m.api)))  // synchronizes the device (streams.h)
      tracker_.wait(current_tid_, impact::Tracker::kAllStreams, m.start_ns, m.end_ns);
    RuleEvent e;
    e.memory_op = &m;
    e.made_again = allocations_.returned(m);
    detect(Trigger::MemoryOp, e);
    streams_.memory_op_returned(m);
  }

  // ---- batch copies and graphs ----
  // A batch is judged by the copy rules through the elements that can make it wait (trace_format.h,
  // BatchCopyRecord): pageable sources read in stream order (the call waits for the stream: on the
  // H200 and by the simulator's rules), or other pageable sources (staged). A pageable destination
  // alone does not make a batch wait (measured on the H200, docs/findings.md): not flagged.
  void on_batch(const RecordView& r, const BatchCopyRecord& b) {
    CopyRecord c = b;
    if (b.stream_order_pageable_sources) {
      c.bytes = b.stream_order_pageable_bytes;
    } else if (b.pageable_elements && b.src_memory == static_cast<uint8_t>(MemoryKind::Pageable)) {
      c.bytes = b.pageable_bytes;
    } else {
      c.direction = static_cast<uint8_t>(Direction::Unknown);
      c.src_memory = c.dst_memory = static_cast<uint8_t>(MemoryKind::Unknown);
    }
    on_copy(r, c, stream_key(c.stream_kind, c.stream, r.tid));
  }

  // Bounded tables: beyond kMaxGraphs graphs (or executable graphs) the rest are not followed, and
  // beyond kMaxGraphNodes pageable nodes a graph only counts them.
  static constexpr size_t kMaxGraphs = 65536;
  static constexpr size_t kMaxGraphNodes = 64;
  struct GraphNodes {
    std::vector<GraphMemcpyNode> nodes;  // pageable ones
    uint64_t more = 0;                   // pageable nodes beyond kMaxGraphNodes
    uint32_t kernel = 0;                 // first kernel captured into it
    uint64_t memory_nodes = 0;           // memory-allocation nodes (cudaMallocAsync captured)
    uint64_t launches = 0;               // an executable graph: launches since instantiated
  };
  static void add_node(GraphNodes& g, const GraphMemcpyNode& n) {
    for (auto& o : g.nodes)
      if (n.node && o.node == n.node) {
        o = n;  // new parameters of the same node
        return;
      }
    if (g.nodes.size() < kMaxGraphNodes)
      g.nodes.push_back(n);
    else
      ++g.more;
  }
  static void drop_node(GraphNodes& g, uint64_t node) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (node && g.nodes[i].node == node) {
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  }
  template <class Map>
  static GraphNodes* slot(Map& m, uint64_t handle) {
    if (!handle) return nullptr;
    auto it = m.find(handle);
    if (it != m.end()) return &it->second;
    if (m.size() >= kMaxGraphs) return nullptr;
    return &m[handle];
  }

  void captured_copy(const CopyRecord& c) {
    Direction d = copy_direction(c);
    MemoryKind host = trace::host_side(d, static_cast<MemoryKind>(c.src_memory), static_cast<MemoryKind>(c.dst_memory));
    if (host != MemoryKind::Pageable) return;
    if (GraphNodes* g = slot(capturing_, c.stream))
      add_node(*g, GraphMemcpyNode{0, c.api, d, host, c.bytes, c.stack_id, true});
  }

  void on_capture(const CaptureRecord& c) {
    if (c.api == static_cast<uint16_t>(Api::cuStreamBeginCapture_v2) ||
        c.api == static_cast<uint16_t>(Api::cudaStreamBeginCapture)) {
      capturing_.erase(c.stream);
      capture_kernel_.erase(c.stream);
      if (c.result == 0) capture_of_thread_[current_tid_] = c.stream;
    }
  }

  // A stream-ordered allocation made while its thread captured (MemoryOp records have no stream:
  // the stream the thread began capturing on): a memory-allocation node of that graph.
  void captured_memory_op(const MemoryOpRecord& m) {
    const auto api = static_cast<Api>(m.api), driver = static_cast<Api>(m.driver_fn);
    const bool alloc = api == Api::cudaMallocAsync || api == Api::cuMemAllocAsync || driver == Api::cuMemAllocAsync;
    if (!alloc) return;
    auto t = capture_of_thread_.find(current_tid_);
    if (t == capture_of_thread_.end()) return;
    if (GraphNodes* g = slot(capturing_, t->second)) ++g->memory_nodes;
  }

  void on_graph_op(const GraphOpRecord& g) {
    if (g.result != 0) return;
    switch (static_cast<Api>(g.driver_fn)) {
      case Api::cuStreamEndCapture: {
        GraphNodes captured;
        if (auto it = capturing_.find(g.stream); it != capturing_.end())
          captured = std::move(it->second), capturing_.erase(it);
        if (auto it = capture_kernel_.find(g.stream); it != capture_kernel_.end())
          captured.kernel = it->second, capture_kernel_.erase(it);
        if (GraphNodes* s = slot(graphs_, g.graph)) *s = std::move(captured);
        break;
      }
      case Api::cuGraphAddMemcpyNode:
      case Api::cuGraphExecMemcpyNodeSetParams: {
        bool exec = static_cast<Api>(g.driver_fn) == Api::cuGraphExecMemcpyNodeSetParams;
        GraphNodes* s = exec ? slot(execs_, g.exec) : slot(graphs_, g.graph);
        if (!s) break;
        Direction d = static_cast<Direction>(g.direction);
        MemoryKind host =
            trace::host_side(d, static_cast<MemoryKind>(g.src_memory), static_cast<MemoryKind>(g.dst_memory));
        if (host == MemoryKind::Pageable)
          add_node(*s, GraphMemcpyNode{g.node, g.api, d, host, g.bytes, g.stack_id, false});
        else
          drop_node(*s, g.node);  // set to pinned or device memory: no longer a pageable node
        break;
      }
      case Api::cuGraphClone:  // the clone has the original's nodes (copies, under new node handles)
        if (graphs_.count(g.graph))
          if (GraphNodes* s = slot(graphs_, g.clone)) *s = GraphNodes(graphs_.at(g.graph));
        break;
      case Api::cuGraphInstantiateWithFlags:
      case Api::cuGraphInstantiateWithParams:
      case Api::cuGraphExecUpdate_v2:
        if (GraphNodes* s = slot(execs_, g.exec)) {
          auto it = graphs_.find(g.graph);
          // An update gives the executable graph new parameters; it was uploaded before (launches kept).
          const uint64_t launches = static_cast<Api>(g.driver_fn) == Api::cuGraphExecUpdate_v2 ? s->launches : 0;
          *s = it != graphs_.end() ? it->second : GraphNodes{};
          s->launches = launches;
        }
        break;
      default: break;
    }
  }

  // What the trace shows of the graph a launch runs; counts the launch (GraphLaunchInfo::first_launch).
  GraphLaunchInfo graph_launch_info(uint64_t exec) {
    GraphLaunchInfo info;
    auto it = execs_.find(exec);
    if (it == execs_.end()) return info;
    info.known = true;
    info.first_launch = it->second.launches++ == 0;
    info.memory_nodes = it->second.memory_nodes;
    info.kernel_name_id = it->second.kernel;
    info.pageable_nodes = it->second.nodes.size() + it->second.more;
    if (!it->second.nodes.empty()) info.first_pageable = it->second.nodes.front();
    return info;
  }

  // This trace's asynchronous copies between pinned host and device memory: what a copy costs the
  // host when pinned, by direction (the basis of estimated_saving_ns).
  __attribute__((always_inline)) void note_pinned_cost(const CopyRecord& c, uint64_t blocked) {
    const auto pinned = static_cast<uint8_t>(MemoryKind::Pinned), device = static_cast<uint8_t>(MemoryKind::Device);
    Direction d = copy_direction(c);
    const bool htod = d == Direction::HtoD && c.src_memory == pinned && c.dst_memory == device;
    const bool dtoh = d == Direction::DtoH && c.src_memory == device && c.dst_memory == pinned;
    if (htod) pinned_htod_.add(blocked);
    if (dtoh) pinned_dtoh_.add(blocked);
    if ((htod || dtoh) && (c.flags & kFlagGpuTimed) && c.bytes >= (1u << 20)) {  // its span: the pinned rate
      auto& copies = timed_pinned_[current_tid_];
      if (copies.size() >= kMaxTimedPinned) copies.erase(copies.begin());
      copies.push_back(TimedPinned{c.start_ns, c.end_ns, c.bytes, static_cast<uint8_t>(htod ? 0 : 1)});
    }
  }

  // The calls in flight when the trace ended, each to the rules as of the trace's end.
  void in_flight_calls(uint64_t trace_end, bool cleanly) {
    for (const InFlightCall& call : trace_.in_flight_calls()) {
      current_tid_ = call.tid;
      RuleEvent e;
      e.in_flight = &call.head;
      e.trace_end_ns = trace_end;
      e.ended_cleanly = cleanly;
      detect(Trigger::InFlight, e);
    }
  }

  // The rules of the trigger in their order, until one claims the call.
  // `blocked`: the call's blocked time, for the rules that see only calls at the threshold
  // (Rule::at_threshold_only; UINT64_MAX: every rule sees it).
  // Inline: a call below the threshold whose trigger has only threshold_first rules (most
  // launches) returns here.
  // `copy`: the copy_class of a copy or memset (Rule::copies), kAnyCopy for the other triggers.
  __attribute__((always_inline)) void detect(Trigger t, const RuleEvent& e, uint64_t blocked = UINT64_MAX,
                                             uint32_t copy = kAnyCopy) {
    if (!skips_detect(t, blocked) && (copy & copy_classes_[static_cast<size_t>(t)])) detect_rules(t, e, blocked, copy);
  }
  bool skips_detect(Trigger t, uint64_t blocked) const { return blocked < skip_below_[static_cast<size_t>(t)]; }
  void detect_rules(Trigger t, const RuleEvent& e, uint64_t blocked, uint32_t copy = kAnyCopy) {
    for (const RuleInfo* r : *rules_[static_cast<size_t>(t)]) {
      if (r->hooks.at_threshold_only && blocked < opt_.min_blocked_ns) continue;
      if (!(r->hooks.copies & copy)) continue;  // it cannot claim this copy
      if (r->hooks.detect(*this, e)) return;
    }
  }
  [[noreturn]] void over_limit(const char* what, uint64_t limit, const char* option) const {
    throw TraceError(fmt::format("{}: {}", trace_.path(), limit_message(what, limit, option)));
  }

  uint32_t intern_name(const std::string& name) {
    auto [it, inserted] = name_ids_.emplace(name, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  }
  // The call site of a stack; for a launch (`kernel_id` != 0) nvcc's host wrapper of that
  // kernel is skipped too.
  SiteRef site_of(uint32_t stack_id, uint32_t kernel_id = 0) {
    if (!stack_id) return {};
    const bool plain = kernel_id == 0 || kernel_id == kGraphKernel;
    if (plain && stack_id < dense_sites_.size() && dense_sites_[stack_id].resolved) return dense_sites_[stack_id].ref;
    const uint64_t cache_key = plain ? stack_id : (uint64_t{kernel_id} << 32) | stack_id;
    auto it = stack_sites_.find(cache_key);
    if (it != stack_sites_.end()) return it->second;
    SiteRef ref;
    if (const Stack* stack = stack_of(stack_id)) {
      const std::vector<Frame>& frames = stack->frames();  // inline frames expanded, Python frames in place
      std::string kernel_function;
      if (!plain)
        if (auto mangled = trace_.string(kernel_id)) kernel_function = demangle(mangled->c_str());
      CallSite cs = select_call_site(frames, kernel_function, policy_);
      ref.chevron_launch = cs.chevron_launch;
      if (cs.index >= 0) {
        Site site;
        site.frame = frames[static_cast<size_t>(cs.index)];
        if (cs.via >= 0) {
          // The library function the user's call instruction called, read from the module's
          // file: it may have tail-called onwards, leaving no frame of its own.
          const Frame& lib = frames[static_cast<size_t>(cs.via)];
          site.via =
              cs.user && site.frame.origin == FrameOrigin::Native && lib.address != site.frame.address
                  ? via_function(site.frame, lib, symbols_->called_function(site.frame.address, lib.module), policy_)
                  : lib;
        }
        site.user = cs.user;
        // A Python line read from another thread (the call ran on a thread without Python): kept
        // apart from the same line's own calls, and from other lenders' (the report names it).
        if (site.frame.origin == FrameOrigin::Python) site.python_lender = trace_.python_lender(stack_id);
        // Its neighbour in the stack is the outermost frame of the native thread (start_thread,
        // clone3), not a function the line called.
        if (site.python_lender) site.via = Frame{};
        site.framework_phase = framework_phase(frames);
        std::string key = call_site_key(site.frame, site.via);
        if (site.python_lender) key += fmt::format("\037borrowed {:x}", site.python_lender);
        if (site.framework_phase) key += std::string("\037phase ") + site.framework_phase;
        auto [sit, inserted] = site_ids_.emplace(key, static_cast<uint32_t>(sites_.size()));
        if (inserted) sites_.push_back(std::move(site));
        ref.site = sit->second;
      }
      if (!cs.runtime_api.empty()) ref.api_override = intern_name(cs.runtime_api);
    }
    if (plain && stack_id < (1u << 20)) {
      if (stack_id >= dense_sites_.size()) dense_sites_.resize(std::max<size_t>(stack_id + 1, dense_sites_.size() * 2));
      dense_sites_[stack_id] = DenseSite{ref, true};
    } else {
      stack_sites_.emplace(cache_key, ref);
    }
    return ref;
  }

  // The frames of a stack (nullptr: the trace has no such stack), made once and shared by the
  // findings of that stack and by site_of.
  const Stack* stack_of(uint32_t stack_id) {
    auto [it, inserted] = stacks_.try_emplace(stack_id);
    if (inserted)
      if (auto frames = stack_frames(trace_, *symbols_, *python_, stack_id)) it->second = Stack(std::move(*frames));
    return it->second ? &*it->second : nullptr;
  }

  std::string range_name(uint32_t id) const {
    auto s = trace_.string(id);
    return s ? std::string(*s) : fmt::format("(range #{})", id);
  }

  // Made once per id: the findings name the same few kernels many times over (waited for), and
  // demangling was most of finish()'s time.
  const std::string& kernel_name(uint32_t id) {
    auto [it, inserted] = kernel_names_.try_emplace(id);
    if (inserted) {
      if (id == 0)
        it->second = "(unnamed kernel)";
      else if (id == kGraphKernel)
        it->second = "(CUDA graph)";
      else if (auto s = trace_.string(id))
        it->second = kernel_display_name(*s);
      else
        it->second = fmt::format("(kernel #{})", id);
    }
    return it->second;
  }

  // (domain << 32 | tid) -> open push ranges' names; the NVTX domains seen (0: the core one).
  std::unordered_map<uint64_t, std::vector<uint32_t>> range_stacks_;
  std::vector<uint32_t> range_domains_{0};
  std::unordered_map<uint64_t, uint32_t> open_ranges_;  // start/end range id -> name
  std::vector<uint32_t> range_scratch_;
  TraceFile& trace_;
  const Options& opt_;
  std::unique_ptr<Symbolizer> symbols_;    // made after the pass, when all modules are known
  std::unique_ptr<PythonSymbols> python_;  // the same, for the Python frames of stacks
  bool launch_blocking_ = false;
  std::string module_loading_;
  events::StreamTable streams_;
  HostFunctions host_functions_;
  events::Allocations allocations_;
  events::ConcurrentCalls concurrent_;  // each thread's latest call (RuleEvent::concurrent)
  ConcurrentCall concurrent_call_;
  PendingWork
      pending_;  // RuleEvent::pending of the launch being looked at  // live allocations: implicit-sync's churn (RuleEvent::made_again)
  std::unordered_map<uint64_t, GraphNodes> capturing_;        // stream handle -> pageable copies captured so far
  std::unordered_map<uint32_t, uint64_t> capture_of_thread_;  // tid -> the stream it last began capturing
  std::unordered_map<uint64_t, uint32_t> capture_kernel_;     // stream handle -> first kernel captured
  std::unordered_map<uint64_t, GraphNodes> graphs_;           // CUgraph -> its pageable memcpy nodes
  std::unordered_map<uint64_t, GraphNodes> execs_;            // CUgraphExec -> the same, as instantiated/updated
  std::unordered_map<GroupKey, Group, GroupKeyHash> groups_;
  struct GroupCacheEntry {
    GroupKey key{};
    Group* group = nullptr;
  };
  // 4096 entries (128 KiB): a few hundred groups in use at once thrashed 256 (nearly every call
  // of the benchmark's trace missed it and hashed into the map).
  static constexpr size_t kGroupCache = 4096;
  std::vector<GroupCacheEntry> group_cache_ =
      std::vector<GroupCacheEntry>(kGroupCache);  // cleared when finish() starts erasing groups
  struct DenseSite {
    SiteRef ref;
    bool resolved = false;
  };
  std::vector<DenseSite> dense_sites_;                 // by stack id (ids are small and dense)
  std::unordered_map<uint64_t, SiteRef> stack_sites_;  // ids beyond the dense range; (kernel, stack) of launches
  std::unordered_map<uint32_t, std::optional<Stack>> stacks_;  // by stack id, made in finish() (stack_of)
  std::deque<Site> sites_;  // not a vector: no doubling copy (100 k+ sites of 248 bytes)
  std::unordered_map<std::string, uint32_t> site_ids_;
  CallSitePolicy policy_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::unordered_map<uint32_t, std::string> kernel_names_;  // kernel_name's, by string id
  const std::vector<const RuleInfo*>* rules_[static_cast<size_t>(Trigger::InFlight) + 1];  // rules_for, by trigger
  // By trigger: --min-blocked-us when every rule of it is Rule::at_threshold_only (a call that
  // blocked less calls none of them), else 0 (skips_detect: one comparison).
  uint64_t skip_below_[static_cast<size_t>(Trigger::InFlight) + 1];
  uint32_t copy_classes_[static_cast<size_t>(Trigger::InFlight) + 1];  // by trigger: its rules' Rule::copies
  // Each trigger's event, built once (zeroing one per call was a good part of the dispatch); the
  // handlers set the fields of their trigger, the others stay null.
  RuleEvent launch_event_, copy_event_, enqueue_event_, run_event_, sync_event_;
  bool flagged_blocking_ = false;  // a blocking rule flagged the call being looked at
  uint32_t current_tid_ = 0;       // the thread of the record being looked at
  bool seen_call_ = false;
  bool first_call_ = false;  // the record being looked at is the process's first call
  uint16_t first_call_api_ = 0;
  DurationStats pinned_htod_, pinned_dtoh_;
  uint64_t async_calls_ = 0;
  uint64_t cuda_calls_ = 0, cuda_calls_ok_ = 0, cuda_calls_no_device_ = 0;
  int32_t no_device_result_ = 0;
  uint64_t async_blocking_ = 0;
  uint64_t blocked_total_ = 0;
  std::vector<CallMark>* marks_ = nullptr;
  uint64_t current_start_ = 0;
  uint64_t current_end_ = 0;
  uint64_t current_stream_ = UINT64_MAX;
  GpuOverlap overlap_;
  uint32_t next_serial_ = 0;
  impact::Figures figures_;
  bool figures_ready_ = false;
  bool gpu_times_ = false;  // the trace has GPU times (ASYNCWATCH_GPU_TIMES)
  impact::Tracker tracker_;
  // Pinned copies of 1 MiB or more whose GPU span is still to come, per thread (the last few), and
  // the rate of those matched so far, by direction.
  struct TimedPinned {
    uint64_t start, end, bytes;
    uint8_t direction;
  };
  static constexpr size_t kMaxTimedPinned = 16;
  std::unordered_map<uint32_t, std::vector<TimedPinned>> timed_pinned_;
  uint64_t pinned_rate_bytes_[2] = {0, 0}, pinned_rate_ns_[2] = {0, 0};
  impact::Sink* last_sink_ = nullptr;  // the group of the call last observed (on_sync: a flagged synchronization)
};

}  // namespace

ProcessResult analyze_trace(const std::string& path, const Options& options, std::vector<CallMark>* marks) {
  auto trace = TraceFile::open(path, options.limits);
  trace->index_blocks();
  ProcessAnalyzer analyzer(*trace, options, marks);
  analyzer.run();
  return analyzer.finish();
}

Report build_report(std::vector<ProcessResult> results, const Options& options) {
  Report report;
  report.options = options;
  // One process: its findings are merged already; several: merged by key, in process order.
  FindingSet set;
  std::vector<Finding> merged;
  if (results.size() == 1) merged = std::move(results[0].findings);
  std::unordered_map<uint64_t, uint64_t> recorded_wall;  // pid -> wall time less paused time
  for (auto& r : results) {
    recorded_wall[r.process.pid] = r.process.wall_ns - r.process.paused_ns;
    if (results.size() > 1) {
      for (auto& f : r.findings) set.add(std::move(f));
      std::vector<Finding>().swap(r.findings);
    }
    Summary& s = report.summary;
    s.async_calls += r.process.async_calls;
    s.async_calls_async += r.process.async_calls_async;
    s.async_calls_blocking += r.process.async_calls_blocking;
    s.blocked_ns_total = saturating_add(s.blocked_ns_total, r.process.blocked_ns_total);
    report.processes.push_back(std::move(r.process));
  }
  if (results.size() > 1) merged = set.take();
  // Group-level thresholds; kept in place (moved within the vector).
  size_t kept = 0;
  for (auto& f : merged) {
    if (auto reported = rule_info(f.id).hooks.reported; reported && !reported(f, options)) continue;
    // Shares of wall time per thread: a thread's calls never overlap, so each is at most 1.
    f.threads = f.thread_blocked.size();
    f.share_of_wall = 0;
    for (const auto& [thread, ns] : f.thread_blocked) {
      auto w = recorded_wall.find(thread >> 32);
      if (w != recorded_wall.end() && w->second)
        f.share_of_wall = std::max(f.share_of_wall, static_cast<double>(ns) / static_cast<double>(w->second));
    }
    f.share_of_wall = std::min(f.share_of_wall, 1.0);
    // The impact's share of the run: of the recorded wall time of the processes that made the calls.
    uint64_t wall = 0;
    for (const auto& p : f.processes)
      if (auto w = recorded_wall.find(p.pid); w != recorded_wall.end()) wall += w->second;
    f.impact_share = wall ? std::min(1.0, static_cast<double>(f.impact_ns) / static_cast<double>(wall)) : 0;
    std::sort(f.processes.begin(), f.processes.end(),
              [](const PerProcess& a, const PerProcess& b) { return a.pid < b.pid; });
    if (&merged[kept] != &f) merged[kept] = std::move(f);
    ++kept;
  }
  merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(kept), merged.end());
  report.findings = std::move(merged);
  rank_findings(report.findings);
  report.summary.findings = report.findings.size();
  return report;
}

Report analyze_traces(const std::vector<std::string>& paths, const Options& options,
                      std::vector<UnreadableTrace> unreadable) {
  std::vector<ProcessResult> results;
  for (const auto& p : paths) {
    try {
      results.push_back(analyze_trace(p, options));
    } catch (const TraceError& e) {
      unreadable.push_back(unreadable_trace(p, e));
    } catch (const std::bad_alloc& e) {
      unreadable.push_back(unreadable_trace(p, e));
    }
  }
  std::stable_sort(results.begin(), results.end(), [](const ProcessResult& a, const ProcessResult& b) {
    return a.process.start_realtime_ns < b.process.start_realtime_ns;
  });
  Report report = build_report(std::move(results), options);
  report.unreadable = std::move(unreadable);
  return report;
}

}  // namespace asyncwatch
