// Fix pair: a loop whose host work on the previous iteration's result could overlap the next
// iteration's kernel and copy. Flagged: the result lands in pageable buffers, so each download
// waits for its kernel before the host work starts (pageable-async-copy, waited-for-stream).
// Fixed: pinned buffers, the download returns at once, the host works on the previous result while
// the GPU runs (the same code: an event per buffer says when its result is there).
//   fix_overlap_loop [--fixed] [bytes=16M] [iterations=8] [kernel_cycles=4e7] [host_us=15000]
#include "fix_pair.h"

int main(int argc, char** argv) {
  int a = 1;
  const bool fixed = aw::fixed_variant(argc, argv, &a);
  const size_t bytes = size_t(aw::arg_num(argc, argv, a, 16ll << 20));
  const int iterations = int(aw::arg_num(argc, argv, a + 1, 8));
  const long long cycles = aw::arg_num(argc, argv, a + 2, 40000000);
  const long long host_us = aw::arg_num(argc, argv, a + 3, 15000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes));
  char* pinned[2];
  char* pageable[2];
  cudaEvent_t ready[2];
  for (int i = 0; i < 2; ++i) {
    AW_CHECK(cudaMallocHost(&pinned[i], bytes));
    pageable[i] = static_cast<char*>(malloc(bytes));
    std::memset(pageable[i], 0, bytes);  // both touched before the loop
    std::memset(pinned[i], 0, bytes);
    AW_CHECK(cudaEventCreateWithFlags(&ready[i], cudaEventDisableTiming));
  }
  char* fill = static_cast<char*>(malloc(bytes));
  aw::fill(fill, bytes, 23);
  AW_CHECK(cudaMemcpy(dev, fill, bytes, cudaMemcpyHostToDevice));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  char** buf = fixed ? pinned : pageable;
  const long long t0 = aw::now_ns();
  for (int i = 0; i <= iterations; ++i) {
    if (i < iterations) {
      sleep_kernel<<<1, 1, 0, s>>>(cycles);
      AW_CHECK(cudaMemcpyAsync(buf[i % 2], dev, bytes, cudaMemcpyDeviceToHost, s));  // @RESULT
      AW_CHECK(cudaEventRecord(ready[i % 2], s));
    }
    if (i > 0) {  // the previous result: wait for it, then work on it
      AW_CHECK(cudaEventSynchronize(ready[(i - 1) % 2]));
      AW_EXPECT(aw::check(buf[(i - 1) % 2], bytes, 23), "iteration %d: result wrong", i - 1);
      aw::host_work(host_us);
    }
  }
  aw::timing("loop", aw::now_ns() - t0);
  std::printf("%d iterations of %zu bytes (%s): ok\n", iterations, bytes, fixed ? "pinned" : "pageable");
  for (int i = 0; i < 2; ++i) {
    AW_CHECK(cudaFreeHost(pinned[i]));
    free(pageable[i]);
    AW_CHECK(cudaEventDestroy(ready[i]));
  }
  free(fill);
  AW_CHECK(cudaFree(dev));
  return 0;
}
