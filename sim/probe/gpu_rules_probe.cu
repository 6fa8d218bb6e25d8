// Measures, on a real GPU, the behaviours the simulator had to decide without one (docs/simulator.md,
// "Checked on a GPU"): prefetch, attach, batch copies, graph memcpy nodes, stream-ordered allocation,
// 3D/array copies, concurrent lazy loading, error codes. Prints "probe <key>: <value>" lines; run it
// bare for the timings and under libaw_proc_probe.so for which driver entry points each phase reaches
// (run_probe.sh does both). Not a test: it checks nothing and always exits 0 unless CUDA fails.
//   gpu_rules_probe [cycles=2e8 (~101 ms)]
#include <dlfcn.h>

#include <atomic>
#include <thread>
#include <vector>

#include "aw_common.h"

namespace {
long long g_cycles;

void mark(const char* what) {
  using MarkFn = void (*)(const char*);
  static auto fn = reinterpret_cast<MarkFn>(dlsym(RTLD_DEFAULT, "aw_probe_mark"));
  if (fn) fn(what);
}

void report_ms(const char* key, long long ns) { std::printf("probe %s: %.3f ms\n", key, double(ns) / 1e6); }
void report_rc(const char* key, cudaError_t e) {
  std::printf("probe %s: %s\n", key, cudaGetErrorName(e));
  (void)cudaGetLastError();
}

template <class F>
long long timed(F f) {
  long long t0 = aw::now_ns();
  f();
  return aw::now_ns() - t0;
}

__global__ void spin_probe(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
}  // namespace

int main(int argc, char** argv) {
  g_cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  std::printf("probe kernel: %.1f ms\n", aw::cycles_to_ms(g_cycles));
  mark("context");
  int devices = 0;
  report_ms("first call cudaGetDeviceCount", timed([&] { AW_CHECK(cudaGetDeviceCount(&devices)); }));
  report_ms("then cudaFree(0)", timed([] { AW_CHECK(cudaFree(nullptr)); }));
  std::printf("probe devices: %d\n", devices);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sleep_kernel<<<1, 1, 0, s>>>(1000);
  AW_CHECK(cudaStreamSynchronize(s));
  auto busy = [&] { sleep_kernel<<<1, 1, 0, s>>>(g_cycles); };
  const size_t n = 4 << 20;
  char *dev = nullptr, *dev2 = nullptr, *pinned = nullptr, *managed = nullptr;
  AW_CHECK(cudaMalloc(&dev, n));
  AW_CHECK(cudaMalloc(&dev2, n));
  AW_CHECK(cudaMallocHost(&pinned, n));
  AW_CHECK(cudaMallocManaged(&managed, n, cudaMemAttachGlobal));
  std::memset(managed, 1, n);
  std::vector<char> pageable(n, 2);

  mark("event query");
  {
    cudaEvent_t e;
    AW_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    AW_CHECK(cudaEventRecord(e, s));
    AW_CHECK(cudaEventSynchronize(e));
    const int q = 100000;
    long long t = timed([&] {
      for (int i = 0; i < q; ++i) (void)cudaEventQuery(e);
    });
    std::printf("probe cudaEventQuery (complete event): %.3f us per call\n", double(t) / 1e3 / q);
    AW_CHECK(cudaEventDestroy(e));
  }

  mark("prefetch");
  cudaMemLocation to_dev{cudaMemLocationTypeDevice, 0}, to_host{cudaMemLocationTypeHost, 0};
  busy();
  report_ms("prefetch to device behind kernel",
            timed([&] { AW_CHECK(cudaMemPrefetchAsync(managed, n, to_dev, 0, s)); }));
  report_ms("prefetch to host behind kernel",
            timed([&] { AW_CHECK(cudaMemPrefetchAsync(managed, n, to_host, 0, s)); }));
  report_ms("  then stream synchronize", timed([&] { AW_CHECK(cudaStreamSynchronize(s)); }));
  busy();
  report_ms("attach (single) behind kernel",
            timed([&] { AW_CHECK(cudaStreamAttachMemAsync(s, managed, 0, cudaMemAttachSingle)); }));
  AW_CHECK(cudaStreamSynchronize(s));
  report_rc("prefetch of cudaMalloc memory", cudaMemPrefetchAsync(dev, n, to_dev, 0, s));

  mark("batch");
  {
    cudaMemcpyAttributes attr{};
    size_t idx = 0;
    auto batch = [&](void* dst, const void* src, cudaMemcpySrcAccessOrder order, cudaStream_t st) {
      attr.srcAccessOrder = order;
      void* d[] = {dst};
      const void* sr[] = {src};
      size_t sz[] = {n};
      return cudaMemcpyBatchAsync(d, sr, sz, 1, &attr, &idx, 1, st);
    };
    busy();
    report_ms("batch device->pinned behind kernel",
              timed([&] { AW_CHECK(batch(pinned, dev, cudaMemcpySrcAccessOrderStream, s)); }));
    busy();
    report_ms("batch device->pageable behind kernel",
              timed([&] { AW_CHECK(batch(pageable.data(), dev, cudaMemcpySrcAccessOrderStream, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    busy();
    report_ms("batch pageable->device STREAM behind kernel",
              timed([&] { AW_CHECK(batch(dev2, pageable.data(), cudaMemcpySrcAccessOrderStream, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    busy();
    report_ms("batch pageable->device DURING_API_CALL behind kernel",
              timed([&] { AW_CHECK(batch(dev2, pageable.data(), cudaMemcpySrcAccessOrderDuringApiCall, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    busy();
    report_ms("batch pageable->device ANY behind kernel",
              timed([&] { AW_CHECK(batch(dev2, pageable.data(), cudaMemcpySrcAccessOrderAny, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    report_rc("batch on the legacy stream", batch(pinned, dev, cudaMemcpySrcAccessOrderStream, 0));
    report_rc("batch on cudaStreamPerThread", batch(pinned, dev, cudaMemcpySrcAccessOrderStream, cudaStreamPerThread));
    AW_CHECK(cudaDeviceSynchronize());
    cudaGraph_t g;
    AW_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    report_rc("batch into a capturing stream", batch(pinned, dev, cudaMemcpySrcAccessOrderStream, s));
    report_rc("  then end capture", cudaStreamEndCapture(s, &g));
    if (g) cudaGraphDestroy(g);
  }

  mark("graphs");
  {
    auto capture = [&](void* dst, const void* src, cudaMemcpyKind kind, bool kernel_first) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t e = nullptr;
      AW_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      if (kernel_first) sleep_kernel<<<1, 1, 0, s>>>(g_cycles);
      mark("captured cudaMemcpyAsync");
      cudaError_t r = cudaMemcpyAsync(dst, src, 8, kind, s);
      mark("captured cudaMemcpyAsync done");
      cudaError_t end = cudaStreamEndCapture(s, &g);
      if (r != cudaSuccess || end != cudaSuccess) {
        report_rc("capture of the copy", r != cudaSuccess ? r : end);
        return e;
      }
      AW_CHECK(cudaGraphInstantiate(&e, g, 0));
      AW_CHECK(cudaGraphDestroy(g));
      return e;
    };
    cudaGraphExec_t d2h_pageable = capture(pageable.data(), dev, cudaMemcpyDeviceToHost, true);
    cudaGraphExec_t h2d_pageable = capture(dev, pageable.data(), cudaMemcpyHostToDevice, true);
    cudaGraphExec_t only_d2h = capture(pageable.data(), dev, cudaMemcpyDeviceToHost, false);
    if (d2h_pageable) {
      report_ms("graph kernel->D2H pageable: launch", timed([&] { AW_CHECK(cudaGraphLaunch(d2h_pageable, s)); }));
      AW_CHECK(cudaStreamSynchronize(s));
    }
    if (h2d_pageable) {
      report_ms("graph kernel->H2D pageable: launch", timed([&] { AW_CHECK(cudaGraphLaunch(h2d_pageable, s)); }));
      AW_CHECK(cudaStreamSynchronize(s));
    }
    if (only_d2h) {
      busy();
      report_ms("graph D2H pageable only, behind a kernel launched before it: launch",
                timed([&] { AW_CHECK(cudaGraphLaunch(only_d2h, s)); }));
      AW_CHECK(cudaStreamSynchronize(s));
    }
    // Explicit: kernel -> 1D pinned node, then SetParams1D to pageable.
    cudaGraph_t g;
    AW_CHECK(cudaGraphCreate(&g, 0));
    void* args[] = {&g_cycles};
    cudaKernelNodeParams k{};
    k.func = reinterpret_cast<void*>(&sleep_kernel);
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    k.kernelParams = args;
    cudaGraphNode_t kn, cn;
    mark("cudaGraphAddKernelNode");
    AW_CHECK(cudaGraphAddKernelNode(&kn, g, nullptr, 0, &k));
    mark("cudaGraphAddMemcpyNode1D");
    AW_CHECK(cudaGraphAddMemcpyNode1D(&cn, g, &kn, 1, pinned, dev, n, cudaMemcpyDeviceToHost));
    cudaGraphExec_t e;
    mark("cudaGraphInstantiate");
    AW_CHECK(cudaGraphInstantiate(&e, g, 0));
    report_ms("explicit graph kernel->D2H pinned: launch", timed([&] { AW_CHECK(cudaGraphLaunch(e, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    mark("cudaGraphExecMemcpyNodeSetParams1D");
    cudaError_t r = cudaGraphExecMemcpyNodeSetParams1D(e, cn, pageable.data(), dev, n, cudaMemcpyDeviceToHost);
    report_rc("SetParams1D pinned -> pageable", r);
    if (r == cudaSuccess) {
      report_ms("  then launch", timed([&] { AW_CHECK(cudaGraphLaunch(e, s)); }));
      AW_CHECK(cudaStreamSynchronize(s));
    }
    cudaGraphExecUpdateResultInfo info{};
    mark("cudaGraphExecUpdate");
    report_rc("cudaGraphExecUpdate from the pinned graph", cudaGraphExecUpdate(e, g, &info));
    report_ms("  then launch", timed([&] { AW_CHECK(cudaGraphLaunch(e, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    for (cudaGraphExec_t x : {d2h_pageable, h2d_pageable, only_d2h, e})
      if (x) AW_CHECK(cudaGraphExecDestroy(x));
    AW_CHECK(cudaGraphDestroy(g));
    // A wait on an event recorded outside the capture, without cudaEventWaitExternal.
    cudaEvent_t outside;
    AW_CHECK(cudaEventCreate(&outside));
    AW_CHECK(cudaEventRecord(outside, s));
    AW_CHECK(cudaStreamSynchronize(s));
    cudaStream_t s2;
    AW_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    AW_CHECK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
    report_rc("capture: cudaStreamWaitEvent on an outside event, flags 0", cudaStreamWaitEvent(s2, outside, 0));
    cudaGraph_t g2 = nullptr;
    report_rc("  then end capture", cudaStreamEndCapture(s2, &g2));
    if (g2) cudaGraphDestroy(g2);
    AW_CHECK(cudaStreamDestroy(s2));
    AW_CHECK(cudaEventDestroy(outside));
  }

  mark("stream-ordered allocation");
  {
    void* p = nullptr;
    busy();
    report_ms("cudaMallocAsync behind kernel", timed([&] { AW_CHECK(cudaMallocAsync(&p, n, s)); }));
    report_ms("cudaFreeAsync behind kernel", timed([&] { AW_CHECK(cudaFreeAsync(p, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    AW_CHECK(cudaMallocAsync(&p, n, s));
    busy();
    report_ms("cudaFree of cudaMallocAsync memory behind kernel", timed([&] { AW_CHECK(cudaFree(p)); }));
  }

  mark("3D and array copies");
  {
    cudaMemcpy3DParms p{};
    p.srcPtr = make_cudaPitchedPtr(dev, 1024, 1024, n / 1024);
    p.dstPtr = make_cudaPitchedPtr(pageable.data(), 1024, 1024, n / 1024);
    p.extent = make_cudaExtent(1024, n / 1024, 1);
    p.kind = cudaMemcpyDeviceToHost;
    busy();
    report_ms("cudaMemcpy3DAsync device->pageable behind kernel", timed([&] { AW_CHECK(cudaMemcpy3DAsync(&p, s)); }));
    cudaMemcpy3DPeerParms pp{};
    pp.srcPtr = make_cudaPitchedPtr(dev, 1024, 1024, n / 1024);
    pp.dstPtr = make_cudaPitchedPtr(dev2, 1024, 1024, n / 1024);
    pp.dstDevice = devices - 1;
    pp.extent = make_cudaExtent(1024, n / 1024, 1);
    if (devices > 1) {
      AW_CHECK(cudaSetDevice(devices - 1));
      AW_CHECK(cudaFree(dev2));
      AW_CHECK(cudaMalloc(&dev2, n));
      pp.dstPtr.ptr = dev2;
      AW_CHECK(cudaSetDevice(0));
    }
    busy();
    report_ms("cudaMemcpy3DPeerAsync behind kernel", timed([&] { AW_CHECK(cudaMemcpy3DPeerAsync(&pp, s)); }));
    report_ms("cudaMemcpy3DPeer behind kernel", timed([&] { AW_CHECK(cudaMemcpy3DPeer(&pp)); }));
    AW_CHECK(cudaDeviceSynchronize());
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t a;
    AW_CHECK(cudaMallocArray(&a, &desc, 1024, n / 1024, 0));
    report_ms(
        "cudaMemcpy2DToArrayAsync pageable (4 MiB)", timed([&] {
          AW_CHECK(cudaMemcpy2DToArrayAsync(a, 0, 0, pageable.data(), 1024, 1024, n / 1024, cudaMemcpyHostToDevice, s));
        }));
    busy();
    report_ms("cudaMemcpy2DFromArrayAsync ->pageable behind kernel", timed([&] {
                AW_CHECK(cudaMemcpy2DFromArrayAsync(pageable.data(), 1024, a, 0, 0, 1024, n / 1024,
                                                    cudaMemcpyDeviceToHost, s));
              }));
    AW_CHECK(cudaStreamSynchronize(s));
    AW_CHECK(cudaFreeArray(a));
  }

  mark("concurrent first launches");
  {
    std::vector<long long> t(4);
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&, i] {
        ++ready;
        while (ready < 4) std::this_thread::yield();
        t[i] = timed([] { spin_probe<<<1, 1>>>(1000); });
      });
    for (auto& th : threads) th.join();
    for (int i = 0; i < 4; ++i)
      std::printf("probe concurrent first launch, thread %d: %.3f ms\n", i, double(t[i]) / 1e6);
    AW_CHECK(cudaDeviceSynchronize());
  }

  if (devices > 1) {
    mark("two devices");
    char* d1 = nullptr;
    AW_CHECK(cudaSetDevice(1));
    AW_CHECK(cudaMalloc(&d1, n));
    cudaStream_t s1;
    AW_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    AW_CHECK(cudaSetDevice(0));
    report_rc("launch into a stream of device 1 from device 0",
              (sleep_kernel<<<1, 1, 0, s1>>>(1000), cudaGetLastError()));
    cudaEvent_t e0;
    AW_CHECK(cudaEventCreate(&e0));
    report_rc("record a device-0 event into a device-1 stream", cudaEventRecord(e0, s1));
    busy();
    report_ms("cudaMemcpyPeerAsync 0->1 without peer access, behind kernel",
              timed([&] { AW_CHECK(cudaMemcpyPeerAsync(d1, 1, dev, 0, n, s)); }));
    AW_CHECK(cudaStreamSynchronize(s));
    AW_CHECK(cudaSetDevice(1));
    sleep_kernel<<<1, 1>>>(g_cycles);
    AW_CHECK(cudaSetDevice(0));
    report_ms("cudaMemcpyPeer 1->0 behind a kernel on device 1",
              timed([&] { AW_CHECK(cudaMemcpyPeer(dev, 0, d1, 1, n)); }));
    report_ms("  then device 0 default-stream synchronize", timed([&] { AW_CHECK(cudaStreamSynchronize(0)); }));
    report_rc("cudaDeviceEnablePeerAccess(1)", cudaDeviceEnablePeerAccess(1, 0));
    busy();
    report_ms("cudaMemcpyPeerAsync 0->1 with peer access, behind kernel",
              timed([&] { AW_CHECK(cudaMemcpyPeerAsync(d1, 1, dev, 0, n, s)); }));
    AW_CHECK(cudaDeviceSynchronize());
    AW_CHECK(cudaEventDestroy(e0));
  }
  std::printf("probe done\n");
  return 0;
}
