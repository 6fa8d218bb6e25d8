// The impact model (findings/impact.h): its arithmetic on the examples of docs/findings.md
// ("Impact"), and on crafted traces through the analysis (each example of the issue, the ranking,
// the basis said for real, unknown and simulated devices).
#include "findings/analysis.h"
#include "findings/impact.h"
#include "report/reports.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

constexpr uint32_t kTid = 7;
constexpr uint64_t kStream = 0x5000;

// A staged upload of 570 ms, its fixed form a 45 us call and a 38.9 ms transfer on the stream; a
// kernel launched 10 us after it returned, waited for 100 ms by a synchronize 20 us after it.
TEST(ImpactModel, StagedUploadThenKernelGainsStagingLessThePinnedTransfer) {
  impact::BlockingCall call{0, 570 * kMs, 45 * kUs, 45 * kUs + 38'900 * kUs};
  impact::NextWait next{call.end + 20 * kUs, call.end + 20 * kUs + 100 * kMs, call.end + 10 * kUs};
  EXPECT_EQ(impact::blocking_call_gain(call, next), 570 * kMs - 45 * kUs - 38'900 * kUs + 10 * kUs);
}

// A pageable download that waited 100 ms for a kernel and copied for 14 ms; 2 ms of host work
// before a synchronize that did not wait. Fixed: the kernel still runs 100 ms, then a 1 ms pinned
// transfer: the gain is the host work that overlaps the kernel plus the transfer's speed-up.
TEST(ImpactModel, DownloadAfterAKernelGainsTheOverlappedHostWorkAndTheSpeedUp) {
  const uint64_t blocked = 114 * kMs;
  impact::BlockingCall call{0, blocked, 20 * kUs, 100 * kMs + 1 * kMs};
  impact::NextWait next{blocked + 2 * kMs, blocked + 2 * kMs, 0};
  EXPECT_EQ(impact::blocking_call_gain(call, next), 2 * kMs + 14 * kMs - 1 * kMs);
  // More host work than the kernel's time: the whole wait goes, less the fixed call's cost.
  next = impact::NextWait{blocked + 200 * kMs, blocked + 200 * kMs, 0};
  EXPECT_EQ(impact::blocking_call_gain(call, next), blocked - 20 * kUs);
  // A synchronize at once that waited for a later 50 ms kernel: only the transfer's speed-up.
  next = impact::NextWait{blocked + 5 * kUs, blocked + 5 * kUs + 50 * kMs, blocked + 2 * kUs};
  EXPECT_EQ(impact::blocking_call_gain(call, next), 14 * kMs - 1 * kMs + 2 * kUs);
}

// The call's own wait stays when the fix only makes it asynchronous (fixed_done = blocked): a
// synchronize right after gains nothing, host work in between gains its overlap.
TEST(ImpactModel, AsynchronousFixOfAWaitGainsOnlyTheOverlap) {
  impact::BlockingCall call{0, 10 * kMs, 0, 10 * kMs};
  // (a wait with nothing the thread queued after the call: taken to be for the call's own work,
  // done at 10 ms in the fixed program too: the host arrives 1 us after, the wait goes)
  EXPECT_EQ(impact::blocking_call_gain(call, {10 * kMs + 1 * kUs, 10 * kMs + 2 * kUs, 0}), 2 * kUs);
  EXPECT_EQ(impact::blocking_call_gain(call, {13 * kMs, 13 * kMs, 0}), 3 * kMs);
  EXPECT_EQ(impact::blocking_call_gain(call, {50 * kMs, 50 * kMs, 0}), 10 * kMs);
  // Never more than the call blocked, never negative, nothing from nonsense times.
  EXPECT_EQ(impact::blocking_call_gain(call, {5 * kMs, 6 * kMs, 0}), 0u);
  EXPECT_EQ(impact::blocking_call_gain({10, 5, 0, 0}, {20, 30, 0}), 0u);
}

// Four staged uploads on one stream, each followed by a 5 ms kernel, then a synchronize (the
// PyTorch tutorial's `x.to("cuda", non_blocking=True)` loop from pageable memory): each upload after
// the first waited 5 ms for the kernel before it and staged 25 ms. Fixed, the host runs ahead and
// the stream does 4 pinned transfers of 5 ms and 4 kernels back to back: the loop takes about 40 ms
// instead of 120 ms. Each upload alone fixed would gain most of its time; together they gain what the
// stream's work leaves, not the sum.
TEST(ImpactModel, FixedCallsOnOneStreamGainWhatTheStreamsWorkLeaves) {
  const uint64_t cost = 20 * kUs, moved = 5 * kMs, kernel = 5 * kMs, gap = 10 * kUs;
  impact::ChainCall chain[4];
  uint64_t t = 0;
  for (int k = 0; k < 4; ++k) {
    const uint64_t waited = k == 0 ? 0 : kernel - gap;  // the kernel launched `gap` after the last upload
    const uint64_t blocked = waited + 25 * kMs;
    impact::BlockingCall c{t, t + blocked, cost, waited + (k == 0 ? cost + moved : moved),
                           k == 0 ? cost + moved : moved};
    chain[k] = impact::ChainCall{c, kStream, 0, true};
    t += blocked + 2 * gap;  // the kernel's launch, then the next call
  }
  const uint64_t last_launch = chain[3].call.end + gap;
  const impact::NextWait sync{last_launch + gap, last_launch + kernel, last_launch};
  for (auto& c : chain) c.last_enqueue = last_launch;
  const uint64_t traced_loop = sync.end;
  const uint64_t fixed_loop = 4 * (moved + kernel);  // the stream's work, back to back
  const uint64_t gain = impact::chain_gain(chain, 4, sync);
  EXPECT_NEAR(static_cast<double>(gain), static_cast<double>(traced_loop - fixed_loop), 0.2 * kMs);
  uint64_t alone = 0;  // each call's gain as if the calls after it did not exist: the sum overstates it
  for (const auto& c : chain) alone += impact::blocking_call_gain(c.call, sync);
  EXPECT_GT(alone, gain + 20 * kMs);  // 105 ms against 80: the 1.3x the H100 measured on such a loop
  // One call fixed in a chain of calls left as traced: the same as blocking_call_gain.
  impact::ChainCall single = chain[3];
  EXPECT_EQ(impact::chain_gain(&single, 1, sync), impact::blocking_call_gain(single.call, sync));
}

TEST(ImpactModel, SyncGainIsTheQueueStall) {
  EXPECT_EQ(impact::sync_gain(5 * kMs, 2 * kMs), 2 * kMs);  // GPU-bound: the gap the queue stood empty
  EXPECT_EQ(impact::sync_gain(1 * kMs, 4 * kMs), 1 * kMs);  // host-bound: the whole wait
}

TEST(ImpactModel, FiguresSayTheirBasis) {
  impact::Figures h200 = impact::device_figures("NVIDIA H200", false);
  EXPECT_EQ(h200.pinned_basis[0], impact::kDeviceFigure);
  EXPECT_NEAR(h200.pinned_bytes_per_ns[1], 55.2, 0.1);
  impact::Figures h100 = impact::device_figures("NVIDIA H100 80GB HBM3", false);
  EXPECT_EQ(h100.pinned_basis[1], impact::kDeviceFigure);
  EXPECT_NEAR(h100.pinned_bytes_per_ns[0], 55.0, 0.1);
  EXPECT_NEAR(h100.pageable_d2h_bytes_per_ns, 15.8, 0.1);
  EXPECT_EQ(h100.pageable_basis, impact::kBounded);
  impact::Figures other = impact::device_figures("NVIDIA A100-SXM4-40GB", false);
  EXPECT_EQ(other.pinned_basis[0], impact::kAssumedRate);
  EXPECT_EQ(other.pageable_basis, impact::kBounded | impact::kAssumedRate);
  impact::Figures sim = impact::device_figures("asyncwatch simulated GPU", true);
  EXPECT_EQ(sim.pinned_basis[1], impact::kSimulated);
  EXPECT_EQ(sim.pageable_basis, impact::kSimulated);
  EXPECT_NE(impact::basis_text(impact::kSimulated).find("simulated"), std::string::npos);
  EXPECT_NE(impact::basis_text(impact::kBounded).find("no GPU times"), std::string::npos);
}

// ---- through the analysis ----

struct Trace {
  TraceBuilder b{100};
  uint64_t t;
  uint32_t copy_site, sync_site, launch_site, kernel;
  explicit Trace(const char* device = "NVIDIA H200", bool simulated = false) {
    b.thread_info(kTid, "main");
    b.device(kTid, device, simulated);
    t = b.header().start_monotonic_ns + kMs;
    copy_site = b.stack(kTid, {0x401000, 0x409000});
    sync_site = b.stack(kTid, {0x402000, 0x409000});
    launch_site = b.stack(kTid, {0x403000, 0x409000});
    kernel = b.string(kTid, "_Z6kernelv");
    // A first call, so that no launch is the process's first (context-init).
    b.event(kTid, RecordType::MemoryOp,
            TraceBuilder::memory_op(Api::cudaMalloc, Api::cuMemAlloc_v2, t, t + kMs, 1 << 20, MemoryKind::Device));
    t += 2 * kMs;
  }
  void copy(Direction d, MemoryKind src, MemoryKind dst, uint64_t blocked, uint64_t bytes, uint64_t then) {
    b.event(kTid, RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyAsync, d, src, dst, t, t + blocked, bytes, 0, kStream,
                               copy_site));
    t += blocked + then;
  }
  void launch(uint64_t then) {
    b.event(kTid, RecordType::Launch,
            TraceBuilder::launch(Api::cudaLaunchKernel, kernel, t, t + 5 * kUs, 0, kStream, launch_site));
    t += 5 * kUs + then;
  }
  void sync(uint64_t waited, uint64_t then, uint32_t site = 0) {
    b.event(kTid, RecordType::Sync,
            TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, t, t + waited, kStream,
                               site ? site : sync_site));
    t += waited + then;
  }
  Report report(const std::string& name) {
    b.end_at(t + kMs);
    return analyze_traces({write_trace(b, name)}, Options{});
  }
};

const Finding* find(const Report& r, FindingId id, Direction d = Direction::Unknown) {
  for (const auto& f : r.findings)
    if (f.id == id && (d == Direction::Unknown || f.direction == d)) return &f;
  return nullptr;
}

uint64_t pinned_ns(uint64_t bytes, double bytes_per_ns) { return impact::transfer_ns(bytes, bytes_per_ns); }

// Issue example 1, on the H200: 1 GiB staged for 300 ms, a kernel, a synchronize that waits 50 ms.
TEST(Impact, PageableUploadThenKernel) {
  Trace x;
  const uint64_t bytes = 1ull << 30;
  x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 300 * kMs, bytes, 10 * kUs);
  x.launch(10 * kUs);
  x.sync(50 * kMs, kMs);
  Report r = x.report("upload.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  // (+10 us: the kernel was launched 10 us after the upload returned; fixed, it starts once the
  // transfer is done, and runs as long)
  const uint64_t expected = 300 * kMs - 45 * kUs - pinned_ns(bytes, 55.2) + 10 * kUs;
  EXPECT_NEAR(static_cast<double>(f->impact_ns), static_cast<double>(expected), 1.0 * kUs);
  EXPECT_NE(f->impact_basis.find("device's measured figure"), std::string::npos) << f->impact_basis;
  EXPECT_GT(f->impact_share, 0.5);
  EXPECT_LT(f->impact_share, 1.0);
  EXPECT_EQ(&r.findings[0], f);  // ranked first: the synchronize's 50 ms gains nothing (nothing after it)
}

// Issue example 2 on a device without a figure: a 16 MiB download behind a 100 ms kernel, 3 ms of
// host work, a synchronize that does not wait.
TEST(Impact, PageableDownloadAfterALongKernelThenSync) {
  Trace x("NVIDIA A100-SXM4-40GB");
  const uint64_t bytes = 16ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 25.0 * 15.8 / 55.0);  // the pageable transfer, at the assumed rate
  x.launch(10 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 100 * kMs + copy_ns, bytes, 3 * kMs);
  x.sync(5 * kUs, kMs);
  Report r = x.report("download.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  const uint64_t expected = 3 * kMs + copy_ns - pinned_ns(bytes, 25.0);
  EXPECT_NEAR(static_cast<double>(f->impact_ns), static_cast<double>(expected), 10.0 * kUs);
  EXPECT_LT(f->impact_ns, f->blocked.total() / 5);  // not the kernel's 100 ms
  EXPECT_NE(f->impact_basis.find("assumed"), std::string::npos) << f->impact_basis;
  EXPECT_NE(f->impact_basis.find("bounded: no GPU times"), std::string::npos) << f->impact_basis;
}

// The H100 (its own figures): a 64 MiB download behind a 50 ms kernel, 5 ms of host work, a
// synchronize; fixed, the host work overlaps the kernel and the transfer runs at the pinned rate
// (test_apps/apps/fix_pinned_download.cu, measured there 8.0 ms an iteration).
TEST(Impact, PageableDownloadOnTheH100) {
  Trace x("NVIDIA H100 80GB HBM3");
  const uint64_t bytes = 64ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 15.8);
  x.launch(10 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 50 * kMs + copy_ns, bytes, 5 * kMs);
  x.sync(5 * kUs, kMs);
  Report r = x.report("download_h100.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  const uint64_t expected = 5 * kMs + copy_ns - pinned_ns(bytes, 55.0);
  EXPECT_NEAR(static_cast<double>(f->impact_ns), static_cast<double>(expected), 30.0 * kUs);
  EXPECT_NE(f->impact_basis.find("device's measured figure"), std::string::npos) << f->impact_basis;
  EXPECT_EQ(f->impact_basis.find("assumed"), std::string::npos) << f->impact_basis;
}

// A pageable download on an idle stream measures this trace's pageable rate: a later one that
// waited for a kernel is split into the kernel and its transfer at that rate, not the device's.
TEST(Impact, PageableRateMeasuredOnAnIdleStream) {
  Trace x("NVIDIA A100-SXM4-40GB");
  const uint64_t bytes = 32ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 12.0);  // this machine's pageable rate
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, copy_ns, bytes, kMs);  // idle stream
  x.launch(10 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 40 * kMs + copy_ns, bytes, 4 * kMs);
  x.sync(5 * kUs, kMs);
  Report r = x.report("download_measured.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  EXPECT_NE(f->impact_basis.find("pageable device-to-host rate measured in this trace"), std::string::npos)
      << f->impact_basis;
  // The waiting one: the 4 ms of host work plus its transfer's speed-up (at the device's 7.2 GB/s
  // it would have been taken for 4.7 ms of transfer, more than the speed-up's 2.8 ms); the idle one:
  // at most its own time.
  const uint64_t speedup = copy_ns - pinned_ns(bytes, 25.0);
  EXPECT_GT(f->impact_ns, 4 * kMs + speedup - 100 * kUs);
  EXPECT_LT(f->impact_ns, 4 * kMs + speedup + copy_ns + 100 * kUs);
}

// Issue example 3: a loop of download-then-host-work; the next iteration's download waits for the
// next kernel, so each download's fix gains its own transfer's speed-up and the host work's overlap.
TEST(Impact, LoopHostWorkOverlapsTheNextIterationsCopies) {
  Trace x("asyncwatch simulated GPU", true);
  const uint64_t bytes = 4ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 1.23);
  for (int i = 0; i < 4; ++i) {
    x.launch(10 * kUs);
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 20 * kMs + copy_ns, bytes, 8 * kMs);
  }
  x.sync(5 * kUs, kMs);
  Report r = x.report("loop.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->count, 4u);
  // Each: 8 ms of host work that overlaps the next kernel (20 ms, longer), plus the speed-up.
  const uint64_t each = copy_ns - pinned_ns(bytes, 50.0);
  EXPECT_GT(f->impact_ns, 4 * each);
  EXPECT_LE(f->impact_ns, 4 * (each + 8 * kMs + 20 * kUs));
  EXPECT_NE(f->impact_basis.find("simulated"), std::string::npos) << f->impact_basis;
  EXPECT_EQ(f->impact_basis.find("measured figure"), std::string::npos) << f->impact_basis;
}

// The overlap loop on the H100 (test_apps/apps/fix_overlap_loop.cu's shape): each iteration a 20 ms
// kernel, a 16 MiB download that waits for it, then host work. Fixed, the host work overlaps the next
// kernel, so each download gains the host work plus its transfer's speed-up while the host work is
// shorter than the stream's work per iteration, and at most that work (the kernel and the transfer)
// when it is longer: the GPU then sets the pace.
TEST(Impact, OverlapLoopIsBoundedByTheStreamsWork) {
  const uint64_t bytes = 16ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 15.8), pinned = pinned_ns(bytes, 55.0);
  for (const uint64_t host : {10 * kMs, 30 * kMs}) {
    Trace x("NVIDIA H100 80GB HBM3");
    for (int i = 0; i < 5; ++i) {
      x.launch(10 * kUs);
      x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 20 * kMs + copy_ns, bytes, host);
    }
    Report r = x.report(host == 10 * kMs ? "overlap_short.awtrace" : "overlap_long.awtrace");
    const Finding* f = find(r, FindingId::PageableAsyncCopy);
    ASSERT_TRUE(f);
    // The first four are settled by the next download's wait, the last by the end of the trace (1 ms
    // after its host work), which the fixed program reaches once the stream's work is done too.
    const uint64_t last = std::min(20 * kMs + copy_ns - 17 * kUs, host + kMs + copy_ns - pinned);
    const uint64_t each = host == 10 * kMs ? host + copy_ns - pinned : 20 * kMs + copy_ns - 17 * kUs;
    EXPECT_NEAR(static_cast<double>(f->impact_ns), static_cast<double>(4 * each + last), 4 * 30.0 * kUs) << host;
  }
}

// Double buffering: each result is waited for with an event synchronize of the previous one, which
// has long completed (it returns at once): that wait settles nothing, so each download's fix gains
// the 8 ms of host work that follows it (overlapping the next kernel), not only its transfer's speed-up.
TEST(Impact, EventSyncThatDidNotWaitSettlesNothing) {
  Trace x;
  const uint64_t bytes = 16ull << 20;
  const uint64_t copy_ns = pinned_ns(bytes, 10.1);
  for (int i = 0; i < 3; ++i) {
    x.launch(10 * kUs);
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 20 * kMs + copy_ns, bytes, 10 * kUs);
    x.b.event(
        kTid, RecordType::Sync,
        TraceBuilder::sync(Api::cudaEventSynchronize, Api::cuEventSynchronize, x.t, x.t + 5 * kUs, 0x77, x.sync_site));
    x.t += 5 * kUs + 8 * kMs;
  }
  Report r = x.report("events.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_TRUE(f);
  EXPECT_GE(f->impact_ns, 3 * (8 * kMs + copy_ns - pinned_ns(bytes, 55.2) - 45 * kUs));
}

// Issue example 4: a hidden or explicit synchronization each step: the GPU stood idle from each
// wait's end to the next launch (2 ms); the last wait, with nothing after it, gains nothing.
TEST(Impact, SyncEachStepGainsTheQueueStall) {
  Trace x;
  for (int i = 0; i < 5; ++i) {
    x.launch(100 * kUs);
    x.sync(6 * kMs, 2 * kMs);
  }
  Report r = x.report("steps.awtrace");
  const Finding* f = find(r, FindingId::ExplicitSync);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->impact_ns, 4 * 2 * kMs);
  EXPECT_NE(f->impact_basis.find("GPU queue stood empty"), std::string::npos) << f->impact_basis;
}

// A synchronization that waited for a flagged call's work (the staged copy's tail: with pinned
// memory it would have waited far less) names it and follows it in the ranking, although it blocked
// longer.
TEST(Impact, SyncCausedByAFlaggedCallIsRankedWithIt) {
  Trace x;
  const uint64_t bytes = 64ull << 20;
  for (int i = 0; i < 3; ++i) {
    x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 20 * kMs, bytes, 10 * kUs);
    x.sync(40 * kMs, 50 * kUs);
  }
  // Synchronizations elsewhere that gain more than the caused one (about 1 ms each but the last):
  // without the rule they would come between the copy and the synchronization it caused.
  const uint32_t other = x.b.stack(kTid, {0x404000, 0x409000});
  for (int i = 0; i < 3; ++i) {
    x.launch(10 * kUs);
    x.sync(5 * kMs, kMs, other);
  }
  Report r = x.report("caused.awtrace");
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].id, FindingId::PageableAsyncCopy);
  EXPECT_EQ(r.findings[1].id, FindingId::ExplicitSync);
  EXPECT_EQ(r.findings[1].blocked.total(), 120 * kMs);
  EXPECT_GT(r.findings[1].blocked.total(), r.findings[0].blocked.total());
  EXPECT_EQ(r.findings[1].caused_by, r.findings[0].key);
  EXPECT_LT(r.findings[1].impact_ns, r.findings[2].impact_ns);
  EXPECT_TRUE(r.findings[2].caused_by.empty());
  std::string text;
  {
    std::ostringstream out;
    write_report_text(out, r, TextStyle{});
    text = out.str();
  }
  EXPECT_NE(text.find("waited for finding #1 (pageable-async-copy"), std::string::npos) << text;
  EXPECT_NE(text.find("(waited for #1)"), std::string::npos) << text;
  EXPECT_NE(text.find("severity"), std::string::npos) << text;
  nlohmann::json j = nlohmann::json::parse(report_json_text(r));
  EXPECT_EQ(j["findings"][0]["caused_by"], nullptr);
  EXPECT_TRUE(j["findings"][1]["caused_by"].is_string());
  EXPECT_EQ(j["findings"][0]["impact_ns"].get<uint64_t>(), r.findings[0].impact_ns);
  EXPECT_TRUE(j["findings"][0]["impact_basis"].is_string());
}

// Fixes that move time (a first launch's module loading) or change no timing gain nothing, and say why.
TEST(Impact, FirstLaunchMovesItsTime) {
  Trace x;
  x.b.event(kTid, RecordType::Launch,
            TraceBuilder::launch(Api::cudaLaunchKernel, x.kernel, x.t, x.t + 2 * kMs, tf::kFlagFirstLaunch, kStream,
                                 x.launch_site));
  x.t += 3 * kMs;
  Report r = x.report("first.awtrace");
  const Finding* f = find(r, FindingId::BlockingLaunch);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->impact_ns, 0u);
  EXPECT_NE(f->impact_basis.find("moves this time"), std::string::npos) << f->impact_basis;
}

}  // namespace
