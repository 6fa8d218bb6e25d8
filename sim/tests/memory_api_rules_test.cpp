// Managed-memory prefetch and attachment, batch copies, stream-ordered allocation, CUDA arrays, 3D
// copies and 2D/3D memsets on the simulator (docs/simulator.md states each rule). Waits are ratios of
// a 0.2 s simulated kernel queued before the call under test; "returned at once" holds the stream.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim_test_support.h"

using namespace aw_sim_test;

namespace {

void stub_dummy() {}
const void* dummy_kernel() {
  static const void* k = register_kernel(reinterpret_cast<const void*>(&stub_dummy), "_Z5dummyx");
  return k;
}

constexpr double kKernel = 0.2;
// "Returned at once" is checked with returns_while_stream_held, not a time bound (an enqueue was seen
// to take 18 ms on the loaded 2-core machine).

class MemoryApi : public ::testing::Test {
 protected:
  cudaStream_t s = nullptr;
  void SetUp() override {
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(launch_sleep(dummy_kernel(), 0.001, s), cudaSuccess);  // lazy loading outside the measurements
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  void TearDown() override { cudaStreamDestroy(s); }
  void busy_stream() { ASSERT_EQ(launch_sleep(dummy_kernel(), kKernel, s), cudaSuccess); }
};

cudaMemLocation device_location(int id) { return cudaMemLocation{cudaMemLocationTypeDevice, id}; }
cudaMemLocation host_location() { return cudaMemLocation{cudaMemLocationTypeHost, 0}; }

}  // namespace

// The check the tests below use for "returned at once" tells a queued copy from one that waits.
TEST_F(MemoryApi, HoldingTheStreamTellsQueuedCallsFromWaitingOnes) {
  char* dev = nullptr;
  char* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 64), cudaSuccess);
  char pageable[64];
  const auto valve = std::chrono::milliseconds(100);
  EXPECT_TRUE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaMemcpyAsync(pinned, dev, 64, cudaMemcpyDeviceToHost, s), cudaSuccess); }, valve));
  EXPECT_FALSE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaMemcpyAsync(pageable, dev, 64, cudaMemcpyDeviceToHost, s), cudaSuccess); }, valve));
  EXPECT_FALSE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess); }, valve));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaFreeHost(pinned);
  cudaFree(dev);
}

// Both directions are only queued: on the H200 a prefetch to the host returned in 0.007-0.016 ms
// behind a 101 ms kernel (the stream synchronize after it waited 101.7 ms).
TEST_F(MemoryApi, PrefetchIsQueuedToTheDeviceAndToTheHost) {
  const size_t n = 1 << 20;
  char* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void**>(&managed), n, cudaMemAttachGlobal), cudaSuccess);
  busy_stream();
  EXPECT_TRUE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaMemPrefetchAsync(managed, n, device_location(0), 0, s), cudaSuccess); }));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);  // queued behind the kernel
  busy_stream();
  EXPECT_TRUE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaMemPrefetchAsync(managed, n, host_location(), 0, s), cudaSuccess); }));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // Only managed memory can be prefetched; flags must be 0.
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(dev, n, device_location(0), 0, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchAsync(managed, n, device_location(0), 1, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchAsync(managed, 2 * n, device_location(0), 0, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemAdvise(managed, n, cudaMemAdviseSetReadMostly, device_location(0)), cudaSuccess);
  EXPECT_EQ(cudaMemAdvise(dev, n, cudaMemAdviseSetReadMostly, device_location(0)), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  // The driver's CUDA 8 form (a device ordinal or CU_DEVICE_CPU) behaves the same.
  Driver drv;
  auto v1 = drv.get<CUresult(CUDAAPI*)(CUdeviceptr, size_t, CUdevice, CUstream)>("cuMemPrefetchAsync", 0);
  void* fn = nullptr;
  ASSERT_EQ(drv.get_proc("cuMemPrefetchAsync", &fn, 12000, 0, nullptr), CUDA_SUCCESS);
  v1 = reinterpret_cast<decltype(v1)>(fn);
  busy_stream();
  EXPECT_TRUE(returns_while_stream_held(s, [&] {
    ASSERT_EQ(v1(reinterpret_cast<CUdeviceptr>(managed), n, 0, reinterpret_cast<CUstream>(s)), CUDA_SUCCESS);
  }));
  EXPECT_TRUE(returns_while_stream_held(s, [&] {
    ASSERT_EQ(v1(reinterpret_cast<CUdeviceptr>(managed), n, CU_DEVICE_CPU, reinterpret_cast<CUstream>(s)),
              CUDA_SUCCESS);
  }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaFree(dev);
  cudaFree(managed);
}

TEST_F(MemoryApi, AttachMemIsQueuedAndNeverBlocks) {
  char* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void**>(&managed), 4096, cudaMemAttachHost), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(
      s, [&] { ASSERT_EQ(cudaStreamAttachMemAsync(s, managed, 0, cudaMemAttachSingle), cudaSuccess); }));
  EXPECT_EQ(cudaStreamAttachMemAsync(s, managed + 16, 0, cudaMemAttachSingle),
            cudaErrorInvalidValue);  // length 0: base only
  EXPECT_EQ(cudaStreamAttachMemAsync(s, managed, 4096, 0x7), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamAttachMemAsync(0, managed, 0, cudaMemAttachSingle),
            cudaErrorInvalidValue);  // not the legacy stream
  (void)cudaGetLastError();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaFree(managed);
}

TEST_F(MemoryApi, BatchElementsFollowTheSingleCopyRules) {
  const size_t n = 64 << 10;
  char *dev_a = nullptr, *dev_b = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_a), n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_b), n), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), n), cudaSuccess);
  std::vector<char> pageable(n, 0);
  ASSERT_EQ(cudaMemset(dev_a, 4, n), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t idx = 0;
  // Device->pinned and device->device: queued, the call returns at once.
  {
    void* dsts[] = {pinned, dev_b};
    const void* srcs[] = {dev_a, dev_a};
    size_t sizes[] = {n, n};
    EXPECT_TRUE(returns_while_stream_held(
        s, [&] { ASSERT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, s), cudaSuccess); }));
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(pinned[n - 1], 4);
  }
  // One device->pageable element: unlike a single cudaMemcpyAsync, only queued (the H200 returned
  // in 0.04-0.13 ms behind a 101 ms kernel, the pageable destination not yet written); the data is
  // there once the stream has reached it.
  {
    void* dsts[] = {pinned, pageable.data()};
    const void* srcs[] = {dev_a, dev_a};
    size_t sizes[] = {n, n};
    busy_stream();
    EXPECT_TRUE(returns_while_stream_held(s, [&] {
      ASSERT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, s), cudaSuccess);
      EXPECT_EQ(pageable[n - 1], 0);  // the stream is held: not written yet
    }));
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(pageable[n - 1], 4);
  }
  // Pageable source: read in stream order (STREAM) waits for the stream; DURING_API_CALL stages it
  // at the call, which returns before the stream does.
  {
    std::vector<char> src(n, 9);
    void* dsts[] = {dev_b};
    const void* srcs[] = {src.data()};
    size_t sizes[] = {n};
    busy_stream();
    EXPECT_GE(time_call([&] { ASSERT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s), cudaSuccess); }),
              0.9 * kKernel);
    cudaMemcpyAttributes during{};
    during.srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    busy_stream();
    EXPECT_TRUE(returns_while_stream_held(
        s, [&] { ASSERT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &during, &idx, 1, s), cudaSuccess); }));
    std::memset(src.data(), 0, n);  // staged already: the copy still delivers 9s
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(pageable.data(), dev_b, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(pageable[n / 2], 9);
  }
  // Invalid: the legacy NULL stream, no attributes, an invalid source access order.
  {
    void* dsts[] = {pinned};
    const void* srcs[] = {dev_a};
    size_t sizes[] = {n};
    EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, 0), cudaErrorInvalidValue);
    EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 0, s), cudaErrorInvalidValue);
    cudaMemcpyAttributes invalid{};
    EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &invalid, &idx, 1, s), cudaErrorInvalidValue);
    EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, cudaStreamPerThread), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    (void)cudaGetLastError();
    // Into a capturing stream: the H200's error, and the capture stays valid.
    cudaGraph_t g = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s), cudaErrorStreamCaptureUnsupported);
    EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    if (g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
  }
  cudaFreeHost(pinned);
  cudaFree(dev_a);
  cudaFree(dev_b);
}

TEST_F(MemoryApi, Batch3DWithArraysAndPointers) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  const size_t w = 8, h = 4;
  ASSERT_EQ(cudaMallocArray(&array, &desc, w, h, 0), cudaSuccess);
  std::vector<float> in(w * h), out(w * h, 0.f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), in.size() * sizeof(float)), cudaSuccess);
  std::memcpy(pinned, in.data(), in.size() * sizeof(float));
  cudaMemcpy3DBatchOp ops[2]{};
  // pinned -> array
  ops[0].src.type = cudaMemcpyOperandTypePointer;
  ops[0].src.op.ptr.ptr = pinned;
  ops[0].dst.type = cudaMemcpyOperandTypeArray;
  ops[0].dst.op.array.array = array;
  ops[0].extent = make_cudaExtent(w, h, 1);
  ops[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  ASSERT_EQ(cudaMemcpy3DBatchAsync(1, ops, 0, s), cudaSuccess);
  // array -> pageable (rows 1..2 only): queued, like the 1D batch's device->pageable element
  ops[1].src.type = cudaMemcpyOperandTypeArray;
  ops[1].src.op.array.array = array;
  ops[1].src.op.array.offset = {0, 1, 0};
  ops[1].dst.type = cudaMemcpyOperandTypePointer;
  ops[1].dst.op.ptr.ptr = out.data();
  ops[1].extent = make_cudaExtent(w, 2, 1);
  ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  busy_stream();
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpy3DBatchAsync(1, &ops[1], 0, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out[0], in[w]);
  EXPECT_EQ(out[2 * w - 1], in[3 * w - 1]);
  EXPECT_EQ(cudaMemcpy3DBatchAsync(1, ops, 1, s), cudaErrorInvalidValue);  // flags must be 0
  (void)cudaGetLastError();
  cudaFreeHost(pinned);
  cudaFreeArray(array);
}

TEST_F(MemoryApi, StreamOrderedAllocationNeverSynchronizes) {
  busy_stream();
  void* p = nullptr;
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMallocAsync(&p, 1 << 20, s), cudaSuccess); }));
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);  // measured on CUDA 13: cudaMallocAsync memory is device memory
  ASSERT_EQ(cudaMemsetAsync(p, 1, 1 << 20, s), cudaSuccess);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaFreeAsync(p, s), cudaSuccess); }));
  cudaMemPool_t pool;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  cuuint64_t used = 1;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, 1u << 20);  // returned to the pool only when the stream reaches the free
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, 0u);
  cuuint64_t reserved = 1;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved), cudaSuccess);
  EXPECT_EQ(reserved, 0u);  // release threshold 0: released at the synchronize
  // With a threshold the pool keeps the block and reuses it.
  cuuint64_t keep = 64 << 20;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
  void* q = nullptr;
  ASSERT_EQ(cudaMallocAsync(&q, 1 << 20, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(q, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  void* r = nullptr;
  ASSERT_EQ(cudaMallocAsync(&r, 1 << 20, s), cudaSuccess);
  EXPECT_EQ(r, q);
  // cudaFree of pool memory synchronizes, as cudaFree always does.
  busy_stream();
  EXPECT_GE(time_call([&] { ASSERT_EQ(cudaFree(r), cudaSuccess); }), 0.9 * kKernel);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved), cudaSuccess);
  EXPECT_EQ(reserved, 0u);
  keep = 0;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
  int host = 0;
  EXPECT_EQ(cudaFreeAsync(&host, s), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  // An explicit pool.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location = device_location(0);
  cudaMemPool_t mine;
  ASSERT_EQ(cudaMemPoolCreate(&mine, &props), cudaSuccess);
  void* m = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&m, 4096, mine, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(m, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemPoolDestroy(mine), cudaSuccess);
  EXPECT_EQ(cudaMallocFromPoolAsync(&m, 4096, mine, s), cudaErrorInvalidValue);  // the handle is gone
  (void)cudaGetLastError();
  // Pools destroyed while blocks are in use: the blocks stay usable until freed, in stream order or
  // by cudaFree (ASan's leak check sees that the pools go with their last block).
  for (bool by_free_async : {true, false}) {
    cudaMemPool_t busy_pool;
    ASSERT_EQ(cudaMemPoolCreate(&busy_pool, &props), cudaSuccess);
    void* kept = nullptr;
    void* returned = nullptr;
    ASSERT_EQ(cudaMallocFromPoolAsync(&kept, 4096, busy_pool, s), cudaSuccess);
    ASSERT_EQ(cudaMallocFromPoolAsync(&returned, 8192, busy_pool, s), cudaSuccess);
    ASSERT_EQ(cudaFreeAsync(returned, s), cudaSuccess);  // a free block when the pool is destroyed
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    ASSERT_EQ(cudaMemPoolDestroy(busy_pool), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(kept, 7, 4096, s), cudaSuccess);
    unsigned char back[4096] = {};
    ASSERT_EQ(cudaMemcpyAsync(back, kept, sizeof back, cudaMemcpyDeviceToHost, s), cudaSuccess);
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[4095], 7);
    if (by_free_async) {
      ASSERT_EQ(cudaFreeAsync(kept, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    } else {
      ASSERT_EQ(cudaFree(kept), cudaSuccess);
    }
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, kept), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  }
}

TEST_F(MemoryApi, ArraysThreeDimensionalCopiesAndMemsets) {
  // 2D copies through an array: host -> array -> host.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t array = nullptr;
  const size_t w = 32, h = 8;
  ASSERT_EQ(cudaMallocArray(&array, &desc, w, h, 0), cudaSuccess);
  std::vector<unsigned char> in(w * h), out(w * h, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i);
  ASSERT_EQ(cudaMemcpy2DToArray(array, 0, 0, in.data(), w, w, h, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2DFromArray(out.data(), w, array, 0, 0, w, h, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, in);
  cudaExtent extent{};
  cudaChannelFormatDesc got{};
  ASSERT_EQ(cudaArrayGetInfo(&got, &extent, nullptr, array), cudaSuccess);
  EXPECT_EQ(extent.width, w);
  EXPECT_EQ(extent.height, h);
  EXPECT_EQ(got.x, 8);
  // A device->array copy is device to device: no host-side synchronization.
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), w * h), cudaSuccess);
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(dev, w, w, h);
  p.dstArray = array;
  p.extent = make_cudaExtent(w, h, 1);
  p.kind = cudaMemcpyDeviceToDevice;
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpy3DAsync(&p, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // A 3D pitched copy and 3D memset.
  cudaExtent box = make_cudaExtent(16, 4, 3);
  cudaPitchedPtr pitched{};
  ASSERT_EQ(cudaMalloc3D(&pitched, box), cudaSuccess);
  EXPECT_GE(pitched.pitch, box.width);
  ASSERT_EQ(cudaMemset3D(pitched, 0x5a, box), cudaSuccess);
  std::vector<unsigned char> host(box.width * box.height * box.depth, 0);
  cudaMemcpy3DParms q{};
  q.srcPtr = pitched;
  q.dstPtr = make_cudaPitchedPtr(host.data(), box.width, box.width, box.height);
  q.extent = box;
  q.kind = cudaMemcpyDeviceToHost;
  ASSERT_EQ(cudaMemcpy3D(&q), cudaSuccess);
  for (unsigned char c : host) ASSERT_EQ(c, 0x5a);
  // 2D memset leaves the pitch padding alone.
  ASSERT_EQ(cudaMemset2D(pitched.ptr, pitched.pitch, 1, 4, 2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(static_cast<unsigned char*>(pitched.ptr)[pitched.pitch + 3], 1);
  EXPECT_EQ(static_cast<unsigned char*>(pitched.ptr)[pitched.pitch + 4], 0x5a);
  // A 3D peer copy on one device (source and destination device 0): queued.
  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = pitched;
  peer.srcDevice = 0;
  peer.dstPtr = make_cudaPitchedPtr(dev, w, w, h);
  peer.dstDevice = 0;
  peer.extent = make_cudaExtent(8, 2, 1);
  EXPECT_TRUE(returns_while_stream_held(s, [&] { ASSERT_EQ(cudaMemcpy3DPeerAsync(&peer, s), cudaSuccess); }));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(static_cast<unsigned char>(dev[w + 7]), 0x5a);
  cudaFree(pitched.ptr);
  cudaFree(dev);
  cudaFreeArray(array);
}
