// Each finding rule on crafted traces.
#include "findings/analysis.h"
#include "findings/call_groups.h"
#include "findings/hidden_sync.h"
#include "report/reports.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

constexpr uint32_t kTid = 7;

struct Fixture {
  TraceBuilder b{100};
  uint64_t t;
  uint32_t site1, site2;
  Fixture() {
    b.thread_info(kTid, "main");
    t = b.header().start_monotonic_ns + kMs;
    site1 = b.stack(kTid, {0x401000, 0x409000});
    site2 = b.stack(kTid, {0x402000, 0x409000});
  }
  template <class R>
  void add(RecordType type, const R& r, uint64_t advance) {
    b.event(kTid, type, r);
    t += advance;
  }
  void copy(Direction d, MemoryKind src, MemoryKind dst, uint64_t blocked, uint64_t bytes, uint32_t flags = 0,
            uint32_t stack = 0, uint64_t stream = 0x5000, Api api = Api::cudaMemcpyAsync) {
    add(RecordType::Copy,
        TraceBuilder::copy(api, Api::cuMemcpyAsync, d, src, dst, t, t + blocked, bytes, flags, stream,
                           stack ? stack : site1),
        blocked + kUs);
  }
  void launch(uint32_t kernel, uint64_t blocked, uint32_t flags = 0, uint64_t stream = 0x5000, uint32_t stack = 0) {
    add(RecordType::Launch, TraceBuilder::launch(Api::cudaLaunchKernel, kernel, t, t + blocked, flags, stream, stack),
        blocked + kUs);
  }
  // A call before the launches, so that none of them is the process's first call (context-init).
  void warm_up() {
    add(RecordType::MemoryOp,
        TraceBuilder::memory_op(Api::cudaFree, Api::cuMemFree_v2, t, t + 100 * kMs, 0, MemoryKind::Device, site2),
        101 * kMs);
  }
  Report report(const std::string& name, Options o = Options{}) { return analyze_traces({write_trace(b, name)}, o); }
};

const Finding* find(const Report& r, FindingId id, Cause cause = Cause::None, bool any_cause = true) {
  for (const auto& f : r.findings)
    if (f.id == id && (any_cause || f.cause == cause)) return &f;
  return nullptr;
}

}  // namespace

TEST(Findings, PageableDeviceToHostWaitedForTheStreamKernels) {
  Fixture x;
  uint32_t k1 = x.b.string(kTid, "_Z5dummyv");
  uint32_t k2 = x.b.string(kTid, "_Z5otherPf");
  x.launch(k1, 3 * kUs);
  x.launch(k2, 3 * kUs);
  x.launch(k1, 3 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 1740 * kMs, 2ull << 30,
         tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn);
  Report r = x.report("p-dtoh.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cause, Cause::WaitedForStream);
  EXPECT_EQ(f->waited_for.at("dummy"), 2u);
  EXPECT_EQ(f->waited_for.at("other"), 1u);
  EXPECT_EQ(f->evidence_checked, 1u);
  EXPECT_EQ(f->completed_at_return, 1u);
  EXPECT_EQ(f->api, "cudaMemcpyAsync");
  EXPECT_EQ(f->bytes, 2ull << 30);
  EXPECT_EQ(f->blocked.total(), 1740 * kMs);
  EXPECT_NE(
      finding_message(*f).find("cudaMemcpyAsync (device to host, 2.0 GiB) blocked 1.74 s: the destination is "
                               "pageable host memory, so the copy waited for the stream (kernels dummy x2, other)"),
      std::string::npos)
      << finding_message(*f);
  EXPECT_EQ(r.summary.async_calls, 4u);
  EXPECT_EQ(r.summary.async_calls_blocking, 1u);
  EXPECT_EQ(r.summary.async_calls_async, 3u);
}

// A copy that waited for a kernel only XLA's autotuner launches was made inside that phase: a note
// from what the trace records, with or without the framework's symbols (issue 44, item 9).
TEST(Findings, WaitedForAnAutotunerKernelIsThatFrameworkPhase) {
  Fixture x;
  uint32_t redzone = x.b.string(kTid, "_ZN15stream_executor3gpu26RedzoneAllocatorKernelImplEv");
  x.launch(redzone, 3 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 50 * kMs, 8,
         tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn);
  Report r = x.report("p-autotune.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->framework_phase, "XLA autotuning");
  EXPECT_EQ(finding_severity(*f), Severity::Note);
  EXPECT_NE(finding_message(*f).find("(made inside XLA autotuning: the framework's one-time work, apart from"),
            std::string::npos)
      << finding_message(*f);
  // The same copy after an ordinary kernel is the user's warning.
  Fixture y;
  y.launch(y.b.string(kTid, "_Z5dummyv"), 3 * kUs);
  y.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 50 * kMs, 8,
         tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn);
  Report r2 = y.report("p-steady.awtrace");
  const Finding* g = find(r2, FindingId::PageableAsyncCopy);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->framework_phase.empty());
  EXPECT_EQ(finding_severity(*g), Severity::Warning);
}

TEST(Findings, StreamSyncClearsTheKernelsWaitedFor) {
  Fixture x;
  uint32_t k1 = x.b.string(kTid, "_Z5dummyv");
  x.launch(k1, 3 * kUs);
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + kMs),
        2 * kMs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 1 * kMs, 1 << 20);
  Report r = x.report("p-idle.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->waited_for.empty());
}

TEST(Findings, PageableHostToDeviceIsStagedAndSmallOnesAreInline) {
  Fixture x;
  x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 570 * kMs, 2ull << 30);
  x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 200 * kUs, 64 * 1024, 0, x.site2);
  Report r = x.report("p-htod.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].cause, Cause::Staged);
  EXPECT_EQ(r.findings[0].direction, Direction::HtoD);
  EXPECT_EQ(r.summary.async_calls_blocking, 1u);
  // A lower inline limit flags the small one too.
  Options o;
  o.inline_htod_bytes = 4096;
  Report r2 = analyze_traces({tmp_path("p-htod.awtrace")}, o);
  EXPECT_EQ(r2.findings.size(), 2u);
}

TEST(Findings, PinnedCopiesAndShortBlocksAreNotFlagged) {
  Fixture x;
  x.copy(Direction::HtoD, MemoryKind::Pinned, MemoryKind::Device, 45 * kUs, 2ull << 30);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pinned, 21 * kUs, 2ull << 30);
  Report r = x.report("pinned.awtrace");
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.summary.async_calls, 2u);
  EXPECT_EQ(r.summary.async_calls_async, 2u);
}

TEST(Findings, SynchronousCopiesBelowTheThresholdAreNotes) {
  // A 4-byte pageable D2H is synchronous by the CUDA rules whatever its duration:
  // reported, a note below --min-blocked-us, a warning when one call reaches it.
  Fixture x;
  for (int i = 0; i < 20; ++i) x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 30 * kUs, 4);
  x.copy(Direction::HtoH, MemoryKind::Pageable, MemoryKind::Pageable, 5 * kUs, 64, 0, x.site2);
  Report r = x.report("below.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 20u);
  EXPECT_EQ(finding_severity(*f), Severity::Note);
  EXPECT_EQ(f->at_threshold, 0u);
  const Finding* h = find(r, FindingId::HostToHostAsyncCopy);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(finding_severity(*h), Severity::Note);
  EXPECT_EQ(r.summary.async_calls_blocking, 21u);
  // One call at the threshold (>=) makes the group a warning.
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 50 * kUs, 4);
  Report r2 = x.report("below2.awtrace");
  f = find(r2, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 21u);
  EXPECT_EQ(finding_severity(*f), Severity::Warning);
  // A lower threshold makes the first trace's finding a warning too.
  Options o;
  o.min_blocked_ns = 10 * kUs;
  Report r3 = analyze_traces({tmp_path("below.awtrace")}, o);
  EXPECT_EQ(finding_severity(*find(r3, FindingId::PageableAsyncCopy)), Severity::Warning);
}

TEST(Findings, BlockedCallsWithoutAFindingAreNotCountedAsBlocking) {
  // A pinned copy behind a busy stream blocked 2 ms: asynchronous as documented, no rule applies,
  // so the summary does not count it as blocking (async_calls_blocking = calls with a finding).
  Fixture x;
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pinned, 2 * kMs, 1 << 20);
  x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 300 * kUs, 4096);   // inline
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 3 * kMs, 1 << 20);  // flagged
  x.add(RecordType::HostFuncEnqueue,
        TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 1, x.t, x.t + 5 * kMs), 6 * kMs);
  Report r = x.report("unflagged.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.summary.async_calls, 4u);
  EXPECT_EQ(r.summary.async_calls_blocking, 1u);
  EXPECT_EQ(r.summary.async_calls_async, 3u);
  EXPECT_EQ(r.summary.blocked_ns_total, 3 * kMs);
  EXPECT_EQ(r.processes[0].blocked_ns_total, 3 * kMs);
}

TEST(Findings, CapturedCallsAreNeverBlocking) {
  Fixture x;
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 5 * kMs, 1 << 20, tf::kFlagCaptureActive);
  x.launch(0, 5 * kMs, tf::kFlagCaptureActive);
  Report r = x.report("captured.awtrace");
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.summary.async_calls, 2u);
  EXPECT_EQ(r.summary.async_calls_blocking, 0u);
}

TEST(Findings, SynchronousApisAreNotAsyncFindings) {
  Fixture x;
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 5 * kMs, 1 << 20, tf::kFlagSynchronousApi, 0,
         0x5000, Api::cudaMemcpy);
  Report r = x.report("syncapi.awtrace");
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.summary.async_calls, 0u);
}

TEST(Findings, HostToHostManagedAndMemset) {
  Fixture x;
  x.copy(Direction::HtoH, MemoryKind::Pageable, MemoryKind::Pinned, 2 * kMs, 8 << 20);
  x.copy(Direction::DtoH, MemoryKind::Managed, MemoryKind::Pinned, 3 * kMs, 8 << 20, 0, x.site2);
  x.add(RecordType::Memset,
        TraceBuilder::copy(Api::cudaMemset, Api::cuMemsetD8_v2, Direction::Unknown, MemoryKind::Unknown,
                           MemoryKind::Managed, x.t, x.t + kMs, 4096, 0, 0, x.site1, tf::StreamKind::LegacyDefault),
        2 * kMs);
  Report r = x.report("h2h.awtrace");
  const Finding* h = find(r, FindingId::HostToHostAsyncCopy);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->host_memory, MemoryKind::Pageable);
  const Finding* m = find(r, FindingId::ManagedMemoryCopy);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->host_memory, MemoryKind::Managed);
  const Finding* s = find(r, FindingId::BlockingMemset);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->cause, Cause::ManagedMemory);
}

TEST(Findings, BlockingLaunchCauses) {
  Fixture x;
  uint32_t k = x.b.string(kTid, "_Z4stepv");
  x.warm_up();
  x.launch(k, 12 * kMs, tf::kFlagFirstLaunch, 0x5000, x.site1);  // first launch
  for (int i = 0; i < 520; ++i) x.launch(k, 3 * kUs);
  x.launch(k, 300 * kUs, 0, 0x5000, x.site2);  // queue full
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + kUs),
        2 * kUs);
  x.launch(k, 300 * kUs, 0, 0x5000, x.site2);  // after a sync: unknown
  Report r = x.report("launch.awtrace");
  int causes = 0;
  for (const auto& f : r.findings) {
    if (f.id != FindingId::BlockingLaunch) continue;
    ++causes;
    EXPECT_EQ(f.kernel, "step");
    if (f.cause == Cause::LaunchQueueFull) {
      EXPECT_EQ(f.outstanding_launches_max, 521u);
    }
  }
  EXPECT_EQ(causes, 3);
  EXPECT_NE(find(r, FindingId::BlockingLaunch, Cause::FirstLaunch, false), nullptr);
  EXPECT_NE(find(r, FindingId::BlockingLaunch, Cause::LaunchQueueFull, false), nullptr);
  EXPECT_NE(find(r, FindingId::BlockingLaunch, Cause::Unknown, false), nullptr);
  // With a deeper queue the second one is "unknown" too.
  Options o;
  o.launch_queue_depth = 1024;
  Report r2 = analyze_traces({tmp_path("launch.awtrace")}, o);
  EXPECT_EQ(find(r2, FindingId::BlockingLaunch, Cause::LaunchQueueFull, false), nullptr);
}

TEST(Findings, LaunchBlockingEnvironment) {
  Fixture x;
  x.b.cuda_env("CUDA_LAUNCH_BLOCKING=1;CUDA_MODULE_LOADING=EAGER");
  x.warm_up();
  x.launch(0, 2 * kMs, tf::kFlagFirstLaunch);
  Report r = x.report("lbenv.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].cause, Cause::LaunchBlockingEnv);
}

TEST(Findings, FirstLaunchMentionsModuleLoading) {
  Fixture x;
  x.b.cuda_env("CUDA_MODULE_LOADING=LAZY");
  x.warm_up();
  x.launch(0, 2 * kMs, tf::kFlagFirstLaunch);
  Report r = x.report("lazy.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(finding_message(r.findings[0]).find("CUDA_MODULE_LOADING=LAZY"), std::string::npos);
}

TEST(Findings, LongHostCallbackJoinsEnqueueAndRunAcrossThreads) {
  Fixture x;
  // The run record lies in another thread's block *before* the enqueue in file order.
  x.b.event(99, RecordType::HostFuncRun, TraceBuilder::run(5, x.t + 10 * kUs, x.t + 40 * kMs));
  x.add(RecordType::HostFuncEnqueue,
        TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 5, x.t, x.t + 20 * kUs, 0x5000, x.site1),
        50 * kMs);
  x.b.event(99, RecordType::HostFuncRun, TraceBuilder::run(6, x.t + 2 * kMs, x.t + 2 * kMs + 10 * kUs));  // short
  x.add(RecordType::HostFuncEnqueue,
        TraceBuilder::enqueue(Api::cudaStreamAddCallback, Api::cuStreamAddCallback, 6, x.t, x.t + 5 * kUs, 0x5000,
                              x.site2),
        5 * kMs);
  Report r = x.report("callback.awtrace");
  const Finding* l = find(r, FindingId::LongHostCallback);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->count, 1u);
  EXPECT_EQ(l->blocked.total(), 40 * kMs - 10 * kUs);
  EXPECT_EQ(l->drained_before_return, 1u);
  const Finding* d = find(r, FindingId::DeprecatedStreamCallback);
  ASSERT_NE(d, nullptr);
  EXPECT_NE(finding_message(*d).find("use cudaLaunchHostFunc"), std::string::npos);
}

TEST(Findings, ExplicitSyncPerCallSiteWithThreshold) {
  Fixture x;
  for (int i = 0; i < 4; ++i)
    x.add(
        RecordType::Sync,
        TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + 100 * kUs, 0x5000, x.site1),
        200 * kUs);
  x.add(RecordType::Sync,
        TraceBuilder::sync(Api::cudaEventSynchronize, Api::cuEventSynchronize, x.t, x.t + 10 * kUs, 0x77, x.site2),
        20 * kUs);
  Report r = x.report("sync.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);  // the event sync's 10 us total is below 50 us
  EXPECT_EQ(r.findings[0].id, FindingId::ExplicitSync);
  EXPECT_EQ(r.findings[0].count, 4u);
  EXPECT_EQ(r.findings[0].blocked.total(), 400 * kUs);
}

TEST(Findings, ImplicitSyncOnlyForChurn) {
  Fixture x;
  x.b.module(kTid, "/work/app/seed", 0, 0x400000, 0x500000);  // the program's own code: user call sites
  uint32_t site3 = x.b.stack(kTid, {0x403000, 0x409000});
  uint32_t pool_site = x.b.stack(kTid, {0x404000, 0x409000});
  uint32_t free_site = x.b.stack(kTid, {0x405000, 0x409000});
  auto op = [&](Api api, Api driver, uint64_t bytes, uint64_t address, uint32_t stack) {
    auto r = TraceBuilder::memory_op(api, driver, x.t, x.t + 100 * kUs, bytes, MemoryKind::Device, stack);
    r.address = address;
    x.add(RecordType::MemoryOp, r, 200 * kUs);
  };
  // Churn: one buffer allocated, freed and allocated again, each time at another address (whether
  // the driver hands the same address back does not matter).
  for (uint64_t i = 0; i < 10; ++i) {
    op(Api::cudaMalloc, Api::cuMemAlloc_v2, 1024, 0x7f0000000000 + (i << 20), x.site1);
    op(Api::cudaFree, Api::cuMemFree_v2, 0, 0x7f0000000000 + (i << 20), free_site);
  }
  // A pool: ten buffers of one size allocated in a loop and all kept alive.
  for (uint64_t i = 0; i < 10; ++i)
    op(Api::cudaMalloc, Api::cuMemAlloc_v2, 1024, 0x7c0000000000 + (i << 20), pool_site);
  for (int i = 0; i < 9; ++i) op(Api::cudaHostRegister, Api::cuMemHostRegister_v2, 1024, 0x7e0000000000, x.site2);
  // A caching pool growing from one line (each request larger) and released block by block.
  for (uint64_t i = 1; i <= 65; ++i)
    op(Api::cudaMalloc, Api::cuMemAlloc_v2, i << 16, 0x7d0000000000 + (i << 20), site3);
  for (uint64_t i = 1; i <= 65; ++i) op(Api::cudaFree, Api::cuMemFree_v2, 0, 0x7d0000000000 + (i << 20), site3);
  // Without a call site: never reported (every call of the API would look like one site).
  for (int i = 0; i < 20; ++i) op(Api::cudaFree, Api::cuMemFree_v2, 0, 0x7f0000000000, 0);
  Report r = x.report("implicit.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].id, FindingId::ImplicitSync);
  EXPECT_EQ(r.findings[0].api, "cudaMalloc");
  EXPECT_EQ(r.findings[0].count, 10u);
  EXPECT_EQ(r.findings[0].repeated_calls, 9u);
  EXPECT_NE(finding_message(r.findings[0]).find("9 allocating again a buffer of a size freed since"), std::string::npos)
      << finding_message(r.findings[0]);
  // Freeing one address again and again (the driver handed it back each time) repeats too.
  Fixture y;
  y.b.module(kTid, "/work/app/seed", 0, 0x400000, 0x500000);
  uint32_t y_free = y.b.stack(kTid, {0x405000, 0x409000});
  for (int i = 0; i < 10; ++i) {
    auto a =
        TraceBuilder::memory_op(Api::cudaMalloc, Api::cuMemAlloc_v2, y.t, y.t + kUs, 4096, MemoryKind::Device, y.site1);
    a.address = 0x7f0000000000;
    y.add(RecordType::MemoryOp, a, 2 * kUs);
    auto f = TraceBuilder::memory_op(Api::cudaFree, Api::cuMemFree_v2, y.t, y.t + kUs, 0, MemoryKind::Device, y_free);
    f.address = 0x7f0000000000;
    y.add(RecordType::MemoryOp, f, 2 * kUs);
  }
  Report ry = y.report("implicit-same-address.awtrace");
  ASSERT_EQ(ry.findings.size(), 2u);
  for (const Finding& f : ry.findings) EXPECT_EQ(f.repeated_calls, 9u) << f.api;
}

TEST(Findings, ImplicitSyncNotInLibraryCode) {
  // A framework's caching allocator (no frame of the program's own code) is not a loop to hoist.
  Fixture x;
  x.b.module(kTid, "/usr/lib/x86_64-linux-gnu/libc10_cuda.so", 0x400000, 0x400000, 0x500000);
  for (int i = 0; i < 20; ++i)
    x.add(RecordType::MemoryOp,
          TraceBuilder::memory_op(Api::cudaMalloc, Api::cuMemAlloc_v2, x.t, x.t + 100 * kUs, 1024, MemoryKind::Device,
                                  x.site1),
          200 * kUs);
  Report r = x.report("implicit-lib.awtrace");
  EXPECT_EQ(find(r, FindingId::ImplicitSync), nullptr);
}

TEST(Findings, InFlightCallsAreReported) {
  // Killed inside a copy, which the trace holds as published before the call.
  Fixture x;
  x.launch(0, 3 * kUs);
  tf::CopyRecord c{};
  c.api = static_cast<uint16_t>(Api::cudaMemcpyAsync);
  c.flags = tf::kFlagInFlight;
  c.start_ns = x.t;
  x.b.add(kTid, RecordType::Copy, c);
  // Another thread's record 1.2 s later: the trace's end.
  x.b.thread_info(8, "watchdog");
  x.b.event(8, RecordType::Sync,
            TraceBuilder::sync(Api::cudaEventQuery, Api::cuEventQuery, x.t + 1200 * kMs, x.t + 1200 * kMs + kUs));
  x.b.crashed();
  Report r = x.report("inflight.awtrace");
  const Finding* f = find(r, FindingId::InFlightCall);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->api, "cudaMemcpyAsync");
  EXPECT_EQ(f->count, 1u);
  EXPECT_EQ(f->blocked.total(), 1200 * kMs + kUs);
  EXPECT_FALSE(f->process_ended_cleanly);
  EXPECT_NE(finding_message(*f).find("was in flight when the process ended (killed or crashed): it had been running at "
                                     "least 1.20 s"),
            std::string::npos)
      << finding_message(*f);
  EXPECT_EQ(r.summary.async_calls, 1u);  // the launch; the in-flight call has no result to judge
}

TEST(Findings, InFlightCallsHaveTheirCallSite) {
  // A call in flight names its call site: the stack the preload took before the
  // call, or else the caller's return address the record holds in end_ns (a one-frame stack).
  Fixture x;
  x.launch(0, 3 * kUs);
  tf::CopyRecord c{};  // killed in a pageable copy: its stack was taken before the call
  c.api = static_cast<uint16_t>(Api::cudaMemcpyAsync);
  c.flags = tf::kFlagInFlight | tf::kFlagStackCaptured;
  c.stack_id = x.site1;
  c.start_ns = x.t;
  c.end_ns = 0x401000;  // the caller, also the stack's first frame
  x.b.add(kTid, RecordType::Copy, c);
  x.b.thread_info(8, "waiter");
  tf::SyncRecord s{};  // another thread in a synchronization: only its caller
  s.api = static_cast<uint16_t>(Api::cudaStreamSynchronize);
  s.flags = tf::kFlagInFlight;
  s.start_ns = x.t + 5 * kMs;
  s.end_ns = 0x403210;
  x.b.add(8, RecordType::Sync, s);
  tf::SyncRecord old{};  // as written before the caller was stored: no site
  old.api = static_cast<uint16_t>(Api::cudaDeviceSynchronize);
  old.flags = tf::kFlagInFlight;
  old.start_ns = x.t + 6 * kMs;
  x.b.thread_info(9, "old");
  x.b.add(9, RecordType::Sync, old);
  x.b.crashed();
  Report r = x.report("inflight-sites.awtrace");
  const Finding *copy = nullptr, *sync = nullptr, *none = nullptr;
  for (const auto& f : r.findings) {
    if (f.id != FindingId::InFlightCall) continue;
    if (f.api == "cudaMemcpyAsync") copy = &f;
    if (f.api == "cudaStreamSynchronize") sync = &f;
    if (f.api == "cudaDeviceSynchronize") none = &f;
  }
  ASSERT_NE(copy, nullptr);
  ASSERT_NE(sync, nullptr);
  ASSERT_NE(none, nullptr);
  ASSERT_EQ(copy->stack.size(), 2u);  // the whole stack
  EXPECT_EQ(copy->stack[0].address, 0x401000u);
  EXPECT_EQ(copy->stack[1].address, 0x409000u);
  ASSERT_EQ(sync->stack.size(), 1u);  // the one frame of its caller
  EXPECT_EQ(sync->stack[0].address, 0x403210u);
  EXPECT_TRUE(sync->call_site_known);
  EXPECT_EQ(sync->call_site.address, 0x403210u);
  EXPECT_TRUE(none->stack.empty());
  EXPECT_FALSE(none->call_site_known);
  // Two calls of one API at two callers are two findings; the site is part of the group.
  EXPECT_NE(copy->call_site.address, sync->call_site.address);
}

TEST(Findings, FirstCallLaunchIsContextInit) {
  // The process's first CUDA call is a launch: the runtime created the context in it.
  Fixture x;
  uint32_t k = x.b.string(kTid, "_Z4stepv");
  x.launch(k, 100 * kMs, tf::kFlagFirstLaunch, 0x5000, x.site1);
  x.launch(k, 3 * kUs);
  Report r = x.report("ctxinit.awtrace");
  const Finding* f = find(r, FindingId::BlockingLaunch, Cause::ContextInit, false);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->context_creation_visible);
  EXPECT_NE(finding_message(*f).find("the process's first CUDA call, so the runtime created the CUDA context in it"),
            std::string::npos)
      << finding_message(*f);
  // The same launch after a warm-up call is a first launch (module loading) only.
  Fixture w;
  uint32_t k2 = w.b.string(kTid, "_Z4stepv");
  w.warm_up();
  w.launch(k2, 2 * kMs, tf::kFlagFirstLaunch, 0x5000, w.site1);
  Report r2 = w.report("ctxwarm.awtrace");
  EXPECT_EQ(find(r2, FindingId::BlockingLaunch, Cause::ContextInit, false), nullptr);
  EXPECT_NE(find(r2, FindingId::BlockingLaunch, Cause::FirstLaunch, false), nullptr);
}

TEST(Findings, FirstCallAtTheDriverSaysTheCreationIsNotInTheTrace) {
  // The static runtime: asyncwatch sees cuLaunchKernel only, after the context was created.
  Fixture x;
  x.add(RecordType::Launch,
        TraceBuilder::launch(Api::cuLaunchKernel, 0, x.t, x.t + 73 * kUs, tf::kFlagFirstLaunch, 0x5000, x.site1), kMs);
  Report r = x.report("ctxstatic.awtrace");
  const Finding* f = find(r, FindingId::BlockingLaunch, Cause::ContextInit, false);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->context_creation_visible);
  EXPECT_NE(finding_message(*f).find("the creation's time is not in this figure"), std::string::npos);
  ASSERT_EQ(r.processes.size(), 1u);
  bool noted = false;
  for (const auto& n : r.processes[0].notes)
    noted = noted || n.find("the first CUDA call in the trace is cuLaunchKernel") == 0;
  EXPECT_TRUE(noted);
}

TEST(Findings, SharesOfWallTimeArePerThread) {
  // Four threads block 200 ms each at once in a 300 ms process: 67 %, not 267 %.
  TraceBuilder b(300);
  uint64_t t0 = b.header().start_monotonic_ns;
  b.end_at(t0 + 300 * kMs);
  uint32_t s = 0;
  for (uint32_t tid = 1; tid <= 4; ++tid) {
    b.thread_info(tid, "worker");
    if (!s) s = b.stack(tid, {0x401000});
    b.event(tid, RecordType::MemoryOp,
            TraceBuilder::memory_op(Api::cudaFree, Api::cuMemFree_v2, t0 + tid * kUs, t0 + tid * kUs + kUs, 0,
                                    MemoryKind::Device));
    b.event(tid, RecordType::Launch,
            TraceBuilder::launch(Api::cudaLaunchKernel, 0, t0 + 10 * kMs, t0 + 210 * kMs, 0, 0x5000 + tid, s));
  }
  Report r = analyze_traces({write_trace(b, "shares.awtrace")}, Options{});
  const Finding* f = find(r, FindingId::BlockingLaunch);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 4u);
  EXPECT_EQ(f->threads, 4u);
  EXPECT_NEAR(f->share_of_wall, 200.0 / 300.0, 1e-9);
}

TEST(Findings, WaitedForFollowsStreamWaitEvent) {
  // A pageable D2H on stream B waits, through cudaStreamWaitEvent, for a kernel on A.
  Fixture x;
  uint32_t k = x.b.string(kTid, "_Z12sleep_kernelx");
  x.launch(k, 3 * kUs, 0, 0xA000);
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaStreamWaitEvent, Api::cuStreamWaitEvent, x.t, x.t + kUs, 0xB000),
        2 * kUs);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 100 * kMs, 1 << 20, 0, 0, 0xB000);
  Report r = x.report("waitevent.awtrace");
  const Finding* f = find(r, FindingId::PageableAsyncCopy);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->waited_for.at("sleep_kernel"), 1u);
  EXPECT_EQ(f->event_waits, 1u);
  EXPECT_NE(finding_message(*f).find("cudaStreamWaitEvent"), std::string::npos) << finding_message(*f);
  // Without the wait, stream B waited for nothing the trace shows.
  Fixture y;
  uint32_t k2 = y.b.string(kTid, "_Z12sleep_kernelx");
  y.launch(k2, 3 * kUs, 0, 0xA000);
  y.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 100 * kMs, 1 << 20, 0, 0, 0xB000);
  Report r2 = y.report("nowaitevent.awtrace");
  ASSERT_NE(find(r2, FindingId::PageableAsyncCopy), nullptr);
  EXPECT_TRUE(find(r2, FindingId::PageableAsyncCopy)->waited_for.empty());
}

TEST(Findings, HostCallbackSitesWithRunTimes) {
  // Every callback site, with min/median/max; a warning only above the threshold.
  Fixture x;
  const uint64_t runs[] = {24 * kUs, 45 * kUs, 85 * kUs};
  for (uint64_t i = 0; i < 3; ++i) {
    x.b.event(99, RecordType::HostFuncRun, TraceBuilder::run(10 + i, x.t + 10 * kUs, x.t + 10 * kUs + runs[i]));
    x.add(RecordType::HostFuncEnqueue,
          TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 10 + i, x.t, x.t + 5 * kUs, 0x5000,
                                x.site1),
          kMs);
  }
  x.b.event(99, RecordType::HostFuncRun, TraceBuilder::run(20, x.t + 10 * kUs, x.t + 10 * kUs + 2 * kMs));
  x.add(RecordType::HostFuncEnqueue,
        TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 20, x.t, x.t + 5 * kUs, 0x5000, x.site2),
        5 * kMs);
  Report r = x.report("hostfn.awtrace");
  const Finding *short_site = nullptr, *long_site = nullptr;
  for (const auto& f : r.findings)
    if (f.id == FindingId::LongHostCallback) (f.count == 3 ? short_site : long_site) = &f;
  ASSERT_NE(short_site, nullptr);
  ASSERT_NE(long_site, nullptr);
  EXPECT_EQ(finding_severity(*short_site), Severity::Note);
  EXPECT_EQ(short_site->blocked.min(), 24 * kUs);
  EXPECT_EQ(short_site->blocked.median(), 45 * kUs);
  EXPECT_EQ(short_site->blocked.max(), 85 * kUs);
  EXPECT_NE(finding_message(*short_site).find("min 24.0 us, median 45.0 us, max 85.0 us"), std::string::npos)
      << finding_message(*short_site);
  EXPECT_EQ(finding_severity(*long_site), Severity::Warning);
}

TEST(Findings, PageableCopiesHaveAnImpactWithItsBasis) {
  // Pinned copies of the same direction in the trace give the fixed call's cost; the trace names no
  // device, so the pinned rate is the assumed one, and the finding says so (test_impact.cpp has the
  // model's examples).
  Fixture x;
  for (int i = 0; i < 3; ++i) x.copy(Direction::HtoD, MemoryKind::Pinned, MemoryKind::Device, 20 * kUs, 16 << 20);
  for (int i = 0; i < 2; ++i)
    x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 5 * kMs, 16 << 20, 0, x.site2);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 4 * kMs, 16 << 20, 0, x.site2);
  Report r = x.report("impact.awtrace");
  const Finding *h = nullptr, *d = nullptr;
  for (const auto& f : r.findings)
    if (f.id == FindingId::PageableAsyncCopy) (f.direction == Direction::HtoD ? h : d) = &f;
  ASSERT_NE(h, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_GT(h->impact_ns, 0u);
  EXPECT_LE(h->impact_ns, h->blocked.total());
  EXPECT_NE(h->impact_basis.find("assumed"), std::string::npos) << h->impact_basis;
  EXPECT_EQ(finding_message(*h).find("pinning would save"), std::string::npos) << finding_message(*h);
  EXPECT_LE(d->impact_ns, d->blocked.total());
  EXPECT_FALSE(d->impact_basis.empty());
}

TEST(Findings, SynchronousDeviceMemsetIsNotAFinding) {
  // cudaMemset of device memory may block; the caller chose a synchronous API and
  // the trace shows no cause: no finding. Host targets and the Async form stay findings.
  Fixture x;
  auto memset = [&](Api api, MemoryKind target, uint32_t flags, uint32_t stack) {
    x.add(RecordType::Memset,
          TraceBuilder::copy(api, Api::cuMemsetD8_v2, Direction::Unknown, MemoryKind::Unknown, target, x.t,
                             x.t + 68 * kUs, 64 << 20, flags, 0, stack, tf::StreamKind::LegacyDefault),
          kMs);
  };
  memset(Api::cudaMemset, MemoryKind::Device, tf::kFlagSynchronousApi, x.site1);
  memset(Api::cudaMemset, MemoryKind::Pinned, tf::kFlagSynchronousApi, x.site2);
  memset(Api::cudaMemsetAsync, MemoryKind::Device, 0, x.site2);
  Report r = x.report("memset-sync.awtrace");
  int memsets = 0;
  for (const auto& f : r.findings)
    if (f.id == FindingId::BlockingMemset) {
      ++memsets;
      EXPECT_NE(f.call_site.address, 0x401000u);
    }
  EXPECT_EQ(memsets, 2);
}

TEST(Findings, RankedByTotalBlockedTimeAndGroupedByCallSite) {
  Fixture x;
  for (int i = 0; i < 3; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 1 * kMs, 1 << 20, 0, x.site1);
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 5 * kMs, 1 << 20, 0, x.site2);
  Report r = x.report("rank.awtrace");
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].call_site.address, 0x402000u);
  EXPECT_EQ(r.findings[0].count, 1u);
  EXPECT_EQ(r.findings[1].count, 3u);
  EXPECT_EQ(r.findings[1].blocked.median(), 1 * kMs);
  EXPECT_GT(r.findings[0].share_of_wall, 0.0);
}

TEST(Findings, ProcessesMergeByCallSite) {
  std::vector<std::string> paths;
  for (uint64_t pid : {200u, 201u}) {
    TraceBuilder b(pid);
    b.module(1, "/nonexistent/app", 0, 0x400000, 0x500000);
    uint32_t s = b.stack(1, {0x401000});
    uint64_t t = b.header().start_monotonic_ns;
    b.event(1, RecordType::Copy,
            TraceBuilder::copy(Api::cudaMemcpyAsync, Api::cuMemcpyDtoHAsync_v2, Direction::DtoH, MemoryKind::Device,
                               MemoryKind::Pageable, t, t + pid * kUs, 1 << 20, 0, 0x5000, s));
    paths.push_back(write_trace(b, "merge-" + std::to_string(pid) + ".awtrace"));
  }
  Report r = analyze_traces(paths, Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].count, 2u);
  ASSERT_EQ(r.findings[0].processes.size(), 2u);
  EXPECT_EQ(r.findings[0].processes[1].blocked_ns_total, 201 * kUs);
  EXPECT_EQ(r.processes.size(), 2u);
}

// Findings are merged by key once and ranked through precomputed sort keys, in place.
TEST(FindingSet, MergesByKeyAndRanksByBlockedTimeThenIdFileLine) {
  FindingSet set;
  auto make = [](FindingId id, const char* file, int line, uint64_t blocked, uint64_t pid) {
    Finding f;
    f.id = id;
    f.api = "cudaMemcpyAsync";
    f.call_site_known = true;
    f.call_site.file = file;
    f.call_site.line = line;
    f.count = 1;
    f.blocked.add(blocked);
    f.processes.push_back(PerProcess{pid, 1, blocked});
    f.set_key();
    return f;
  };
  set.add(make(FindingId::ExplicitSync, "b.cu", 3, 5, 1));
  set.add(make(FindingId::PageableAsyncCopy, "a.cu", 9, 7, 1));
  set.add(make(FindingId::ExplicitSync, "b.cu", 3, 4, 2));  // same key: merged (9 in all)
  set.add(make(FindingId::ExplicitSync, "a.cu", 3, 9, 1));
  set.add(make(FindingId::PageableAsyncCopy, "a.cu", 2, 9, 1));
  set.add(make(FindingId::PageableAsyncCopy, "c.cu", 1, 1, 1));
  set.add(make(FindingId::PageableAsyncCopy, "a.cu", 1, 9, 1));
  EXPECT_EQ(set.size(), 6u);
  std::vector<Finding> f = set.take();
  EXPECT_EQ(set.size(), 0u);
  rank_findings(f);
  ASSERT_EQ(f.size(), 6u);
  auto where = [](const Finding& x) { return x.call_site.file + ":" + std::to_string(x.call_site.line); };
  // 9 ns: pageable-async-copy (id 0) before explicit-sync, then by file and line.
  EXPECT_EQ(where(f[0]), "a.cu:1");
  EXPECT_EQ(where(f[1]), "a.cu:2");
  EXPECT_EQ(f[2].id, FindingId::ExplicitSync);
  EXPECT_EQ(where(f[2]), "a.cu:3");
  EXPECT_EQ(where(f[3]), "b.cu:3");  // the merged one: 9 ns, two processes
  EXPECT_EQ(f[3].count, 2u);
  EXPECT_EQ(f[3].processes.size(), 2u);
  EXPECT_EQ(where(f[4]), "a.cu:9");
  EXPECT_EQ(where(f[5]), "c.cu:1");
  for (const auto& x : f) EXPECT_EQ(x.key, x.merge_key());
}

// ---- hidden-sync: which explicit syncs the user did not write ---------------------

namespace {
asyncwatch::Frame hs_frame(asyncwatch::FrameOrigin o, const char* function, const char* module, const char* file,
                           int line) {
  asyncwatch::Frame f;
  f.origin = o;
  f.function = function;
  f.module = module;
  f.file = file;
  f.line = line;
  return f;
}
asyncwatch::Finding sync_finding(std::vector<asyncwatch::Frame> stack, size_t site) {
  asyncwatch::Finding f;
  f.id = asyncwatch::FindingId::ExplicitSync;
  f.stack = std::move(stack);
  f.call_site = f.stack[site];
  f.call_site_known = true;
  f.call_site_is_user_code = true;
  return f;
}
}  // namespace

TEST(HiddenSync, LibraryBetweenRuntimeAndUserLine) {
  using asyncwatch::FrameOrigin;
  auto rt = hs_frame(FrameOrigin::Native, "cudaStreamSynchronize", "/x/libcudart.so.13", "", 0);
  auto torch = hs_frame(FrameOrigin::Native, "at::native::_local_scalar_dense_cuda",
                        "/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "", 0);
  auto user = hs_frame(FrameOrigin::Python, "train", "", "/home/me/train.py", 115);
  auto ffi = hs_frame(FrameOrigin::Native, "ffi_call", "/lib/x86_64-linux-gnu/libffi.so.8", "", 0);
  auto ctypes = hs_frame(FrameOrigin::Native, "_ctypes_callproc", "/v/lib/python3.12/lib-dynload/_ctypes.so", "c.c", 1);
  auto sync_py =
      hs_frame(FrameOrigin::Python, "synchronize", "", "/v/lib/python3.12/site-packages/torch/cuda/__init__.py", 985);
  auto value_py =
      hs_frame(FrameOrigin::Python, "Tensor.__format__", "", "/v/lib/python3.12/site-packages/torch/_tensor.py", 1100);
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, user}, 2), {}));         // loss.item()
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, ffi, ctypes, user}, 3), {}));  // ctypes: written
  EXPECT_FALSE(
      asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, sync_py, user}, 3), {}));  // torch.cuda.synchronize()
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, value_py, user}, 3), {}));  // f"{t}"
  auto main_cu = hs_frame(FrameOrigin::Native, "main", "/work/app", "app.cu", 10);
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, main_cu}, 1), {}));  // C++: written
  auto f = sync_finding({rt, torch, user}, 2);
  f.call_site_is_user_code = false;
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(f, {}));  // no user line to report it at
}

// A synchronization by a thread without Python, on frames borrowed from a Python thread: hidden when
// the lender was in a framework call that does not wait by contract (autograd's backward), the
// user's explicit wait when the lender waited in block_until_ready (JAX: XLA's threads wait for it).
TEST(HiddenSync, BorrowedFramesOfAWaitingFunctionAreTheUsersWait) {
  using asyncwatch::FrameOrigin;
  auto drv = hs_frame(FrameOrigin::Native, "cuEventSynchronize", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "", 0);
  auto xla = hs_frame(FrameOrigin::Native, "", "/v/lib/python3.12/site-packages/jaxlib/xla_extension.so", "", 0);
  auto bur = hs_frame(FrameOrigin::Python, "ArrayImpl.block_until_ready", "",
                      "/v/lib/python3.12/site-packages/jax/_src/array.py", 640);
  auto backward =
      hs_frame(FrameOrigin::Python, "backward", "", "/v/lib/python3.12/site-packages/torch/autograd/__init__.py", 347);
  auto user = hs_frame(FrameOrigin::Python, "main", "", "/home/me/loop.py", 21);
  auto waited = sync_finding({drv, xla, bur, user}, 3);
  waited.python_lender = tf::python_lender_encode(4242, false);
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(waited, {}, true));
  auto in_backward = sync_finding({drv, xla, backward, user}, 3);
  in_backward.python_lender = tf::python_lender_encode(4242, false);
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(in_backward, {}, true));
  auto bare = sync_finding({drv, xla, user}, 2);  // borrowed, no library Python frame between
  bare.python_lender = tf::python_lender_encode(4242, true);
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(bare, {}, true));
}

namespace {
tf::NvtxRangeRecord nvtx(tf::NvtxKind kind, uint64_t range_id, uint32_t name_id, uint64_t t) {
  tf::NvtxRangeRecord r{};
  r.kind = static_cast<uint8_t>(kind);
  r.range_id = range_id;
  r.name_id = name_id;
  r.start_ns = r.end_ns = t;
  return r;
}
}  // namespace

// Each finding counts its calls per NVTX range: nested push ranges of the calling thread
// (each once), start/end ranges open in the process (started on another thread), none after a pop.
TEST(Findings, NvtxRangesCountTheCallsInsideThem) {
  Fixture x;
  constexpr uint32_t kOther = 9;
  x.b.thread_info(kOther, "loader");
  uint32_t step = x.b.string(kTid, "optimizer_step");
  uint32_t inner = x.b.string(kTid, "inner");
  uint32_t epoch = x.b.string(kOther, "epoch");
  x.b.event(kOther, RecordType::NvtxRange, nvtx(tf::NvtxKind::Start, 5, epoch, x.t));
  x.t += kUs;
  for (int i = 0; i < 20; ++i) {
    const bool ranged = i >= 2;
    if (ranged) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Push, 0, step, x.t), kUs);
    if (i == 5) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Push, 1, inner, x.t), kUs);
    if (i == 5) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Push, 2, step, x.t), kUs);  // the same name nested
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 2 * kMs, 4096);
    if (i == 5) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Pop, 2, 0, x.t), kUs);
    if (i == 5) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Pop, 1, 0, x.t), kUs);
    if (ranged) x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Pop, 0, 0, x.t), kUs);
  }
  x.add(RecordType::NvtxRange, nvtx(tf::NvtxKind::Pop, 0, 0, x.t), kUs);  // unmatched: ignored
  x.b.event(kOther, RecordType::NvtxRange, nvtx(tf::NvtxKind::End, 5, 0, x.t));
  x.t += kUs;
  for (int i = 0; i < 3; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 2 * kMs, 4096, 0, x.site2);
  Report r = x.report("nvtx-ranges.awtrace");
  const Finding* ranged = nullptr;
  const Finding* unranged = nullptr;
  for (const auto& f : r.findings) {
    if (f.id != FindingId::PageableAsyncCopy) continue;
    (f.count == 20 ? ranged : unranged) = &f;
  }
  ASSERT_NE(ranged, nullptr);
  ASSERT_NE(unranged, nullptr);
  EXPECT_EQ(ranged->ranges, (std::map<std::string, uint64_t>{{"optimizer_step", 18}, {"inner", 1}, {"epoch", 20}}));
  EXPECT_EQ(unranged->count, 3u);
  EXPECT_TRUE(unranged->ranges.empty());
  std::ostringstream text;
  write_report_text(text, r, TextStyle{});
  EXPECT_NE(text.str().find(
                "    in ranges `epoch` (20 of 20 calls), `optimizer_step` (18 of 20 calls), `inner` (1 of 20 calls)\n"),
            std::string::npos)
      << text.str();
  auto doc = nlohmann::json::parse(report_json_text(r));
  bool seen = false;
  for (const auto& f : doc["findings"])
    if (f["count"] == 20 && f["id"] == "pageable-async-copy") {
      seen = true;
      EXPECT_EQ(f["ranges"], nlohmann::json::parse(R"([{"name": "epoch", "calls": 20},
                                                       {"name": "optimizer_step", "calls": 18},
                                                       {"name": "inner", "calls": 1}])"));
    } else {
      EXPECT_TRUE(f["ranges"].is_array());
    }
  EXPECT_TRUE(seen);
}

// A hidden sync is reported at its site however short each wait; its severity is
// the site's total against --min-blocked-us (loss.item() every step, ~21 us each).
TEST(HiddenSync, ShortWaitsAreReportedBySiteTotal) {
  Fixture x;
  x.b.module(kTid, "/work/app/seed", 0, 0x400000, 0x500000);
  x.b.module(kTid, "/v/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13", 0x700000, 0x700000,
             0x800000);
  x.b.module(kTid, "/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", 0x900000, 0x900000, 0xa00000);
  const uint32_t step = x.b.stack(kTid, {0x701000, 0x901000, 0x401000});  // runtime, framework, the program
  const uint32_t once = x.b.stack(kTid, {0x701000, 0x901000, 0x402000});
  const uint32_t own = x.b.stack(kTid, {0x701000, 0x403000});  // written by the program
  uint32_t k = x.b.string(kTid, "_Z4stepv");
  auto sync = [&](uint32_t stack, uint64_t waited) {
    x.add(RecordType::Sync,
          TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + waited, 0x5000, stack),
          waited + kUs);
  };
  for (int i = 0; i < 20; ++i) {
    x.launch(k, 3 * kUs);
    sync(step, 21 * kUs);
  }
  x.launch(k, 3 * kUs);
  sync(once, 21 * kUs);
  sync(own, 21 * kUs);
  Report r = x.report("hidden-short.awtrace");
  const Finding* loop = nullptr;
  const Finding* single = nullptr;
  for (const Finding& f : r.findings) {
    EXPECT_NE(f.id, FindingId::ExplicitSync);  // the program's own 21 us wait stays under the threshold
    if (f.id == FindingId::HiddenSync) (f.count == 20 ? loop : single) = &f;
  }
  ASSERT_NE(loop, nullptr);
  ASSERT_NE(single, nullptr);
  EXPECT_EQ(loop->blocked.total(), 420 * kUs);
  EXPECT_EQ(finding_severity(*loop), Severity::Warning);  // 420 us in total, each wait under 50 us
  EXPECT_EQ(loop->waited_for.at("step"), 20u);
  EXPECT_EQ(single->count, 1u);
  EXPECT_EQ(finding_severity(*single), Severity::Note);  // 21 us in total
  Options o;
  o.min_blocked_ns = 500 * kUs;  // a higher threshold makes the loop's site a note, still reported
  Report r2 = x.report("hidden-short-2.awtrace", o);
  size_t hidden = 0;
  for (const Finding& f : r2.findings)
    if (f.id == FindingId::HiddenSync) {
      ++hidden;
      EXPECT_EQ(finding_severity(f), Severity::Note);
    }
  EXPECT_EQ(hidden, 2u);
}

// The verdict rests on what the trace records (Python frames, the API called), so
// a report made where the libraries' symbols can be read and one made where they cannot agree.
TEST(HiddenSync, SameVerdictWithAndWithoutLibrarySymbols) {
  using asyncwatch::FrameOrigin;
  const char* cupy_rt =
      "/v/lib/python3.12/site-packages/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so";
  const char* cupy_stream = "/v/lib/python3.12/site-packages/cupy/cuda/stream.cpython-312-x86_64-linux-gnu.so";
  const char* torch_lib = "/v/lib/python3.12/site-packages/torch/lib/libtorch_python.so";
  auto drv = hs_frame(FrameOrigin::Native, "cuStreamSynchronize", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "", 0);
  auto rt = hs_frame(FrameOrigin::Native, "cudaStreamSynchronize", "/x/libcudart.so.13", "", 0);
  auto interp = hs_frame(FrameOrigin::Interpreter, "_PyEval_EvalFrameDefault", "/usr/bin/python3.12", "ceval.c", 1);
  auto user = hs_frame(FrameOrigin::Python, "step", "", "/home/me/app.py", 12);
  for (bool symbols : {true, false}) {
    // CuPy's Stream.synchronize(): Cython code calls the CUDA runtime linked into CuPy, which the
    // trace records as the driver's cuStreamSynchronize.
    auto cudart_in_cupy =
        hs_frame(FrameOrigin::Native, symbols ? "cudart::cudaApiStreamSynchronize" : "", cupy_rt, "", 0);
    auto binding =
        hs_frame(FrameOrigin::Native, symbols ? "__pyx_f_13cupy_backends_4cuda_3api_7runtime_streamSynchronize" : "",
                 cupy_rt, "", 0);
    auto method =
        hs_frame(FrameOrigin::Native, symbols ? "__pyx_pw_4cupy_4cuda_6stream_10BaseStream_13synchronize" : "",
                 cupy_stream, "", 0);
    EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(
        sync_finding({drv, cudart_in_cupy, binding, method, interp, user}, 5), {}, /*driver_call=*/true))
        << "symbols " << symbols;
    // tensor.item(): the runtime's cudaStreamSynchronize inside the framework: hidden either way.
    auto item = hs_frame(FrameOrigin::Native, symbols ? "THPVariable_item" : "", torch_lib, "", 0);
    EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, item, interp, user}, 3), {}, false))
        << "symbols " << symbols;
    // A framework's Python code between: its waits are hidden unless the Python function waits.
    auto tensor_py =
        hs_frame(FrameOrigin::Python, "Tensor.tolist", "", "/v/lib/python3.12/site-packages/torch/_tensor.py", 9);
    EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({drv, item, tensor_py, user}, 3), {}, true));
  }
}

// A first launch whose lazy module load waited for work still pending on the
// device (a pinned 2 GiB upload on another stream, a kernel) names that work; one after the device
// went idle does not.
TEST(Findings, FirstLaunchNamesThePendingWorkItWaitedFor) {
  Fixture x;
  x.warm_up();
  uint32_t busy = x.b.string(kTid, "_Z4busyv");
  uint32_t first = x.b.string(kTid, "_Z5firstv");
  uint32_t later = x.b.string(kTid, "_Z5laterv");
  x.launch(busy, 3 * kUs, 0, 0x6000);
  x.copy(Direction::HtoD, MemoryKind::Pinned, MemoryKind::Device, 30 * kUs, 2ull << 30, 0, 0, 0x7000);
  x.launch(first, 39700 * kUs, tf::kFlagFirstLaunch, 0x5000, x.site1);
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaDeviceSynchronize, Api::cuCtxSynchronize, x.t, x.t + kMs, 0),
        2 * kMs);
  x.launch(later, 2 * kMs, tf::kFlagFirstLaunch, 0x5000, x.site2);
  Report r = x.report("first-launch-pending.awtrace");
  const Finding* waited = nullptr;
  const Finding* clean = nullptr;
  for (const Finding& f : r.findings)
    if (f.id == FindingId::BlockingLaunch && f.cause == Cause::FirstLaunch) (f.kernel == "first" ? waited : clean) = &f;
  ASSERT_NE(waited, nullptr);
  ASSERT_NE(clean, nullptr);
  EXPECT_EQ(waited->pending_copies, 1u);
  EXPECT_EQ(waited->pending_copy_bytes, 2ull << 30);
  EXPECT_EQ(waited->waited_for, (std::map<std::string, uint64_t>{{"busy", 1}}));
  EXPECT_NE(
      finding_message(*waited).find("and loading it waited for the work pending on the device: 1 asynchronous "
                                    "copy (2.0 GiB) and kernel busy not known complete when the launch was called"),
      std::string::npos)
      << finding_message(*waited);
  EXPECT_EQ(clean->pending_copies, 0u);
  EXPECT_TRUE(clean->waited_for.empty());
  EXPECT_EQ(finding_message(*clean).find("pending"), std::string::npos) << finding_message(*clean);
  auto doc = nlohmann::json::parse(report_json_text(r));
  bool seen = false;
  for (const auto& f : doc["findings"])
    if (f["kernel"] == "first") {
      seen = true;
      EXPECT_EQ(f["pending_copies"], 1);
      EXPECT_EQ(f["pending_copy_bytes"], 2ull << 30);
    }
  EXPECT_TRUE(seen);
}

// A graph launch that blocked names the upload of a freshly instantiated graph
// (its first launch; not again after cudaGraphExecUpdate) and the graph's memory-allocation nodes
// (cudaMallocAsync captured into it), instead of "unknown".
namespace {
struct GraphTrace {
  Fixture x;
  GraphTrace() { x.warm_up(); }
  void graph_op(Api api, uint64_t graph, uint64_t exec, uint64_t stream = 0) {
    tf::GraphOpRecord g{};
    g.api = g.driver_fn = static_cast<uint16_t>(api);
    g.start_ns = x.t;
    g.end_ns = x.t + kUs;
    g.graph = graph;
    g.exec = exec;
    g.stream = stream;
    x.add(RecordType::GraphOp, g, 2 * kUs);
  }
  void capture(uint64_t stream, uint64_t graph, int mallocs) {
    tf::CaptureRecord c{};
    c.api = static_cast<uint16_t>(Api::cudaStreamBeginCapture);
    c.driver_fn = static_cast<uint16_t>(Api::cuStreamBeginCapture_v2);
    c.start_ns = x.t;
    c.end_ns = x.t + kUs;
    c.stream = stream;
    x.add(RecordType::Capture, c, 2 * kUs);
    for (int i = 0; i < mallocs; ++i) {
      auto m = TraceBuilder::memory_op(Api::cudaMallocAsync, Api::cuMemAllocAsync, x.t, x.t + kUs, 1 << 20,
                                       MemoryKind::Device);
      m.flags |= tf::kFlagCaptureActive;
      x.add(RecordType::MemoryOp, m, 2 * kUs);
    }
    graph_op(Api::cuStreamEndCapture, graph, 0, stream);
  }
  void launch(uint64_t exec, uint64_t blocked, uint32_t stack) {
    tf::GraphLaunchRecord l{};
    static_cast<tf::LaunchRecord&>(l) =
        TraceBuilder::launch(Api::cudaGraphLaunch, 0, x.t, x.t + blocked, 0, 0x5000, stack);
    l.driver_fn = static_cast<uint16_t>(Api::cuGraphLaunch);
    l.exec = exec;
    x.add(RecordType::GraphLaunch, l, blocked + kUs);
  }
};
}  // namespace

TEST(Findings, GraphUploadAndMemoryNodesAreNamedCauses) {
  GraphTrace g;
  g.capture(0x9000, 0xA1, 0);  // a plain graph
  g.graph_op(Api::cuGraphInstantiateWithFlags, 0xA1, 0xE1);
  g.launch(0xE1, 4500 * kUs, g.x.site1);  // its upload: 4.5 ms
  g.launch(0xE1, 10 * kUs, g.x.site1);
  g.graph_op(Api::cuGraphExecUpdate_v2, 0xA1, 0xE1);
  g.launch(0xE1, 10 * kUs, g.x.site1);  // updated, not uploaded again
  g.capture(0x9000, 0xA2, 2);           // a graph with two memory-allocation nodes
  g.graph_op(Api::cuGraphInstantiateWithFlags, 0xA2, 0xE2);
  g.launch(0xE2, 20 * kUs, g.x.site2);    // uploaded quickly
  g.launch(0xE2, 7400 * kUs, g.x.site2);  // the memory mapped again: 7.4 ms
  Report r = g.x.report("graph-upload.awtrace");
  const Finding* upload = nullptr;
  const Finding* memory = nullptr;
  for (const Finding& f : r.findings) {
    EXPECT_NE(f.cause, Cause::Unknown) << finding_message(f);
    if (f.cause == Cause::GraphUpload) upload = &f;
    if (f.cause == Cause::GraphMemoryNodes) memory = &f;
  }
  ASSERT_NE(upload, nullptr);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(upload->count, 1u);
  EXPECT_EQ(upload->blocked.total(), 4500 * kUs);
  EXPECT_NE(finding_message(*upload).find("first launch of this executable graph since it was instantiated"),
            std::string::npos)
      << finding_message(*upload);
  EXPECT_EQ(memory->count, 1u);
  EXPECT_EQ(memory->graph_memory_nodes, 2u);
  EXPECT_NE(finding_message(*memory).find("the graph has 2 memory-allocation nodes"), std::string::npos)
      << finding_message(*memory);
}

// A clone of a graph has the original's nodes: a launch of the clone's executable graph (and of
// one updated from the clone) names the original's pageable memcpy node and its origin; a failed
// update changes nothing.
TEST(Findings, GraphCloneKeepsTheOriginalsPageableNode) {
  GraphTrace g;
  tf::GraphOpRecord node{};
  node.api = static_cast<uint16_t>(Api::cudaGraphAddMemcpyNode1D);
  node.driver_fn = static_cast<uint16_t>(Api::cuGraphAddMemcpyNode);
  node.start_ns = g.x.t;
  node.end_ns = g.x.t + kUs;
  node.graph = 0xA1;
  node.node = 0xB1;
  node.bytes = 4096;
  node.direction = static_cast<uint8_t>(Direction::DtoH);
  node.src_memory = static_cast<uint8_t>(MemoryKind::Device);
  node.dst_memory = static_cast<uint8_t>(MemoryKind::Pageable);
  node.stack_id = g.x.site2;
  g.x.add(RecordType::GraphOp, node, 2 * kUs);
  tf::GraphOpRecord clone{};
  clone.api = clone.driver_fn = static_cast<uint16_t>(Api::cuGraphClone);
  clone.start_ns = g.x.t;
  clone.end_ns = g.x.t + kUs;
  clone.graph = 0xA1;
  clone.clone = 0xA2;
  g.x.add(RecordType::GraphOp, clone, 2 * kUs);
  g.graph_op(Api::cuGraphInstantiateWithFlags, 0xA2, 0xE2);
  g.launch(0xE2, 10 * kUs, g.x.site1);                       // uploaded
  g.launch(0xE2, 2 * kMs, g.x.site1);                        // waited for the pageable node
  g.graph_op(Api::cuGraphInstantiateWithFlags, 0xA3, 0xE3);  // a graph the trace knows nothing of
  tf::GraphOpRecord failed{};
  failed.api = failed.driver_fn = static_cast<uint16_t>(Api::cuGraphExecUpdate_v2);
  failed.start_ns = g.x.t;
  failed.end_ns = g.x.t + kUs;
  failed.exec = 0xE3;
  failed.graph = 0xA2;
  failed.result = 910;  // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: the exec keeps its own nodes
  g.x.add(RecordType::GraphOp, failed, 2 * kUs);
  g.launch(0xE3, 10 * kUs, g.x.site2);
  g.launch(0xE3, 3 * kMs, g.x.site2);
  Report r = g.x.report("graph-clone.awtrace");
  const Finding* cloned = nullptr;
  const Finding* other = nullptr;
  for (const Finding& f : r.findings) {
    if (f.id != FindingId::BlockingLaunch || f.blocked.max() < kMs) continue;
    (f.cause == Cause::GraphHostMemcpy ? cloned : other) = &f;
  }
  ASSERT_NE(cloned, nullptr);
  EXPECT_EQ(cloned->graph_pageable_nodes, 1u);
  EXPECT_EQ(cloned->graph_node().bytes, 4096u);
  EXPECT_EQ(cloned->graph_node().api, "cudaGraphAddMemcpyNode1D");
  ASSERT_NE(other, nullptr);  // the failed update did not give 0xE3 the clone's nodes
  EXPECT_EQ(other->cause, Cause::Unknown);
}

// A launch that blocked while another thread's call ran through its wait names that call (a
// driver lock it held), or the host function running on the driver's thread; else unknown, saying
// what the trace cannot tell.
TEST(Findings, BlockedLaunchNamesTheOtherThreadsCallThatRanThrough) {
  Fixture x;
  x.warm_up();
  constexpr uint32_t kOther = kTid + 100, kDriver = kTid + 101;
  x.b.thread_info(kOther, "worker");
  x.b.thread_info(kDriver, "cuda-callback");
  uint32_t other_site = x.b.stack(kOther, {0x403000, 0x409000});
  uint32_t k = x.b.string(kTid, "_Z4stepv");
  // The worker's cudaFreeHost runs 3 ms; the launch begins inside it and waits 2.2 ms.
  x.b.event(kOther, RecordType::MemoryOp,
            TraceBuilder::memory_op(Api::cudaFreeHost, Api::cuMemFreeHost, x.t, x.t + 3 * kMs, 0, MemoryKind::Pinned,
                                    other_site));
  x.t += 500 * kUs;
  x.launch(k, 2200 * kUs, 0, 0x5000, x.site1);
  x.t += 5 * kMs;
  // A host function runs 4 ms on the driver's thread; a launch waits 1.5 ms inside it.
  x.b.event(kDriver, RecordType::HostFuncRun, TraceBuilder::run(77, x.t, x.t + 4 * kMs));
  x.t += 1 * kMs;
  x.launch(k, 1500 * kUs, 0, 0x5000, x.site2);
  x.t += 5 * kMs;
  x.launch(k, 1800 * kUs, 0, 0x6000, x.site1);  // alone: unknown
  Report r = x.report("concurrent-launch.awtrace");
  const Finding* other = find(r, FindingId::BlockingLaunch, Cause::OtherThreadCall, false);
  const Finding* host = find(r, FindingId::BlockingLaunch, Cause::HostFunctionRunning, false);
  const Finding* unknown = find(r, FindingId::BlockingLaunch, Cause::Unknown, false);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(other->concurrent, nullptr);
  EXPECT_EQ(other->concurrent->api, "cudaFreeHost");
  EXPECT_EQ(other->concurrent->tid, kOther);
  EXPECT_EQ(other->concurrent->overlap_ns, 2200 * kUs);
  EXPECT_NE(finding_message(*other).find("thread " + std::to_string(kOther) + "'s cudaFreeHost"), std::string::npos)
      << finding_message(*other);
  ASSERT_NE(host, nullptr);
  EXPECT_NE(finding_message(*host).find("a host function ran on the driver's thread (thread " +
                                        std::to_string(kDriver) + ")"),
            std::string::npos)
      << finding_message(*host);
  ASSERT_NE(unknown, nullptr);
  EXPECT_NE(finding_message(*unknown).find("no other thread's CUDA call or host function"), std::string::npos)
      << finding_message(*unknown);
  auto doc = nlohmann::json::parse(report_json_text(r));
  bool seen = false;
  for (const auto& f : doc["findings"])
    if (f["cause"] == "other-thread-call") {
      seen = true;
      EXPECT_EQ(f["concurrent_call"]["api"], "cudaFreeHost");
      EXPECT_EQ(f["concurrent_call"]["overlap_ns"], 2200 * kUs);
    }
  EXPECT_TRUE(seen);
}

// A thread Python did not create that runs Python (autograd's engine running a compiled backward)
// has its own frames, then a lender's (StackRecord.python_own): the innermost user frame of its own
// is the call site (a user's autograd Function.backward); without one, the lender's line, marked
// borrowed; the stack shows both, the lender's last.
TEST(Findings, OwnPythonFramesBeforeBorrowedOnes) {
  Fixture x;
  x.b.module(kTid, "/v/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13", 0x700000, 0x700000,
             0x800000);
  x.b.py_code(kTid, 1, "/v/lib/python3.12/site-packages/torch/autograd/function.py", "BackwardCFunction.apply", 300);
  x.b.py_code(kTid, 2, "/home/me/model.py", "MyFn.backward", 40);
  x.b.py_code(kTid, 3, "/v/lib/python3.12/site-packages/torch/_tensor.py", "Tensor.backward", 500);
  x.b.py_code(kTid, 4, "/home/me/train.py", "step", 12);
  const uint32_t lender = tf::python_lender_encode(4242, false);
  const uint32_t torch_only = x.b.python_stack(kTid, {0x701000}, {{1, 0}, {3, 0}, {4, 0}}, lender, 1);
  const uint32_t users = x.b.python_stack(kTid, {0x701000}, {{2, 0}, {1, 0}, {3, 0}, {4, 0}}, lender, 2);
  for (int i = 0; i < 3; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 200 * kUs, 64, 0, torch_only);
  for (int i = 0; i < 2; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 200 * kUs, 64, 0, users);
  Report r = x.report("own-then-borrowed.awtrace");
  const Finding* at_lender = nullptr;
  const Finding* at_own = nullptr;
  for (const Finding& f : r.findings)
    if (f.id == FindingId::PageableAsyncCopy) (f.call_site.file == "/home/me/train.py" ? at_lender : at_own) = &f;
  ASSERT_NE(at_lender, nullptr);
  ASSERT_NE(at_own, nullptr);
  EXPECT_EQ(at_lender->count, 3u);
  EXPECT_EQ(at_lender->call_site.line, 12);
  EXPECT_TRUE(at_lender->call_site_is_user_code);
  EXPECT_EQ(at_lender->python_lender, lender);
  EXPECT_EQ(at_own->count, 2u);
  EXPECT_EQ(at_own->call_site.file, "/home/me/model.py");
  EXPECT_TRUE(at_own->call_site_is_user_code);
  EXPECT_EQ(at_own->python_lender, 0u);
  // The stack: the own Python frames (not borrowed), then the lender's (borrowed), outermost last.
  std::vector<std::pair<std::string, bool>> py;
  for (const Frame& f : at_own->stack)
    if (f.origin == FrameOrigin::Python) py.emplace_back(f.function, f.borrowed);
  const std::vector<std::pair<std::string, bool>> want{
      {"MyFn.backward", false}, {"BackwardCFunction.apply", false}, {"Tensor.backward", true}, {"step", true}};
  EXPECT_EQ(py, want);
  auto doc = nlohmann::json::parse(report_json_text(r));
  size_t borrowed_frames = 0;
  for (const auto& f : doc["findings"])
    for (const auto& fr : f["stack"]) borrowed_frames += fr.value("borrowed", false);
  EXPECT_EQ(borrowed_frames, 4u);  // two in each finding's stack
  std::ostringstream text;
  write_report_text(text, r, TextStyle{});
  EXPECT_NE(text.str().find("[py, borrowed] step at /home/me/train.py:12"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("[py] MyFn.backward at /home/me/model.py:40"), std::string::npos) << text.str();
}

// What a framework does inside its own compilation (JAX's backend_compile running
// XLA's autotuner) is kept apart from the same line's steady state, and is a note.
TEST(Findings, FrameworkCompilePhaseIsKeptApart) {
  Fixture x;
  x.b.module(kTid, "/v/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13", 0x700000, 0x700000,
             0x800000);
  x.b.py_code(kTid, 1, "/v/lib/python3.12/site-packages/jax/_src/compiler.py", "backend_compile", 300);
  x.b.py_code(kTid, 2, "/v/lib/python3.12/site-packages/jax/_src/api.py", "cache_miss", 100);
  x.b.py_code(kTid, 3, "/home/me/train.py", "step", 12);
  const uint32_t compiling = x.b.python_stack(kTid, {0x701000}, {{1, 0}, {2, 0}, {3, 0}});
  const uint32_t steady = x.b.python_stack(kTid, {0x701000}, {{2, 0}, {3, 0}});
  for (int i = 0; i < 3; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 200 * kUs, 64, 0, compiling);
  for (int i = 0; i < 2; ++i)
    x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 200 * kUs, 64, 0, steady);
  Report r = x.report("compile-phase.awtrace");
  const Finding* phase = nullptr;
  const Finding* loop = nullptr;
  for (const Finding& f : r.findings)
    if (f.id == FindingId::PageableAsyncCopy) (f.framework_phase.empty() ? loop : phase) = &f;
  ASSERT_NE(phase, nullptr);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(phase->call_site.file, loop->call_site.file);  // one line, two findings
  EXPECT_EQ(phase->call_site.line, loop->call_site.line);
  EXPECT_EQ(phase->count, 3u);
  EXPECT_EQ(loop->count, 2u);
  EXPECT_EQ(phase->framework_phase, "JAX compilation (XLA autotuning)");
  EXPECT_EQ(finding_severity(*phase), Severity::Note);
  EXPECT_EQ(finding_severity(*loop), Severity::Warning);
  EXPECT_NE(finding_message(*phase).find("made inside JAX compilation (XLA autotuning)"), std::string::npos)
      << finding_message(*phase);
}

// A group's blocked time per thread: the first ThreadBlocked::kInline threads kept in the group,
// the rest in a vector; each() gives them by tid whatever the order they came in, and the bound
// keeps the first kMaxThreadsPerGroup threads.
TEST(ThreadBlocked, ByTidAndBounded) {
  asyncwatch::analysis::ThreadBlocked t;
  for (uint32_t tid : {40u, 7u, 300u, 12u, 9u, 500u, 7u, 1u, 40u}) t.add(tid, tid);
  std::vector<std::pair<uint32_t, uint64_t>> got;
  t.each([&](uint32_t tid, uint64_t ns) { got.emplace_back(tid, ns); });
  const std::vector<std::pair<uint32_t, uint64_t>> want = {{1, 1},   {7, 14},    {9, 9},    {12, 12},
                                                           {40, 80}, {300, 300}, {500, 500}};
  EXPECT_EQ(got, want);
  asyncwatch::analysis::ThreadBlocked many;
  for (uint32_t tid = 1000; tid > 0; --tid) many.add(tid, 1);
  EXPECT_EQ(many.size(), asyncwatch::analysis::kMaxThreadsPerGroup);
  uint32_t first = 0;
  many.each([&](uint32_t tid, uint64_t) { first = first ? first : tid; });
  EXPECT_EQ(first, 1000u - asyncwatch::analysis::kMaxThreadsPerGroup + 1);  // the first ones to come
}

// The kernels a group waited for: counts past 32 bits exact (the slots hold 32; the rest goes on
// apart), at most kMaxWaitedKernels ids (the rest refused, in the order they came).
TEST(WaitedKernels, ExactCountsAndBounded) {
  using asyncwatch::analysis::kMaxWaitedKernels;
  asyncwatch::analysis::WaitedKernels w;
  const uint64_t big = (uint64_t{1} << 32) - 5;
  EXPECT_TRUE(w.add(7, big));
  EXPECT_TRUE(w.add(7, 10));  // past 2^32
  EXPECT_TRUE(w.add(7, uint64_t{3} << 32));
  EXPECT_TRUE(w.add(UINT32_MAX, 1));                                              // the graph kernel's id
  for (uint32_t id = 100; id < 100 + 2 * kMaxWaitedKernels; ++id) w.add(id, id);  // grows, then refuses
  EXPECT_EQ(w.size(), kMaxWaitedKernels);
  std::map<uint32_t, uint64_t> got;
  w.each([&](uint32_t id, uint64_t n) { got[id] = n; });
  EXPECT_EQ(got.size(), kMaxWaitedKernels);
  EXPECT_EQ(got[7], big + 10 + (uint64_t{3} << 32));
  EXPECT_EQ(got[UINT32_MAX], 1u);
  EXPECT_EQ(got[100], 100u);
  EXPECT_EQ(got.count(100 + kMaxWaitedKernels - 3), 1u);  // the first ones to come (7 and the graph kernel before)
  EXPECT_EQ(got.count(100 + kMaxWaitedKernels - 2), 0u);
  EXPECT_TRUE(w.add(7, 1));       // a held id is still counted when full
  EXPECT_FALSE(w.add(99999, 1));  // a new one is refused
}
