// asyncwatch overhead microbenchmark.
//
// Measures the host cost, in nanoseconds per call, of the CUDA calls asyncwatch intercepts. Each item
// is timed with clock_gettime(CLOCK_MONOTONIC) around batches of calls after a warm-up; work that
// must drain between batches (so that a stream's queue never fills) happens outside the timed part.
// Every repetition runs all items once, in order, so slow drifts hit every item alike.
//
// Output (stdout), one line per item, key=value fields:
//   item=launch reps=5 median_ns=3301.2 min_ns=3290.7 iters=20000 calls=100264 samples=3301.2,...
//     median_ns/min_ns: over the repetitions of ns per call; iters: timed calls per repetition;
//     calls: CUDA API calls this item issued in all (warm-up, timed calls, and the synchronizes
//     between batches), used by run_overhead.sh for trace bytes per call; samples: every repetition.
//   mem=thread threads=16 kb_per_thread=...   resident memory per extra thread that made CUDA calls
//                                             (only with --only ...,thread_mem)
//   total calls=... rss_kb=...                all CUDA calls this process made itself; VmRSS at the end
//   paired item=launch reps=40 on_median_ns=... off_median_ns=... ratio_median=... ratio_q1=...
//          ratio_q3=...                       with --paired, under asyncwatch only: each repetition times
//                                             the item with recording paused and on (asyncwatch's control
//                                             API, asyncwatch/control.h), in alternating order; the ratio
//                                             is on / paused within the repetition, so the process-to-
//                                             process spread of the bare cost cancels out
//
// Usage: overhead_bench [--reps R] [--scale F] [--quick] [--only ITEM[,ITEM..]|none]
//                       [--warmup-ms MS] [--threads N] [--paired] [--list]
//   --scale multiplies every item's iteration count; --warmup-ms: launches and copies for that long
//   before anything is timed [500]; --quick = --scale 0.05 --reps 3 --warmup-ms 20.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define BENCH_CHECK(call)                                                                                        \
  do {                                                                                                           \
    cudaError_t bench_err_ = (call);                                                                             \
    if (bench_err_ != cudaSuccess) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(bench_err_)); \
      std::exit(2);                                                                                              \
    }                                                                                                            \
  } while (0)

// Checked inside timed loops: a compare and a rarely taken branch, the same in every mode.
#define BENCH_FAST_CHECK(call)                                             \
  do {                                                                     \
    if (__builtin_expect((call) != cudaSuccess, 0)) fail(#call, __LINE__); \
  } while (0)

[[noreturn]] __attribute__((noinline)) void fail(const char* what, int line) {
  cudaError_t e = cudaGetLastError();
  std::fprintf(stderr, "overhead_bench.cu:%d: %s failed: %s\n", line, what, cudaGetErrorString(e));
  std::exit(2);
}

__global__ void empty_kernel() {}

void CUDART_CB empty_host_fn(void*) {}

inline long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

long rss_kb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) {
      kb = std::strtol(line + 6, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

struct Context {
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  void* dev = nullptr;             // 4 MiB device buffer
  void* pinned = nullptr;          // 64 bytes of cudaMallocHost memory
  void* pageable_small = nullptr;  // 64 bytes of malloc memory
  void* pageable_big = nullptr;    // 4 MiB of malloc memory
  long long calls = 0;             // CUDA API calls made by the items (for trace bytes per call)
};

constexpr size_t kSmall = 64;
constexpr size_t kBig = 4u << 20;

// One benchmark item: `batch` calls of `one` are timed back to back, then `drain` runs untimed.
struct Item {
  const char* name;
  long long iters;  // timed calls per repetition at --scale 1
  int batch;        // calls per timed batch
  int calls_per_iter;
  void (*one)(Context&);
  bool drain;  // cudaStreamSynchronize after each batch (untimed)
};

void do_launch(Context& c) {
  empty_kernel<<<1, 1, 0, c.stream>>>();
  BENCH_FAST_CHECK(cudaGetLastError());
}
void do_copy_pinned(Context& c) {
  BENCH_FAST_CHECK(cudaMemcpyAsync(c.dev, c.pinned, kSmall, cudaMemcpyHostToDevice, c.stream));
}
void do_copy_pageable(Context& c) {
  BENCH_FAST_CHECK(cudaMemcpyAsync(c.dev, c.pageable_small, kSmall, cudaMemcpyHostToDevice, c.stream));
}
void do_copy_pageable_big(Context& c) {
  BENCH_FAST_CHECK(cudaMemcpyAsync(c.dev, c.pageable_big, kBig, cudaMemcpyHostToDevice, c.stream));
}
void do_host_func(Context& c) { BENCH_FAST_CHECK(cudaLaunchHostFunc(c.stream, empty_host_fn, nullptr)); }
void do_sync_idle(Context& c) { BENCH_FAST_CHECK(cudaStreamSynchronize(c.stream)); }
void do_event(Context& c) {
  BENCH_FAST_CHECK(cudaEventRecord(c.event, c.stream));
  cudaError_t e = cudaEventQuery(c.event);
  if (__builtin_expect(e != cudaSuccess && e != cudaErrorNotReady, 0)) fail("cudaEventQuery", __LINE__);
}

// Iteration counts sized so that one repetition of all items takes about 0.4 s on the H200
// (measured there: launch 3.3-4 us, pinned 64 B copy 1.3-1.4 us, 4 MiB pageable copy 0.3 ms).
const Item kItems[] = {
    {"launch", 50000, 256, 1, do_launch, true},
    {"copy_pinned_64", 50000, 256, 1, do_copy_pinned, true},
    {"copy_pageable_64", 20000, 256, 1, do_copy_pageable, true},
    {"copy_pageable_4m", 100, 8, 1, do_copy_pageable_big, true},
    {"host_func", 20000, 128, 1, do_host_func, true},
    {"sync_idle", 50000, 256, 1, do_sync_idle, false},
    {"event_record_query", 50000, 256, 2, do_event, true},
};

// Runs `n` calls of the item in batches; returns the timed nanoseconds.
long long run_item(const Item& it, Context& c, long long n) {
  long long timed = 0;
  long long done = 0;
  while (done < n) {
    long long b = std::min<long long>(it.batch, n - done);
    long long t0 = now_ns();
    for (long long i = 0; i < b; ++i) it.one(c);
    timed += now_ns() - t0;
    done += b;
    c.calls += b * it.calls_per_iter;
    if (it.drain) {
      BENCH_FAST_CHECK(cudaStreamSynchronize(c.stream));
      ++c.calls;
    }
  }
  if (!it.drain) {
    BENCH_FAST_CHECK(cudaStreamSynchronize(c.stream));
    ++c.calls;
  }
  return timed;
}

// Resident memory added per thread that makes CUDA calls (thread stack pages, the runtime's and,
// when preloaded, asyncwatch's per-thread state). Threads stay alive while VmRSS is read.
void thread_memory(Context& c, int nthreads) {
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  std::atomic<long long> calls{0};
  long before = rss_kb();
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&] {
      // A launch, a copy and a sync from each thread: each touches its own record buffer.
      empty_kernel<<<1, 1, 0, c.stream>>>();
      BENCH_FAST_CHECK(cudaGetLastError());
      BENCH_FAST_CHECK(cudaMemcpyAsync(c.dev, c.pinned, kSmall, cudaMemcpyHostToDevice, c.stream));
      BENCH_FAST_CHECK(cudaStreamSynchronize(c.stream));
      calls += 3;
      ready.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  while (ready.load() < nthreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  long during = rss_kb();
  release = true;
  for (auto& th : threads) th.join();
  c.calls += calls.load();
  std::printf("mem=thread threads=%d kb_per_thread=%.1f rss_before_kb=%ld rss_during_kb=%ld\n", nthreads,
              double(during - before) / nthreads, before, during);
}

void usage() {
  std::fprintf(stderr,
               "usage: overhead_bench [--reps R] [--scale F] [--quick] [--only ITEM[,ITEM..]|none] "
               "[--threads N] [--warmup-ms MS] [--list]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  double scale = 1.0;
  int threads = 16;
  double warmup_ms = 500;
  std::string only;
  bool paired = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--reps")
      reps = std::atoi(next());
    else if (a == "--scale")
      scale = std::atof(next());
    else if (a == "--quick") {
      scale = 0.05;
      reps = 3;
      warmup_ms = 20;
    } else if (a == "--warmup-ms")
      warmup_ms = std::atof(next());
    else if (a == "--only")
      only = next();
    else if (a == "--threads")
      threads = std::atoi(next());
    else if (a == "--paired")
      paired = true;
    else if (a == "--list") {
      for (const Item& it : kItems) std::printf("%s\n", it.name);
      std::printf("thread_mem\n");
      return 0;
    } else
      usage();
  }
  if (reps < 1 || scale <= 0) usage();

  auto selected = [&](const char* name) {
    if (only.empty()) return true;
    std::string list = "," + only + ",";
    return list.find(std::string(",") + name + ",") != std::string::npos;
  };

  Context c;
  BENCH_CHECK(cudaSetDevice(0));
  BENCH_CHECK(cudaFree(nullptr));  // create the context before anything is timed
  BENCH_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  BENCH_CHECK(cudaEventCreateWithFlags(&c.event, cudaEventDisableTiming));
  BENCH_CHECK(cudaMalloc(&c.dev, kBig));
  BENCH_CHECK(cudaMallocHost(&c.pinned, kSmall));
  c.pageable_small = std::malloc(kSmall);
  c.pageable_big = std::malloc(kBig);
  std::memset(c.pinned, 1, kSmall);
  std::memset(c.pageable_small, 2, kSmall);
  std::memset(c.pageable_big, 3, kBig);  // touch every page before timing
  c.calls += 7;

  struct State {
    const Item* item;
    long long n;
    std::vector<double> ns_per_call;
    long long calls_before, calls;
  };
  std::vector<State> states;
  for (const Item& it : kItems) {
    if (!selected(it.name)) continue;
    long long n = std::max<long long>(it.batch, static_cast<long long>(it.iters * scale));
    states.push_back({&it, n, {}, 0, 0});
  }

  // Warm-up. First a stretch of launches and copies (on the H200 the first few hundred ms of a
  // process ran up to 30% slower: CPU and GPU clocks ramping up), then each item once (first
  // launch = module loading, staging buffers, asyncwatch's caches).
  if (!states.empty()) {
    long long until = now_ns() + static_cast<long long>(warmup_ms * 1e6);
    while (now_ns() < until) {
      run_item(kItems[0], c, 256);
      run_item(kItems[1], c, 256);
    }
  }
  for (State& s : states) {
    long long before = c.calls;
    run_item(*s.item, c, std::max<long long>(s.item->batch, s.n / 10));
    s.calls += c.calls - before;
  }
  if (paired) {
    // In-process A/B through the control API: recording paused vs on, in alternating order.
    using SetRecording = int (*)(int);
    auto set_recording = reinterpret_cast<SetRecording>(dlsym(RTLD_DEFAULT, "asyncwatch_set_recording"));
    if (!set_recording) {
      std::printf("paired: asyncwatch is not loaded (no asyncwatch_set_recording)\n");
      return 0;
    }
    auto quantile = [](std::vector<double> v, double f) {
      std::sort(v.begin(), v.end());
      double pos = f * double(v.size() - 1);
      size_t lo = static_cast<size_t>(pos);
      return lo + 1 < v.size() ? v[lo] + (pos - double(lo)) * (v[lo + 1] - v[lo]) : v[lo];
    };
    for (State& s : states) {
      std::vector<double> on, off, ratio;
      for (int r = 0; r < reps; ++r) {
        double t[2];
        for (int k = 0; k < 2; ++k) {
          int rec = (r + k) % 2;  // alternate which state goes first
          set_recording(rec);
          t[rec] = double(run_item(*s.item, c, s.n)) / double(s.n);
        }
        set_recording(1);
        on.push_back(t[1]);
        off.push_back(t[0]);
        ratio.push_back(t[1] / t[0]);
      }
      std::printf(
          "paired item=%s reps=%d on_median_ns=%.1f off_median_ns=%.1f ratio_median=%.4f ratio_q1=%.4f "
          "ratio_q3=%.4f\n",
          s.item->name, reps, quantile(on, 0.5), quantile(off, 0.5), quantile(ratio, 0.5), quantile(ratio, 0.25),
          quantile(ratio, 0.75));
      std::fflush(stdout);
    }
    return 0;
  }
  for (int r = 0; r < reps; ++r) {
    for (State& s : states) {
      long long before = c.calls;
      long long t = run_item(*s.item, c, s.n);
      s.calls += c.calls - before;
      s.ns_per_call.push_back(double(t) / double(s.n));
    }
  }
  for (State& s : states) {
    std::vector<double> v = s.ns_per_call;
    std::sort(v.begin(), v.end());
    double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    std::printf("item=%s reps=%d median_ns=%.1f min_ns=%.1f iters=%lld calls=%lld samples=", s.item->name, reps, median,
                v.front(), s.n, s.calls);
    for (size_t i = 0; i < s.ns_per_call.size(); ++i) std::printf("%s%.1f", i ? "," : "", s.ns_per_call[i]);
    std::printf("\n");
    std::fflush(stdout);
  }
  // Only when asked for by name: each thread claims its own trace block, which would distort the
  // trace bytes per call of the timed items.
  if (only.find("thread_mem") != std::string::npos && threads > 0) thread_memory(c, threads);

  BENCH_CHECK(cudaStreamSynchronize(c.stream));
  BENCH_CHECK(cudaEventDestroy(c.event));
  BENCH_CHECK(cudaStreamDestroy(c.stream));
  BENCH_CHECK(cudaFreeHost(c.pinned));
  BENCH_CHECK(cudaFree(c.dev));
  c.calls += 6;
  std::free(c.pageable_small);
  std::free(c.pageable_big);
  std::printf("total calls=%lld rss_kb=%ld\n", c.calls, rss_kb());
  return 0;
}
