// Test-only: crafts asyncwatch traces record by record, with the layout of trace_format.h
// (header, per-thread 64 KiB blocks laid out by trace_io.h's BlockBuilder, 8-byte aligned records,
// variable payloads right after the fixed struct). Used by the unit tests and the golden-trace maker.
#pragma once

#include <asyncwatch/trace_format.h>
#include <asyncwatch/trace_io.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace asyncwatch::testing {

namespace tf = asyncwatch::trace;
// The format's enums that every trace-building test names (through `using namespace asyncwatch::testing`).
using tf::Api;
using tf::Direction;
using tf::MemoryKind;
using tf::RecordType;

class TraceBuilder {
 public:
  explicit TraceBuilder(uint64_t pid = 1000, const char* executable = "/work/app/seed") {
    std::memcpy(header_.magic, tf::kMagic, sizeof tf::kMagic);
    header_.version = tf::kFormatVersion;
    header_.header_size = tf::kHeaderSize;
    header_.block_size = tf::kBlockSize;
    header_.closed = tf::kClosedCleanly;
    header_.pid = pid;
    header_.ppid = 1;
    header_.start_monotonic_ns = 1'000'000'000;
    header_.start_realtime_ns = 1'700'000'000'000'000'000ull;
    header_.end_monotonic_ns = 0;  // set by end_at() or derived in bytes()
    header_.exit_status = 0;
    header_.config_flags = tf::kConfigEvidence | tf::kConfigStacksCopies;
    header_.launch_stack_threshold_ns = 50'000;
    copy_text(header_.hostname, sizeof header_.hostname, "testhost");
    copy_text(header_.executable, sizeof header_.executable, executable);
    std::string base = executable;
    base = base.substr(base.rfind('/') + 1);
    copy_text(header_.command_line, sizeof header_.command_line, base.c_str());
  }

  tf::FileHeader& header() { return header_; }
  void end_at(uint64_t end_ns) { header_.end_monotonic_ns = end_ns; }
  void crashed() {
    header_.closed = 0;
    header_.end_monotonic_ns = 0;
    header_.exit_status = -1;
  }
  void cuda_env(const char* env) { copy_text(header_.cuda_env, sizeof header_.cuda_env, env); }
  // Preallocated, never used blocks at the end (as a crashed writer leaves them).
  void add_zero_blocks(size_t n) { zero_tail_ += n; }

  // Appends raw bytes as one record of `type` for thread `tid` (header filled in here).
  void raw(uint32_t tid, tf::RecordType type, const void* fixed, size_t fixed_size, const void* payload = nullptr,
           size_t payload_size = 0) {
    blocks_.add(tid, type, fixed, fixed_size, payload, payload_size);
  }
  template <class T>
  void add(uint32_t tid, tf::RecordType type, const T& rec) {
    raw(tid, type, &rec, sizeof rec);
  }

  void thread_info(uint32_t tid, const char* name) {
    tf::ThreadInfoRecord r{};
    r.tid = tid;
    copy_text(r.name, sizeof r.name, name);
    add(tid, tf::RecordType::ThreadInfo, r);
  }
  void module(uint32_t tid, const std::string& path, uint64_t load_bias, uint64_t low, uint64_t high) {
    tf::ModuleRecord r{};
    r.path_len = static_cast<uint16_t>(path.size());
    r.load_bias = load_bias;
    r.low = low;
    r.high = high;
    raw(tid, tf::RecordType::Module, &r, sizeof r, path.data(), path.size());
  }
  uint32_t stack(uint32_t tid, const std::vector<uint64_t>& frames) {
    tf::StackRecord r{};
    r.stack_id = ++last_stack_;
    r.depth = static_cast<uint16_t>(frames.size());
    raw(tid, tf::RecordType::Stack, &r, sizeof r, frames.data(), frames.size() * 8);
    return r.stack_id;
  }
  // A stack with Python frames: native return addresses, then (code id, instruction) of each
  // Python frame, innermost first (the code objects are py_code's). `lender` (python_lender_encode):
  // the frames after the first `own` are borrowed from that thread.
  uint32_t python_stack(uint32_t tid, const std::vector<uint64_t>& native,
                        const std::vector<std::pair<uint32_t, int32_t>>& python, uint32_t lender = 0,
                        uint32_t own = 0) {
    tf::StackRecord r{};
    r.stack_id = ++last_stack_;
    r.depth = static_cast<uint16_t>(native.size());
    r.python_depth = static_cast<uint8_t>(python.size());
    r.python_own = static_cast<uint8_t>(own);
    tf::set_python_lender(r, lender);
    r.python_end = static_cast<uint8_t>(tf::PythonWalkEnd::Complete);
    std::vector<uint64_t> payload(native);
    for (const auto& [code, instr] : python) {
      tf::PythonFrameRef ref{code, instr};
      uint64_t word;
      std::memcpy(&word, &ref, sizeof word);
      payload.push_back(word);
    }
    raw(tid, tf::RecordType::Stack, &r, sizeof r, payload.data(), payload.size() * 8);
    return r.stack_id;
  }
  // A code object (PyCodeRecord) without a line table: its frames are at `first_line`.
  void py_code(uint32_t tid, uint32_t code_id, const std::string& file, const std::string& qualname,
               int32_t first_line) {
    tf::PyCodeRecord c{};
    c.code_id = code_id;
    c.first_line = first_line;
    c.filename_len = static_cast<uint16_t>(file.size());
    c.qualname_len = static_cast<uint16_t>(qualname.size());
    std::string payload = file + qualname;
    raw(tid, tf::RecordType::PyCode, &c, sizeof c, payload.data(), payload.size());
  }
  uint32_t string(uint32_t tid, const std::string& text) {
    tf::StringRecord r{};
    r.string_id = ++last_string_;
    r.len = static_cast<uint32_t>(text.size());
    raw(tid, tf::RecordType::String, &r, sizeof r, text.data(), text.size());
    return r.string_id;
  }
  void device(uint32_t tid, const char* name, bool simulated) {
    tf::DeviceInfoRecord r{};
    r.driver_version = 13000;
    r.simulated = simulated ? 1 : 0;
    copy_text(r.name, sizeof r.name, name);
    add(tid, tf::RecordType::DeviceInfo, r);
  }

  static tf::CopyRecord copy(tf::Api api, tf::Api driver, tf::Direction dir, tf::MemoryKind src, tf::MemoryKind dst,
                             uint64_t start, uint64_t end, uint64_t bytes, uint32_t flags = 0, uint64_t stream = 0x5000,
                             uint32_t stack_id = 0, tf::StreamKind kind = tf::StreamKind::Explicit) {
    tf::CopyRecord r{};
    r.api = static_cast<uint16_t>(api);
    r.driver_fn = static_cast<uint16_t>(driver);
    r.direction = static_cast<uint8_t>(dir);
    r.src_memory = static_cast<uint8_t>(src);
    r.dst_memory = static_cast<uint8_t>(dst);
    r.stream_kind = static_cast<uint8_t>(kind);
    r.flags = flags | (stack_id ? uint32_t{tf::kFlagStackCaptured} : 0u);
    r.stack_id = stack_id;
    r.start_ns = start;
    r.end_ns = end;
    r.stream = stream;
    r.bytes = bytes;
    return r;
  }
  static tf::LaunchRecord launch(tf::Api api, uint32_t kernel, uint64_t start, uint64_t end, uint32_t flags = 0,
                                 uint64_t stream = 0x5000, uint32_t stack_id = 0,
                                 tf::StreamKind kind = tf::StreamKind::Explicit) {
    tf::LaunchRecord r{};
    r.api = static_cast<uint16_t>(api);
    r.driver_fn = static_cast<uint16_t>(tf::Api::cuLaunchKernel);
    r.stream_kind = static_cast<uint8_t>(kind);
    r.flags = flags | (stack_id ? uint32_t{tf::kFlagStackCaptured} : 0u);
    r.stack_id = stack_id;
    r.kernel_name_id = kernel;
    r.grid[0] = r.grid[1] = r.grid[2] = 1;
    r.block[0] = r.block[1] = r.block[2] = 1;
    r.start_ns = start;
    r.end_ns = end;
    r.stream = stream;
    return r;
  }
  static tf::SyncRecord sync(tf::Api api, tf::Api driver, uint64_t start, uint64_t end, uint64_t handle = 0x5000,
                             uint32_t stack_id = 0, tf::StreamKind kind = tf::StreamKind::Explicit) {
    tf::SyncRecord r{};
    r.api = static_cast<uint16_t>(api);
    r.driver_fn = static_cast<uint16_t>(driver);
    r.stream_kind = static_cast<uint8_t>(kind);
    r.flags = stack_id ? uint32_t{tf::kFlagStackCaptured} : 0u;
    r.stack_id = stack_id;
    r.start_ns = start;
    r.end_ns = end;
    r.handle = handle;
    return r;
  }
  static tf::MemoryOpRecord memory_op(tf::Api api, tf::Api driver, uint64_t start, uint64_t end, uint64_t bytes,
                                      tf::MemoryKind kind, uint32_t stack_id = 0) {
    tf::MemoryOpRecord r{};
    r.api = static_cast<uint16_t>(api);
    r.driver_fn = static_cast<uint16_t>(driver);
    r.memory = static_cast<uint8_t>(kind);
    r.flags = stack_id ? uint32_t{tf::kFlagStackCaptured} : 0u;
    r.stack_id = stack_id;
    r.start_ns = start;
    r.end_ns = end;
    r.address = 0x7f0000000000;
    r.bytes = bytes;
    return r;
  }
  static tf::HostFuncEnqueueRecord enqueue(tf::Api api, tf::Api driver, uint64_t callback_id, uint64_t start,
                                           uint64_t end, uint64_t stream = 0x5000, uint32_t stack_id = 0) {
    tf::HostFuncEnqueueRecord r{};
    r.api = static_cast<uint16_t>(api);
    r.driver_fn = static_cast<uint16_t>(driver);
    r.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
    r.flags = stack_id ? uint32_t{tf::kFlagStackCaptured} : 0u;
    r.stack_id = stack_id;
    r.callback_id = callback_id;
    r.start_ns = start;
    r.end_ns = end;
    r.stream = stream;
    r.user_function = 0x401000;
    return r;
  }
  static tf::HostFuncRunRecord run(uint64_t callback_id, uint64_t start, uint64_t end) {
    tf::HostFuncRunRecord r{};
    r.callback_id = callback_id;
    r.start_ns = start;
    r.end_ns = end;
    return r;
  }
  static tf::StreamCreateRecord stream_create(uint64_t stream, uint32_t flags, uint64_t start, uint64_t end) {
    tf::StreamCreateRecord r{};
    r.api = static_cast<uint16_t>(tf::Api::cudaStreamCreateWithFlags);
    r.driver_fn = static_cast<uint16_t>(tf::Api::cuStreamCreate);
    r.stream_flags = flags;
    r.start_ns = start;
    r.end_ns = end;
    r.stream = stream;
    return r;
  }

  // The whole file.
  std::vector<uint8_t> bytes() const {
    tf::FileHeader h = header_;
    const auto& blocks = blocks_.blocks();
    h.blocks_claimed = blocks.size();
    if (h.closed == tf::kClosedCleanly && h.end_monotonic_ns == 0)
      h.end_monotonic_ns = std::max(last_time_, h.start_monotonic_ns) + 1000;
    std::vector<uint8_t> out(tf::kHeaderSize + (blocks.size() + zero_tail_) * tf::kBlockSize, 0);
    std::memcpy(out.data(), &h, sizeof h);
    for (size_t i = 0; i < blocks.size(); ++i)
      std::memcpy(out.data() + tf::kHeaderSize + i * tf::kBlockSize, blocks[i].data(), tf::kBlockSize);
    return out;
  }
  void write(const std::string& path) const {
    auto b = bytes();
    write_bytes(path, b);
  }
  static void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot write " + path);
    if (!b.empty()) std::fwrite(b.data(), 1, b.size(), f);
    std::fclose(f);
  }
  void note_time(uint64_t t) {
    if (t > last_time_) last_time_ = t;
  }
  template <class T>
  void event(uint32_t tid, tf::RecordType type, const T& rec) {
    note_time(rec.end_ns);
    add(tid, type, rec);
  }

 private:
  static void copy_text(char* dst, size_t n, const char* src) {
    std::memset(dst, 0, n);
    std::strncpy(dst, src, n - 1);
  }
  tf::FileHeader header_{};
  asyncwatch::trace_io::BlockBuilder blocks_;  // the block layout: trace_io.h
  uint32_t last_stack_ = 0;
  uint32_t last_string_ = 0;
  uint64_t last_time_ = 0;
  size_t zero_tail_ = 0;
};

}  // namespace asyncwatch::testing
