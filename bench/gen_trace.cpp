// Writes a large synthetic asyncwatch trace for the analyzer benchmark, streaming (memory
// does not grow with the trace): several application threads, a callback thread, a few
// hundred call sites (stacks), tens of kernels, and a realistic mix of records.
//   asyncwatch_bench_gen OUT.awtrace [--records N] [--threads T] [--call-sites S]
//                        [--shape SHAPE --count N [--stack-depth D] [--string-bytes B]]
// --shape adds a hostile part of N items before the normal mix (docs/reliability.md measures
// the analyzer's memory on each):
//   unused-stacks   N stack records of D frames (default 64) that no record refers to
//   sparse-stacks   the same with ids spread over the whole 32-bit range
//   call-sites      N stacks of D frames (default 8), each the stack of one pageable copy
//                   that blocked 0.5 ms: N distinct call sites with a finding each
//   streams         N launches, each on a stream of its own, never destroyed
//   callbacks       N host-function enqueues whose function never runs
//   strings         N strings of B bytes (default 200) that no record refers to
//   modules         N module records (paths that do not exist)
// Also writes OUT.awtrace.records with the number of records.
#include <asyncwatch/trace_format.h>
#include <asyncwatch/trace_io.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace tf = asyncwatch::trace;

namespace {

// Streams blocks to the file as they fill (trace_io.h lays them out); threads are slots 0..n-1.
struct Writer {
  int fd = -1;
  std::vector<uint32_t> tids;
  asyncwatch::trace_io::BlockBuilder blocks{[this](uint64_t index, const std::vector<uint8_t>& block) {
    ssize_t n = pwrite(fd, block.data(), tf::kBlockSize, static_cast<off_t>(tf::kHeaderSize + index * tf::kBlockSize));
    if (n != static_cast<ssize_t>(tf::kBlockSize)) {
      std::perror("pwrite");
      std::exit(1);
    }
  }};
  uint64_t records() const { return blocks.records(); }
  uint64_t block_count() const { return blocks.block_count(); }
  void put(size_t th, tf::RecordType type, const void* rec, size_t size, const void* payload = nullptr,
           size_t payload_size = 0) {
    blocks.add(tids[th], type, rec, size, payload, payload_size);
  }
  template <class T>
  void put(size_t th, tf::RecordType type, const T& rec) {
    put(th, type, &rec, sizeof rec);
  }
};

uint64_t rng_state = 0x9e3779b97f4a7c15ull;
uint64_t rnd() {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

}  // namespace

int main(int argc, char** argv) {
  // An option in OUT's place (`--help`) is an error, not a file name: it would write 1.4 GiB there.
  if (argc < 2 || argv[1][0] == '-' || (argc - 2) % 2 != 0) {
    std::fprintf(stderr, "usage: %s OUT.awtrace [--records N] [--threads T] [--call-sites S]\n", argv[0]);
    return 2;
  }
  std::string out = argv[1];
  uint64_t target = 20'000'000;
  uint32_t app_threads = 4, sites = 300;
  std::string shape;
  uint64_t count = 0, string_bytes = 200;
  uint32_t depth = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--records")
      target = v;
    else if (a == "--threads")
      app_threads = static_cast<uint32_t>(v);
    else if (a == "--call-sites")
      sites = static_cast<uint32_t>(v);
    else if (a == "--shape")
      shape = argv[i + 1];
    else if (a == "--count")
      count = v;
    else if (a == "--stack-depth")
      depth = static_cast<uint32_t>(v);
    else if (a == "--string-bytes")
      string_bytes = v;
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], a.c_str());
      return 2;
    }
  }
  static const char* const kShapes[] = {"",        "unused-stacks", "sparse-stacks", "call-sites",
                                        "streams", "callbacks",     "strings",       "modules"};
  bool known = false;
  for (const char* k : kShapes) known = known || shape == k;
  if (!known || depth > tf::kMaxStackDepth || string_bytes > tf::kBlockSize / 2) {
    std::fprintf(stderr, "%s: bad --shape, --stack-depth or --string-bytes\n", argv[0]);
    return 2;
  }
  if (depth == 0) depth = shape == "call-sites" ? 8 : tf::kMaxStackDepth;
  Writer w;
  w.fd = open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (w.fd < 0) {
    std::perror(out.c_str());
    return 1;
  }
  for (uint32_t i = 0; i < app_threads + 1; ++i) w.tids.push_back(10000 + i);
  const size_t callback_thread = app_threads;

  for (size_t th = 0; th < w.tids.size(); ++th) {
    tf::ThreadInfoRecord ti{};
    ti.tid = w.tids[th];
    std::snprintf(ti.name, sizeof ti.name, th == callback_thread ? "cuda-callback" : "worker-%zu", th);
    w.put(th, tf::RecordType::ThreadInfo, ti);
  }
  std::string module = "/nonexistent/bench-app";
  tf::ModuleRecord m{};
  m.path_len = static_cast<uint16_t>(module.size());
  m.low = 0x400000;
  m.high = 0x800000;
  w.put(0, tf::RecordType::Module, &m, sizeof m, module.data(), module.size());
  for (uint32_t s = 1; s <= sites; ++s) {
    uint64_t frames[8];
    for (int f = 0; f < 8; ++f) frames[f] = 0x400000 + s * 0x100 + static_cast<uint64_t>(f) * 0x10000;
    tf::StackRecord sr{};
    sr.stack_id = s;
    sr.depth = 8;
    w.put(0, tf::RecordType::Stack, &sr, sizeof sr, frames, sizeof frames);
  }
  const uint32_t kernels = 40;
  for (uint32_t k = 1; k <= kernels; ++k) {
    std::string name = fmt::format("_Z8kernel{}Pfi", k);
    tf::StringRecord sr{};
    sr.string_id = k;
    sr.len = static_cast<uint32_t>(name.size());
    w.put(0, tf::RecordType::String, &sr, sizeof sr, name.data(), name.size());
  }
  const uint32_t kernels_end = kernels + 1;
  tf::StreamCreateRecord sc{};
  sc.api = static_cast<uint16_t>(tf::Api::cudaStreamCreate);
  const uint64_t start = 1'000'000'000;
  std::vector<uint64_t> clock(app_threads, start + 1000);
  // The hostile part (--shape), on the first application thread, before the normal mix.
  std::vector<uint64_t> frames(depth);
  auto put_stack = [&](uint32_t id, uint64_t salt) {
    for (uint32_t f = 0; f < depth; ++f) frames[f] = 0x10000000 + salt * 0x40 + f * 0x10000000000ull;
    tf::StackRecord sr{};
    sr.stack_id = id;
    sr.depth = static_cast<uint16_t>(depth);
    w.put(0, tf::RecordType::Stack, &sr, sizeof sr, frames.data(), 8ull * depth);
  };
  std::string text(string_bytes, 'k');
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t& t = clock[0];
    const uint32_t id = sites + 1 + static_cast<uint32_t>(i);
    if (shape == "unused-stacks") {
      put_stack(id, i);
    } else if (shape == "sparse-stacks") {
      put_stack(static_cast<uint32_t>((sites + 1 + i) * 2654435761u) | 0x80000000u, i);
    } else if (shape == "call-sites") {
      put_stack(id, i);
      tf::CopyRecord c{};
      c.api = static_cast<uint16_t>(tf::Api::cudaMemcpyAsync);
      c.driver_fn = static_cast<uint16_t>(tf::Api::cuMemcpyDtoHAsync_v2);
      c.direction = static_cast<uint8_t>(tf::Direction::DtoH);
      c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
      c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Pageable);
      c.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
      c.flags = tf::kFlagStackCaptured | tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn;
      c.stack_id = id;
      c.start_ns = t;
      c.end_ns = t + 500'000;
      c.stream = 0x10000;
      c.bytes = 1 << 20;
      w.put(0, tf::RecordType::Copy, c);
    } else if (shape == "streams") {
      tf::LaunchRecord l{};
      l.api = static_cast<uint16_t>(tf::Api::cudaLaunchKernel);
      l.driver_fn = static_cast<uint16_t>(tf::Api::cuLaunchKernel);
      l.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
      l.kernel_name_id = 1;
      l.start_ns = t;
      l.end_ns = t + 3'000;
      l.stream = 0x100000000ull + i;
      w.put(0, tf::RecordType::Launch, l);
    } else if (shape == "callbacks") {
      tf::HostFuncEnqueueRecord e{};
      e.api = static_cast<uint16_t>(tf::Api::cudaLaunchHostFunc);
      e.driver_fn = static_cast<uint16_t>(tf::Api::cuLaunchHostFunc);
      e.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
      e.callback_id = 0x8000000000000000ull + i;
      e.start_ns = t;
      e.end_ns = t + 2'500;
      e.stream = 0x10000;
      e.user_function = 0x401000;
      w.put(0, tf::RecordType::HostFuncEnqueue, e);
    } else if (shape == "strings") {
      tf::StringRecord sr{};
      sr.string_id = kernels_end + static_cast<uint32_t>(i);
      sr.len = static_cast<uint32_t>(text.size());
      w.put(0, tf::RecordType::String, &sr, sizeof sr, text.data(), text.size());
    } else if (shape == "modules") {
      std::string path = fmt::format("/nonexistent/hostile/lib{}.so", i);
      tf::ModuleRecord mr{};
      mr.path_len = static_cast<uint16_t>(path.size());
      mr.low = 0x7f0000000000ull + i * 0x10000;
      mr.high = mr.low + 0x10000;
      w.put(0, tf::RecordType::Module, &mr, sizeof mr, path.data(), path.size());
    }
    t += 4'000;
  }
  for (uint32_t th = 0; th < app_threads; ++th) {
    sc.stream = 0x10000 + th;
    sc.start_ns = clock[th];
    sc.end_ns = clock[th] + 2000;
    clock[th] += 3000;
    w.put(th, tf::RecordType::StreamCreate, sc);
  }
  uint64_t callback_id = 0;
  uint64_t callback_clock = start;
  while (w.records() < target) {
    for (uint32_t th = 0; th < app_threads && w.records() < target; ++th) {
      uint64_t& t = clock[th];
      uint64_t r = rnd();
      uint32_t pct = static_cast<uint32_t>(r % 100);
      uint32_t site = 1 + static_cast<uint32_t>((r >> 8) % sites);
      uint64_t stream = 0x10000 + th;
      if (pct < 70) {
        tf::LaunchRecord l{};
        l.api = static_cast<uint16_t>(tf::Api::__cudaLaunchKernel);
        l.driver_fn = static_cast<uint16_t>(tf::Api::cuLaunchKernel);
        l.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
        l.kernel_name_id = 1 + static_cast<uint32_t>((r >> 20) % kernels);
        bool slow = (r >> 40) % 2000 == 0;
        l.start_ns = t;
        l.end_ns = t + (slow ? 80'000 : 3'000);
        if (slow) {
          l.flags = tf::kFlagStackCaptured;
          l.stack_id = site;
        }
        l.stream = stream;
        w.put(th, tf::RecordType::Launch, l);
      } else if (pct < 85) {
        tf::CopyRecord c{};
        bool pageable = (r >> 40) % 50 == 0;
        bool d2h = (r >> 50) & 1;
        c.api = static_cast<uint16_t>(tf::Api::cudaMemcpyAsync);
        c.driver_fn = static_cast<uint16_t>(d2h ? tf::Api::cuMemcpyDtoHAsync_v2 : tf::Api::cuMemcpyHtoDAsync_v2);
        c.direction = static_cast<uint8_t>(d2h ? tf::Direction::DtoH : tf::Direction::HtoD);
        auto host = static_cast<uint8_t>(pageable ? tf::MemoryKind::Pageable : tf::MemoryKind::Pinned);
        c.src_memory = d2h ? static_cast<uint8_t>(tf::MemoryKind::Device) : host;
        c.dst_memory = d2h ? host : static_cast<uint8_t>(tf::MemoryKind::Device);
        c.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
        c.flags = tf::kFlagStackCaptured | (pageable ? tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn : 0);
        c.stack_id = site;
        c.start_ns = t;
        c.end_ns = t + (pageable ? 400'000 + (r >> 33) % 100'000 : 1'500);
        c.stream = stream;
        c.bytes = 1ull << (10 + (r >> 36) % 14);
        w.put(th, tf::RecordType::Copy, c);
      } else if (pct < 90) {
        tf::SyncRecord s{};
        s.api = static_cast<uint16_t>(tf::Api::cudaStreamSynchronize);
        s.driver_fn = static_cast<uint16_t>(tf::Api::cuStreamSynchronize);
        s.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
        s.flags = tf::kFlagStackCaptured;
        s.stack_id = site;
        s.start_ns = t;
        s.end_ns = t + 20'000 + (r >> 30) % 200'000;
        s.handle = stream;
        w.put(th, tf::RecordType::Sync, s);
      } else if (pct < 95) {
        tf::CopyRecord c{};
        c.api = static_cast<uint16_t>(tf::Api::cudaMemsetAsync);
        c.driver_fn = static_cast<uint16_t>(tf::Api::cuMemsetD8Async);
        c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
        c.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
        c.flags = tf::kFlagStackCaptured;
        c.stack_id = site;
        c.start_ns = t;
        c.end_ns = t + 2'000;
        c.stream = stream;
        c.bytes = 4096;
        w.put(th, tf::RecordType::Memset, c);
      } else {
        tf::HostFuncEnqueueRecord e{};
        e.api = static_cast<uint16_t>(tf::Api::cudaLaunchHostFunc);
        e.driver_fn = static_cast<uint16_t>(tf::Api::cuLaunchHostFunc);
        e.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
        e.flags = tf::kFlagStackCaptured;
        e.stack_id = site;
        e.callback_id = ++callback_id;
        e.start_ns = t;
        e.end_ns = t + 2'500;
        e.stream = stream;
        e.user_function = 0x401000;
        w.put(th, tf::RecordType::HostFuncEnqueue, e);
        tf::HostFuncRunRecord run{};
        run.callback_id = callback_id;
        run.start_ns = std::max(callback_clock, t + 10'000);
        run.end_ns = run.start_ns + ((r >> 45) % 500 == 0 ? 2'000'000 : 5'000);
        callback_clock = run.end_ns;
        w.put(callback_thread, tf::RecordType::HostFuncRun, run);
      }
      t += 4'000 + (r >> 56);
    }
  }
  w.blocks.finish();
  uint64_t end = 0;
  for (uint64_t c : clock) end = std::max(end, c);
  end = std::max(end, callback_clock) + 1000;
  tf::FileHeader h{};
  std::memcpy(h.magic, tf::kMagic, sizeof tf::kMagic);
  h.version = tf::kFormatVersion;
  h.header_size = tf::kHeaderSize;
  h.block_size = tf::kBlockSize;
  h.closed = tf::kClosedCleanly;
  h.pid = 4242;
  h.ppid = 1;
  h.start_monotonic_ns = start;
  h.start_realtime_ns = 1'700'000'000'000'000'000ull;
  h.end_monotonic_ns = end;
  h.blocks_claimed = w.block_count();
  h.exit_status = 0;
  std::snprintf(h.executable, sizeof h.executable, "%s", module.c_str());
  std::snprintf(h.command_line, sizeof h.command_line, "bench-app --synthetic");
  if (pwrite(w.fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) {
    std::perror("pwrite header");
    return 1;
  }
  if (ftruncate(w.fd, static_cast<off_t>(tf::kHeaderSize + w.block_count() * tf::kBlockSize)) != 0) {
    std::perror("ftruncate");
    return 1;
  }
  close(w.fd);
  std::FILE* f = std::fopen((out + ".records").c_str(), "w");
  if (f) {
    std::fprintf(f, "%llu\n", static_cast<unsigned long long>(w.records()));
    std::fclose(f);
  }
  std::printf("%s: %llu records, %llu blocks, %.1f MiB\n", out.c_str(), static_cast<unsigned long long>(w.records()),
              static_cast<unsigned long long>(w.block_count()),
              static_cast<double>(tf::kHeaderSize + w.block_count() * tf::kBlockSize) / (1 << 20));
  return 0;
}
