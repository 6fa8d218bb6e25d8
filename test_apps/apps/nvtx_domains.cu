// NVTX domains and registered strings (the nvtx3 C++ API of the toolkit, as libraries use it): a
// range of a domain is reported as "DOMAIN::MESSAGE"; push/pop nest per domain, so ranges of two
// domains that overlap without nesting are each followed.
//   nvtx_domains [iterations=10] [cycles=2e5 (~100 us)]
//
// Each iteration: a kernel, then a pageable D2H cudaMemcpyAsync that waits for it (@DOMAIN_COPY)
// inside the scoped range trainer::forward (a registered string of domain `trainer`, nvtx3's
// scoped_range_in), itself inside the core-domain push range `epoch_body`. Then, per iteration,
// the core range `phase` is pushed, the domain range trainer::backward pushed, and `phase` popped
// before the copy at @INTERLEAVED_COPY: that copy is in trainer::backward only (with one stack for
// all domains the core pop would have ended trainer::backward instead). Last, @PLAIN_COPY in no range.
#include <nvtx3/nvtx3.hpp>

#include "aw_common.h"

struct trainer_domain {
  static constexpr const char* name{"trainer"};
};
using trainer_range = nvtx3::scoped_range_in<trainer_domain>;

static void copy_after_kernel(cudaStream_t s, int* dev, int i, long long cycles, int* result) {
  AW_CHECK(cudaMemsetAsync(dev, i, sizeof(int), s));
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  *result = -1;
}

int main(int argc, char** argv) {
  const int iterations = int(aw::arg_num(argc, argv, 1, 10));
  const long long cycles = aw::arg_num(argc, argv, 2, 200000);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, sizeof(int)));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up: lazy loading is not this test
  AW_CHECK(cudaStreamSynchronize(s));
  static nvtx3::registered_string_in<trainer_domain> forward{"forward"};
  for (int i = 0; i < iterations; ++i) {
    nvtxRangePushA("epoch_body");
    {
      trainer_range r{forward};
      int result;
      copy_after_kernel(s, dev, i, cycles, &result);
      AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @DOMAIN_COPY
      AW_CHECK(cudaStreamSynchronize(s));
      AW_EXPECT(result == i * 0x01010101, "iteration %d: got %d", i, result);
    }
    nvtxRangePop();
  }
  nvtxDomainHandle_t trainer = nvtx3::domain::get<trainer_domain>();
  nvtxEventAttributes_t backward{};
  backward.version = NVTX_VERSION;
  backward.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  backward.messageType = NVTX_MESSAGE_TYPE_ASCII;
  backward.message.ascii = "backward";
  for (int i = 0; i < iterations; ++i) {
    nvtxRangePushA("phase");
    nvtxDomainRangePushEx(trainer, &backward);
    nvtxRangePop();  // ends `phase`, not trainer::backward
    int result;
    copy_after_kernel(s, dev, i, cycles, &result);
    AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @INTERLEAVED_COPY
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(result == i * 0x01010101, "iteration %d: got %d", i, result);
    nvtxDomainRangePop(trainer);
  }
  for (int i = 0; i < iterations; ++i) {
    int result;
    copy_after_kernel(s, dev, i, cycles, &result);
    AW_CHECK(cudaMemcpyAsync(&result, dev, sizeof result, cudaMemcpyDeviceToHost, s));  // @PLAIN_COPY
    AW_CHECK(cudaStreamSynchronize(s));
    AW_EXPECT(result == i * 0x01010101, "iteration %d: got %d", i, result);
  }
  std::printf("%d copies in domain ranges, %d interleaved, %d in none: data complete\n", iterations, iterations,
              iterations);
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
