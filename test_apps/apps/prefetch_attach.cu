// Managed memory: cudaMemPrefetchAsync to the device and to the host, and
// cudaStreamAttachMemAsync, each behind a sleep kernel on the same stream. Prefetch is documented as
// asynchronous to the host; on the H200 (64 MiB behind the 101 ms kernel) neither
// prefetch waited for the stream (0.27-0.56 ms to the device, 0.005-0.016 ms to the host) nor did
// the attach (0.034-0.042 ms); the simulator queues all three (docs/simulator.md).
//   prefetch_attach [cycles=2e8 (~101 ms)] [bytes=64M]
//   @PREFETCH_DEVICE  cudaMemPrefetchAsync(..., device 0)
//   @PREFETCH_HOST    cudaMemPrefetchAsync(..., host)
//   @ATTACH           cudaStreamAttachMemAsync(..., cudaMemAttachSingle)
//
// Today: none of the three is intercepted: no finding at those lines.
// Expected: the prefetches and the attach are recorded; a prefetch that blocked
// would be reported by the blocking rules with its call site and managed memory; here none blocks:
// nothing at @PREFETCH_DEVICE, @PREFETCH_HOST and @ATTACH.
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 64ll << 20));
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* managed = nullptr;
  AW_CHECK(cudaMallocManaged(&managed, bytes, cudaMemAttachGlobal));
  aw::fill(managed, bytes, 23);
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));
  cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  cudaMemLocation host{cudaMemLocationTypeHost, 0};

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemPrefetchAsync(managed, bytes, device, 0, s));  // @PREFETCH_DEVICE
  aw::timing("prefetch to the device returned after", aw::now_ns() - t0);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemPrefetchAsync(managed, bytes, host, 0, s));  // @PREFETCH_HOST
  aw::timing("prefetch to the host returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(managed, bytes, 23), "managed data changed by prefetching");
  std::printf("prefetch to the device and back: data intact\n");

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaStreamAttachMemAsync(s, managed, 0, cudaMemAttachSingle));  // @ATTACH
  aw::timing("cudaStreamAttachMemAsync returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  aw::fill(managed, bytes, 24);  // attached to s, which is idle: the host may touch it
  AW_EXPECT(aw::check(managed, bytes, 24), "managed data after attach");
  std::printf("attach to the stream: ok\n");
  AW_CHECK(cudaFree(managed));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
