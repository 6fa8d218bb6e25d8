// Callback timing: host functions that run 24-85 us each hold their stream that
// long; only those over --min-callback-us (1 ms) are reported today.
//   host_fn_times [count=40]
//   @HOST_FN_SHORT   cudaLaunchHostFunc of a function that busy-waits 24, 45, 65 or 85 us in turn
//   @HOST_FN_LONG    cudaLaunchHostFunc of a function that busy-waits 2 ms, once
//
// Today: long-host-callback at @HOST_FN_LONG only.
// Expected: the report shows each callback site with its run times (min about
// 24 us, median 45-65 us, max about 85 us for @HOST_FN_SHORT; 2 ms for @HOST_FN_LONG), a warning only
// above the threshold (@HOST_FN_LONG).
#include "aw_common.h"

#include <atomic>

static std::atomic<int> g_runs{0};
static void busy_us(long long us) {
  const long long end = aw::now_ns() + us * 1000;
  while (aw::now_ns() < end) {
  }
}
static void short_fn(void* arg) {
  static const long long us[4] = {24, 45, 65, 85};
  busy_us(us[reinterpret_cast<intptr_t>(arg) % 4]);
  ++g_runs;
}
static void long_fn(void*) {
  busy_us(2000);
  ++g_runs;
}

int main(int argc, char** argv) {
  const int count = int(aw::arg_num(argc, argv, 1, 40));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < count; ++i)
    AW_CHECK(cudaLaunchHostFunc(s, short_fn, reinterpret_cast<void*>(intptr_t(i))));  // @HOST_FN_SHORT
  AW_CHECK(cudaLaunchHostFunc(s, long_fn, nullptr));  // @HOST_FN_LONG
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(g_runs == count + 1, "%d host functions ran, want %d", g_runs.load(), count + 1);
  std::printf("%d short host functions and 1 long: ran\n", count);
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
