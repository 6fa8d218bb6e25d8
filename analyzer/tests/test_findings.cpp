// Each finding rule on crafted traces.
#include "analysis.h"
#include "findings/hidden_sync.h"
#include "test_util.h"

#include <gtest/gtest.h>

using namespace asyncwatch;
using namespace asyncwatch::testing;
using tf::Api;
using tf::Direction;
using tf::MemoryKind;
using tf::RecordType;

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
  Report report(const std::string& name, Options o = Options{}) {
    return analyze_traces({write_trace(b, name)}, o);
  }
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
  EXPECT_NE(finding_message(*f).find("cudaMemcpyAsync (device to host, 2.0 GiB) blocked 1.74 s: the destination is "
                                     "pageable host memory, so the copy waited for the stream (kernels dummy x2, other)"),
            std::string::npos)
      << finding_message(*f);
  EXPECT_EQ(r.summary.async_calls, 4u);
  EXPECT_EQ(r.summary.async_calls_blocking, 1u);
  EXPECT_EQ(r.summary.async_calls_async, 3u);
}

TEST(Findings, StreamSyncClearsTheKernelsWaitedFor) {
  Fixture x;
  uint32_t k1 = x.b.string(kTid, "_Z5dummyv");
  x.launch(k1, 3 * kUs);
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + kMs), 2 * kMs);
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
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 30 * kUs, 1024);  // below --min-blocked-us
  Report r = x.report("pinned.awtrace");
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.summary.async_calls, 3u);
  EXPECT_EQ(r.summary.async_calls_async, 3u);
  Options o;
  o.min_blocked_ns = 10 * kUs;
  Report r2 = analyze_traces({tmp_path("pinned.awtrace")}, o);
  ASSERT_EQ(r2.findings.size(), 1u);
  EXPECT_EQ(r2.findings[0].id, FindingId::PageableAsyncCopy);
}

TEST(Findings, BlockedCallsWithoutAFindingAreNotCountedAsBlocking) {
  // A pinned copy behind a busy stream blocked 2 ms: asynchronous as documented, no rule applies,
  // so the summary does not count it as blocking (async_calls_blocking = calls with a finding).
  Fixture x;
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pinned, 2 * kMs, 1 << 20);
  x.copy(Direction::HtoD, MemoryKind::Pageable, MemoryKind::Device, 300 * kUs, 4096);  // inline
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 3 * kMs, 1 << 20);   // flagged
  x.add(RecordType::HostFuncEnqueue, TraceBuilder::enqueue(Api::cudaLaunchHostFunc, Api::cuLaunchHostFunc, 1, x.t, x.t + 5 * kMs),
        6 * kMs);
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
  x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 5 * kMs, 1 << 20, tf::kFlagSynchronousApi, 0, 0x5000,
         Api::cudaMemcpy);
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
  x.launch(k, 12 * kMs, tf::kFlagFirstLaunch, 0x5000, x.site1);  // first launch
  for (int i = 0; i < 520; ++i) x.launch(k, 3 * kUs);
  x.launch(k, 300 * kUs, 0, 0x5000, x.site2);  // queue full
  x.add(RecordType::Sync, TraceBuilder::sync(Api::cudaStreamSynchronize, Api::cuStreamSynchronize, x.t, x.t + kUs), 2 * kUs);
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
  x.launch(0, 2 * kMs, tf::kFlagFirstLaunch);
  Report r = x.report("lbenv.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].cause, Cause::LaunchBlockingEnv);
}

TEST(Findings, FirstLaunchMentionsModuleLoading) {
  Fixture x;
  x.b.cuda_env("CUDA_MODULE_LOADING=LAZY");
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
        TraceBuilder::enqueue(Api::cudaStreamAddCallback, Api::cuStreamAddCallback, 6, x.t, x.t + 5 * kUs, 0x5000, x.site2),
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
    x.add(RecordType::Sync,
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

TEST(Findings, ImplicitSyncOnlyWhenRepeated) {
  Fixture x;
  for (int i = 0; i < 10; ++i)
    x.add(RecordType::MemoryOp,
          TraceBuilder::memory_op(Api::cudaMalloc, Api::cuMemAlloc_v2, x.t, x.t + 100 * kUs, 1024, MemoryKind::Device,
                                  x.site1),
          200 * kUs);
  for (int i = 0; i < 9; ++i)
    x.add(RecordType::MemoryOp,
          TraceBuilder::memory_op(Api::cudaHostRegister, Api::cuMemHostRegister_v2, x.t, x.t + 100 * kUs, 1024,
                                  MemoryKind::Pinned, x.site2),
          200 * kUs);
  Report r = x.report("implicit.awtrace");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].id, FindingId::ImplicitSync);
  EXPECT_EQ(r.findings[0].api, "cudaMalloc");
  EXPECT_EQ(r.findings[0].count, 10u);
}

TEST(Findings, RankedByTotalBlockedTimeAndGroupedByCallSite) {
  Fixture x;
  for (int i = 0; i < 3; ++i) x.copy(Direction::DtoH, MemoryKind::Device, MemoryKind::Pageable, 1 * kMs, 1 << 20, 0, x.site1);
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

// ---- hidden-sync (issue 15): which explicit syncs the user did not write ---------------------

namespace {
asyncwatch::Frame hs_frame(asyncwatch::FrameOrigin o, const char* function, const char* module, const char* file, int line) {
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
  auto sync_py = hs_frame(FrameOrigin::Python, "synchronize", "", "/v/lib/python3.12/site-packages/torch/cuda/__init__.py", 985);
  auto value_py = hs_frame(FrameOrigin::Python, "Tensor.__format__", "", "/v/lib/python3.12/site-packages/torch/_tensor.py", 1100);
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, user}, 2), {}));      // loss.item()
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, ffi, ctypes, user}, 3), {}));  // ctypes: written
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, sync_py, user}, 3), {}));  // torch.cuda.synchronize()
  EXPECT_TRUE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, torch, value_py, user}, 3), {}));  // f"{t}"
  auto main_cu = hs_frame(FrameOrigin::Native, "main", "/work/app", "app.cu", 10);
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(sync_finding({rt, main_cu}, 1), {}));  // C++: written
  auto f = sync_finding({rt, torch, user}, 2);
  f.call_site_is_user_code = false;
  EXPECT_FALSE(asyncwatch::rules::is_hidden_sync(f, {}));  // no user line to report it at
}
