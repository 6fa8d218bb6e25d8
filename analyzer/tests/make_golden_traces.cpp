// Writes the crafted golden traces of tests/golden/ (checked in; rerun after a format change):
//   asyncwatch_make_golden_traces analyzer/tests/golden
// Addresses point into modules that do not exist on disk, so frames print as module+offset.
#include "trace_builder.h"

#include <sys/stat.h>

#include <string>

using namespace asyncwatch::testing;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint32_t kMain = 4242;

// The seed program: H2D copy, sleep kernel, D2H copy on one stream, 2 GiB buffers.
void seed(const std::string& path, bool pinned) {
  TraceBuilder b(4242, "/work/app/seed");
  b.thread_info(kMain, "seed");
  b.module(kMain, "/work/app/seed", 0x400000 - 0x400000, 0x400000, 0x480000);
  b.device(kMain, "NVIDIA H200", false);
  uint64_t t = b.header().start_monotonic_ns + 100 * kMs;
  auto host = pinned ? MemoryKind::Pinned : MemoryKind::Pageable;
  uint32_t s_alloc = b.stack(kMain, {0x401100, 0x402000});
  b.event(kMain, RecordType::MemoryOp,
          TraceBuilder::memory_op(pinned ? Api::cudaMallocHost : Api::cudaMalloc,
                                  pinned ? Api::cuMemHostAlloc : Api::cuMemAlloc_v2, t, t + 300 * kUs, 2 * kGiB,
                                  pinned ? MemoryKind::Pinned : MemoryKind::Device, s_alloc));
  t += 1 * kMs;
  b.event(kMain, RecordType::StreamCreate, TraceBuilder::stream_create(0x5000, 0, t, t + 10 * kUs));
  t += 20 * kUs;
  uint32_t kernel = b.string(kMain, "_Z5dummyv");
  uint32_t s_h2d = b.stack(kMain, {0x401234, 0x402000});
  uint64_t h2d = pinned ? 45 * kUs : 570 * kMs;
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyHtoDAsync_v2, Direction::HtoD, host, MemoryKind::Device,
                             t, t + h2d, 2 * kGiB, tf::kFlagEvidenceChecked, 0x5000, s_h2d));
  t += h2d + 5 * kUs;
  b.event(kMain, RecordType::Launch,
          TraceBuilder::launch(Api::__cudaLaunchKernel, kernel, t, t + 4 * kUs, tf::kFlagFirstLaunch, 0x5000));
  t += 10 * kUs;
  uint32_t s_d2h = b.stack(kMain, {0x401300, 0x402000});
  uint64_t d2h = pinned ? 21 * kUs : 1740 * kMs;
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device, host,
                             t, t + d2h, 2 * kGiB,
                             tf::kFlagEvidenceChecked | (pinned ? 0u : uint32_t{tf::kFlagCompletedAtReturn}), 0x5000,
                             s_d2h));
  t += d2h + 5 * kUs;
  uint32_t s_sync = b.stack(kMain, {0x401400, 0x402000});
  uint64_t wait = pinned ? 2300 * kMs : 10 * kUs;
  b.event(kMain, RecordType::Sync,
          TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, t, t + wait, 0x5000, s_sync));
  t += wait;
  b.end_at(t + 50 * kMs);
  b.write(path);
}

void mixed(const std::string& path) {
  TraceBuilder b(777, "/work/app/mixed");
  const uint32_t worker = 778;
  b.thread_info(kMain, "mixed");
  b.thread_info(worker, "worker");
  b.module(kMain, "/work/app/mixed", 0, 0x400000, 0x480000);
  b.module(kMain, "/work/lib/libasyncwatch.so", 0x7f0000000000, 0x7f0000000000, 0x7f0000100000);
  b.device(kMain, "asyncwatch simulated GPU", true);
  b.cuda_env("CUDA_MODULE_LOADING=LAZY");
  uint64_t t = b.header().start_monotonic_ns + 10 * kMs;
  b.event(kMain, RecordType::StreamCreate, TraceBuilder::stream_create(0x5000, 0, t, t + 5 * kUs));
  b.event(kMain, RecordType::StreamCreate, TraceBuilder::stream_create(0x6000, 1, t + 10 * kUs, t + 15 * kUs));
  t += 20 * kUs;
  uint32_t k_a = b.string(kMain, "_Z7computePfi");
  uint32_t k_b = b.string(kMain, "_Z6reducePf");
  // First launch of compute blocks 12 ms (lazy loading); the innermost frame is in libasyncwatch.
  uint32_t s_first = b.stack(kMain, {0x7f0000001234, 0x401500, 0x402000});
  b.event(kMain, RecordType::Launch,
          TraceBuilder::launch(Api::cudaLaunchKernel, k_a, t, t + 12 * kMs, tf::kFlagFirstLaunch, 0x5000, s_first));
  t += 12 * kMs + 10 * kUs;
  // 600 launches without a sync, the last ones block: a full queue.
  uint32_t s_loop = b.stack(kMain, {0x401600, 0x402000});
  for (int i = 0; i < 600; ++i) {
    uint64_t d = i >= 597 ? 200 * kUs : 3 * kUs;
    b.event(kMain, RecordType::Launch,
            TraceBuilder::launch(Api::cudaLaunchKernel, k_b, t, t + d, i == 0 ? uint32_t{tf::kFlagFirstLaunch} : 0u,
                                 0x5000, d > 50 * kUs ? s_loop : 0));
    t += d + 1 * kUs;
  }
  // A pageable DtoH on the busy stream: waited for both kernels.
  uint32_t s_d2h = b.stack(kMain, {0x401700, 0x402000});
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                             MemoryKind::Pageable, t, t + 30 * kMs, 64 << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s_d2h));
  t += 30 * kMs + 10 * kUs;
  // A small pageable HtoD: done inline, ignored.
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyHtoDAsync_v2, Direction::HtoD, MemoryKind::Pageable,
                             MemoryKind::Device, t, t + 60 * kUs, 4096, tf::kFlagEvidenceChecked, 0x5000, s_d2h));
  t += 70 * kUs;
  // Host to host.
  uint32_t s_h2h = b.stack(kMain, {0x401800, 0x402000});
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpy2DAsync_v2, Direction::HtoH, MemoryKind::Pageable,
                             MemoryKind::Pinned, t, t + 2 * kMs, 8 << 20, 0, 0x6000, s_h2h));
  t += 2 * kMs + 10 * kUs;
  // Managed memory copy.
  uint32_t s_man = b.stack(kMain, {0x401900, 0x402000});
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyAsync, Direction::DtoH, MemoryKind::Managed,
                             MemoryKind::Pinned, t, t + 5 * kMs, 16 << 20, 0, 0x6000, s_man));
  t += 5 * kMs + 10 * kUs;
  // Memset of pinned host memory.
  uint32_t s_mset = b.stack(kMain, {0x401a00, 0x402000});
  b.event(
      kMain, RecordType::Memset,
      TraceBuilder::copy(Api::cudaMemset, Api::cuMemsetD8_v2, Direction::Unknown, MemoryKind::Unknown,
                         MemoryKind::Pinned, t, t + 800 * kUs, 1 << 20, 0, 0, s_mset, tf::StreamKind::LegacyDefault));
  t += 900 * kUs;
  // A captured pageable DtoH: recorded, not executed: never flagged.
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable,
                             t, t + 5 * kMs, 1 << 20, tf::kFlagCaptureActive | tf::kFlagRuntimeOnly, 0x6000, s_d2h));
  t += 5 * kMs + 10 * kUs;
  // Host functions: a long one (worker thread runs it), and a deprecated callback.
  uint32_t s_hf = b.stack(kMain, {0x401b00, 0x402000});
  b.event(kMain, RecordType::HostFuncEnqueue,
          TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 1, t, t + 5 * kUs, 0x6000, s_hf));
  b.event(worker, RecordType::HostFuncRun, TraceBuilder::run(1, t + 2 * kUs, t + 25 * kMs));
  t += 10 * kUs;
  uint32_t s_cb = b.stack(kMain, {0x401c00, 0x402000});
  b.event(kMain, RecordType::HostFuncEnqueue,
          TraceBuilder::enqueue(Api::cudaStreamAddCallback, Api::cuStreamAddCallback, 2, t, t + 6 * kUs, 0x6000, s_cb));
  b.event(worker, RecordType::HostFuncRun, TraceBuilder::run(2, t + 25 * kMs, t + 25 * kMs + 100 * kUs));
  t += 30 * kMs;
  // cudaMalloc/cudaFree in a loop: implicit synchronization.
  uint32_t s_malloc = b.stack(kMain, {0x401d00, 0x402000});
  uint32_t s_free = b.stack(kMain, {0x401d80, 0x402000});
  for (int i = 0; i < 20; ++i) {
    b.event(kMain, RecordType::MemoryOp,
            TraceBuilder::memory_op(Api::cudaMalloc, Api::cuMemAlloc_v2, t, t + 150 * kUs, 1 << 20, MemoryKind::Device,
                                    s_malloc));
    t += 160 * kUs;
    b.event(kMain, RecordType::MemoryOp,
            TraceBuilder::memory_op(Api::cudaFree, Api::cuMemFree_v2, t, t + 90 * kUs, 0, MemoryKind::Device, s_free));
    t += 100 * kUs;
  }
  // Explicit waits, from two call sites.
  uint32_t s_sync1 = b.stack(kMain, {0x401e00, 0x402000});
  uint32_t s_sync2 = b.stack(worker, {0x401f00, 0x402100});
  for (int i = 0; i < 3; ++i) {
    b.event(kMain, RecordType::Sync,
            TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, t, t + (i + 1) * kMs, 0x5000,
                               s_sync1));
    t += (i + 1) * kMs + 10 * kUs;
  }
  b.event(worker, RecordType::Sync,
          TraceBuilder::sync(Api::cudaDeviceSynchronize, Api::cuCtxSynchronize, t, t + 7 * kMs, 0, s_sync2));
  t += 7 * kMs;
  b.end_at(t + 1 * kMs);
  b.write(path);
}

void crashed(const std::string& path) {
  TraceBuilder b(31337, "/work/app/crasher");
  b.thread_info(kMain, "crasher");
  b.module(kMain, "/work/app/crasher", 0, 0x400000, 0x480000);
  uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
  uint32_t s = b.stack(kMain, {0x401234, 0x402000});
  b.event(kMain, RecordType::Copy,
          TraceBuilder::copy(Api::cuMemcpyDtoHAsync_v2, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                             MemoryKind::Pageable, t, t + 3 * kMs, 1 << 20, tf::kFlagEvidenceChecked, 0x5000, s));
  b.crashed();
  b.add_zero_blocks(3);
  b.write(path);
}

// A process SIGKILLed while two of its threads were in calls. The main thread was
// in a pageable D2H copy behind a kernel, whose stack the preload took before the call
// (kFlagStackCaptured, the stack's first frame also the caller in end_ns); the other in a
// cudaStreamSynchronize, which has only its caller's return address (end_ns while in flight): a
// one-frame call site.
void killed_in_flight(const std::string& path) {
  TraceBuilder b(4711, "/work/app/hang");
  b.thread_info(kMain, "hang");
  b.module(kMain, "/work/app/hang", 0, 0x400000, 0x480000);
  b.device(kMain, "NVIDIA H200", false);
  uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
  uint32_t kernel = b.string(kMain, "_Z12sleep_kernelx");
  b.event(kMain, RecordType::Launch,
          TraceBuilder::launch(Api::__cudaLaunchKernel, kernel, t, t + 5 * kUs, tf::kFlagFirstLaunch, 0x5000));
  t += 10 * kUs;
  uint32_t s_copy = b.stack(kMain, {0x401500, 0x402000});
  tf::CopyRecord c{};
  c.api = static_cast<uint16_t>(Api::cudaMemcpyAsync);
  c.flags = tf::kFlagInFlight | tf::kFlagStackCaptured;
  c.stack_id = s_copy;
  c.start_ns = t;
  c.end_ns = 0x401500;
  b.add(kMain, RecordType::Copy, c);
  constexpr uint32_t kWaiter = kMain + 1;
  b.thread_info(kWaiter, "waiter");
  tf::SyncRecord s{};
  s.api = static_cast<uint16_t>(Api::cudaStreamSynchronize);
  s.flags = tf::kFlagInFlight;
  s.start_ns = t + 2 * kMs;
  s.end_ns = 0x401640;
  b.add(kWaiter, RecordType::Sync, s);
  // The last record before the kill: a watchdog's query 1.5 s later (the trace's end).
  constexpr uint32_t kWatchdog = kMain + 2;
  b.thread_info(kWatchdog, "watchdog");
  b.event(kWatchdog, RecordType::Sync,
          TraceBuilder::sync(Api::cudaEventQuery, Api::cuEventQuery, t + 1500 * kMs, t + 1500 * kMs + kUs));
  b.crashed();
  b.write(path);
}

// A parent and its fork child, each with a pageable D2H at the same call site.
void fork_pair(const std::string& dir) {
  mkdir(dir.c_str(), 0755);
  for (int child = 0; child < 2; ++child) {
    uint64_t pid = child ? 501 : 500;
    TraceBuilder b(pid, "/work/app/forker");
    if (child) b.header().parent_pid_if_forked = 500;
    b.header().start_realtime_ns += child * 5 * kMs;
    b.thread_info(static_cast<uint32_t>(pid), "forker");
    b.module(static_cast<uint32_t>(pid), "/work/app/forker", 0, 0x400000, 0x480000);
    uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
    uint32_t s = b.stack(static_cast<uint32_t>(pid), {0x401234, 0x402000});
    b.event(static_cast<uint32_t>(pid), RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                               MemoryKind::Pageable, t, t + (child ? 4 : 2) * kMs, 1 << 20,
                               tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
    b.end_at(t + 10 * kMs);
    b.write(dir + "/asyncwatch-forker-" + std::to_string(pid) + ".awtrace");
  }
}

// A program run without a usable driver: every CUDA call returned cudaErrorInsufficientDriver (35)
// at once (asyncwatch run without a GPU and without --sim).
void no_device(const std::string& path) {
  TraceBuilder b(6000, "/work/app/nodevice");
  b.thread_info(kMain, "nodevice");
  b.module(kMain, "/work/app/nodevice", 0, 0x400000, 0x480000);
  uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
  uint32_t s = b.stack(kMain, {0x401234, 0x402000});
  auto fail = [](auto r) {
    r.result = 35;
    return r;
  };
  b.event(kMain, RecordType::MemoryOp,
          fail(TraceBuilder::memory_op(Api::cudaMalloc, Api::None, t, t + 2 * kUs, 1 << 20, MemoryKind::Device, s)));
  t += 10 * kUs;
  for (int i = 0; i < 3; ++i, t += 10 * kUs)
    b.event(kMain, RecordType::Copy,
            fail(TraceBuilder::copy(Api::cudaMemcpyAsync, Api::None, Direction::DtoH, MemoryKind::Device,
                                    MemoryKind::Pageable, t, t + 1 * kUs, 1 << 20, 0, 0x5000, s)));
  b.end_at(t + 1 * kMs);
  b.write(path);
}

// Two ranks of one job (OMPI_COMM_WORLD_RANK at start), each with a pageable D2H at the same call
// site: the rank filter, the per-rank lines and merging across ranks.
void ranks(const std::string& dir) {
  mkdir(dir.c_str(), 0755);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    uint64_t pid = 700 + rank;
    TraceBuilder b(pid, "/work/app/mpi_app");
    b.header().rank = rank;
    b.header().rank_source = static_cast<uint8_t>(tf::RankSource::OmpiCommWorldRank);
    b.header().start_realtime_ns += rank * kMs;
    b.thread_info(static_cast<uint32_t>(pid), "mpi_app");
    b.module(static_cast<uint32_t>(pid), "/work/app/mpi_app", 0, 0x400000, 0x480000);
    uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
    uint32_t s = b.stack(static_cast<uint32_t>(pid), {0x401234, 0x402000});
    b.event(static_cast<uint32_t>(pid), RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                               MemoryKind::Pageable, t, t + (rank + 1) * 3 * kMs, 8 << 20,
                               tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
    b.end_at(t + 20 * kMs);
    b.write(dir + "/asyncwatch-mpi_app-" + std::to_string(rank) + ".awtrace");
  }
}

// NVTX ranges. The main thread pushes `train_step` around 3 of 4 pageable D2H copies at
// one site (nested `forward` around one of them); a loader thread starts the process-wide range
// `epoch` before them and ends it before a last copy at another site, in no range.
void nvtx(const std::string& path) {
  constexpr uint32_t kLoader = 4243;
  TraceBuilder b(800, "/work/app/train");
  b.thread_info(kMain, "train");
  b.thread_info(kLoader, "loader");
  b.module(kMain, "/work/app/train", 0, 0x400000, 0x480000);
  uint64_t t = b.header().start_monotonic_ns + 1 * kMs;
  uint32_t s1 = b.stack(kMain, {0x401234, 0x402000});
  uint32_t s2 = b.stack(kMain, {0x401300, 0x402000});
  uint32_t step = b.string(kMain, "train_step");
  uint32_t forward = b.string(kMain, "forward");
  uint32_t epoch = b.string(kLoader, "epoch");
  auto range = [&](uint32_t tid, tf::NvtxKind kind, uint64_t id, uint32_t name) {
    tf::NvtxRangeRecord r{};
    r.kind = static_cast<uint8_t>(kind);
    r.range_id = id;
    r.name_id = name;
    r.start_ns = r.end_ns = t;
    b.event(tid, RecordType::NvtxRange, r);
    t += 1 * kUs;
  };
  auto copy = [&](uint32_t site) {
    b.event(kMain, RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                               MemoryKind::Pageable, t, t + 2 * kMs, 1 << 20, 0, 0x5000, site));
    t += 3 * kMs;
  };
  range(kLoader, tf::NvtxKind::Start, 1, epoch);
  copy(s1);  // in epoch only
  for (int i = 0; i < 3; ++i) {
    range(kMain, tf::NvtxKind::Push, 0, step);
    if (i == 1) range(kMain, tf::NvtxKind::Push, 1, forward);
    copy(s1);
    if (i == 1) range(kMain, tf::NvtxKind::Pop, 1, 0);
    range(kMain, tf::NvtxKind::Pop, 0, 0);
  }
  range(kLoader, tf::NvtxKind::End, 1, 0);
  copy(s2);
  b.end_at(t + 1 * kMs);
  b.write(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : ".";
  seed(dir + "/seed-pageable.awtrace", false);
  seed(dir + "/seed-pinned.awtrace", true);
  mixed(dir + "/mixed.awtrace");
  crashed(dir + "/crashed.awtrace");
  fork_pair(dir + "/fork");
  no_device(dir + "/no-device.awtrace");
  ranks(dir + "/ranks");
  nvtx(dir + "/nvtx.awtrace");
  killed_in_flight(dir + "/killed-in-flight.awtrace");
  return 0;
}
