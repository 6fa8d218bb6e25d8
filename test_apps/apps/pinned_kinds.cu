// Pinned host memory of every kind: each D2H copy follows a sleep kernel and must only enqueue.
//   cudaMallocHost                         @PIN_MALLOCHOST
//   cudaHostAlloc(Mapped | Portable)       @PIN_HOSTALLOC
//   cudaHostRegister'ed malloc buffer, through an interior pointer   @PIN_REGISTERED_INTERIOR
//   the same buffer after cudaHostUnregister: pageable again, blocks  @UNREGISTERED_D2H
//   pinned_kinds [cycles=1e8 (~50 ms)] [bytes=16M]
// The app also checks what cudaPointerGetAttributes says about each buffer (docs/simulator.md, "Pointer attributes").
#include "aw_common.h"

static void expect_type(const void* p, cudaMemoryType want, const char* what) {
  cudaPointerAttributes a;
  AW_CHECK(cudaPointerGetAttributes(&a, p));
  AW_EXPECT(a.type == want, "%s: cudaPointerGetAttributes type %d, expected %d", what, int(a.type), int(want));
}

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 100000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 16ll << 20));
  const size_t interior = 4096 + 64;  // an interior, not page-aligned offset into the registered range
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* dev = nullptr;
  AW_CHECK(cudaMalloc(&dev, bytes + interior));
  char* src = nullptr;
  AW_CHECK(cudaMallocHost(&src, bytes));
  aw::fill(src, bytes, 11);
  AW_CHECK(cudaMemcpy(dev, src, bytes, cudaMemcpyHostToDevice));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up (lazy loading)
  AW_CHECK(cudaStreamSynchronize(s));

  // 1. cudaMallocHost
  char* a = nullptr;
  AW_CHECK(cudaMallocHost(&a, bytes));
  expect_type(a, cudaMemoryTypeHost, "cudaMallocHost");
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(a, dev, bytes, cudaMemcpyDeviceToHost, s));  // @PIN_MALLOCHOST
  aw::timing("D2H into cudaMallocHost memory after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(a, bytes, 11), "cudaMallocHost: wrong data");
  std::printf("cudaMallocHost: ok\n");

  // 2. cudaHostAlloc, mapped and portable
  char* b = nullptr;
  AW_CHECK(cudaHostAlloc(&b, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  expect_type(b, cudaMemoryTypeHost, "cudaHostAlloc");
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(b, dev, bytes, cudaMemcpyDeviceToHost, s));  // @PIN_HOSTALLOC
  aw::timing("D2H into cudaHostAlloc(mapped|portable) memory after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(b, bytes, 11), "cudaHostAlloc: wrong data");
  std::printf("cudaHostAlloc(mapped|portable): ok\n");

  // 3. cudaHostRegister of a malloc'd buffer; the copy goes to an interior pointer
  const size_t reg_bytes = bytes + 2 * interior;
  char* c = static_cast<char*>(malloc(reg_bytes));
  AW_EXPECT(c != nullptr, "malloc failed");
  std::memset(c, 0, reg_bytes);
  expect_type(c + interior, cudaMemoryTypeUnregistered, "malloc before cudaHostRegister");
  AW_CHECK(cudaHostRegister(c, reg_bytes, cudaHostRegisterDefault));
  expect_type(c, cudaMemoryTypeHost, "registered base");
  expect_type(c + interior, cudaMemoryTypeHost, "registered interior pointer");
  expect_type(c + reg_bytes - 1, cudaMemoryTypeHost, "registered last byte");
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(c + interior, dev, bytes, cudaMemcpyDeviceToHost, s));  // @PIN_REGISTERED_INTERIOR
  aw::timing("D2H into a registered range (interior pointer) after the kernel, returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(c + interior, bytes, 11), "registered interior: wrong data");
  std::printf("cudaHostRegister, interior pointer: ok\n");

  // 4. the same buffer after cudaHostUnregister: pageable again
  AW_CHECK(cudaHostUnregister(c));
  expect_type(c + interior, cudaMemoryTypeUnregistered, "after cudaHostUnregister");
  std::memset(c, 0, reg_bytes);
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(c + interior, dev, bytes, cudaMemcpyDeviceToHost, s));  // @UNREGISTERED_D2H
  aw::timing("D2H into the unregistered (pageable) buffer after the kernel, returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(c + interior, bytes, 11), "after unregister: data not complete on return");
  std::printf("after cudaHostUnregister: pageable, data complete on return\n");

  AW_CHECK(cudaStreamSynchronize(s));
  free(c);
  AW_CHECK(cudaFreeHost(a));
  AW_CHECK(cudaFreeHost(b));
  AW_CHECK(cudaFreeHost(src));
  AW_CHECK(cudaFree(dev));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
