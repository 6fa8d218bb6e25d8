// 3D, peer and CUDA-array copies: each follows the rules of a 1D copy between the
// same kinds of memory.
//   peer_3d_arrays [cycles=2e8 (~101 ms)]
//   @PEER_3D_ASYNC         cudaMemcpy3DPeerAsync, device -> device (device 0 -> the last device): queued
//   @PEER_3D_SYNC          cudaMemcpy3DPeer, device -> device: no host-side wait (serialized on the device)
//   @COPY_3D_D2H_PAGEABLE  cudaMemcpy3DAsync, device -> pageable, behind the kernel: blocked about the kernel
//   @ARRAY_H2D_PAGEABLE    cudaMemcpy2DToArrayAsync from pageable memory (1 MiB): staged
//   @ARRAY_D2H_PAGEABLE    cudaMemcpy2DFromArrayAsync into pageable memory, behind the kernel: blocked
//   @ARRAY_D2H_PINNED      cudaMemcpy2DFromArrayAsync into pinned memory, behind the kernel: queued
//
// Today: the 3D and the 2D array copies reach cuMemcpy3DAsync_v2 (H200 and simulator) and are
// classified from its descriptor (findings at the three pageable lines); cuMemcpy3DPeer* are not intercepted.
// Expected: pageable-async-copy waited-for-stream at @COPY_3D_D2H_PAGEABLE and
// @ARRAY_D2H_PAGEABLE, staged at @ARRAY_H2D_PAGEABLE (1 MiB, above --inline-htod-bytes); nothing at
// @PEER_3D_ASYNC, @PEER_3D_SYNC, @ARRAY_D2H_PINNED.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  int devices = 0;
  AW_CHECK(cudaGetDeviceCount(&devices));
  const int peer = devices - 1;
  const size_t w = 1024, h = 1024;  // bytes per row, rows: 1 MiB
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaPitchedPtr src{}, dst{};
  AW_CHECK(cudaMalloc3D(&src, make_cudaExtent(w, h, 1)));
  AW_CHECK(cudaSetDevice(peer));
  AW_CHECK(cudaMalloc3D(&dst, make_cudaExtent(w, h, 1)));
  AW_CHECK(cudaSetDevice(0));
  std::vector<char> pageable(w * h);
  aw::fill(pageable.data(), pageable.size(), 37);
  AW_CHECK(cudaMemcpy2D(src.ptr, src.pitch, pageable.data(), w, w, h, cudaMemcpyHostToDevice));
  AW_CHECK(cudaDeviceSynchronize());
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));

  cudaMemcpy3DPeerParms pp{};
  pp.srcPtr = src;
  pp.srcDevice = 0;
  pp.dstPtr = dst;
  pp.dstDevice = peer;
  pp.extent = make_cudaExtent(w, h, 1);
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy3DPeerAsync(&pp, s));  // @PEER_3D_ASYNC
  aw::timing("cudaMemcpy3DPeerAsync returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy3DPeer(&pp));  // @PEER_3D_SYNC
  aw::timing("cudaMemcpy3DPeer returned after", aw::now_ns() - t0);
  AW_CHECK(cudaDeviceSynchronize());

  // Device (the peer copy's destination) -> pageable, 3D descriptor.
  std::vector<char> back(w * h, 0);
  cudaMemcpy3DParms p{};
  p.srcPtr = dst;
  p.dstPtr = make_cudaPitchedPtr(back.data(), w, w, h);
  p.extent = make_cudaExtent(w, h, 1);
  p.kind = cudaMemcpyDeviceToHost;
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy3DAsync(&p, s));  // @COPY_3D_D2H_PAGEABLE
  aw::timing("cudaMemcpy3DAsync into pageable memory returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(back.data(), back.size(), 37), "3D copy back: data not complete on return");
  std::printf("3D peer copies and 3D copy back: ok\n");

  // CUDA arrays.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t array = nullptr;
  AW_CHECK(cudaMallocArray(&array, &desc, w, h, 0));
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy2DToArrayAsync(array, 0, 0, pageable.data(), w, w, h, cudaMemcpyHostToDevice, s));  // @ARRAY_H2D_PAGEABLE
  aw::timing("cudaMemcpy2DToArrayAsync from pageable memory returned after", aw::now_ns() - t0);
  std::fill(back.begin(), back.end(), 0);
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy2DFromArrayAsync(back.data(), w, array, 0, 0, w, h, cudaMemcpyDeviceToHost, s));  // @ARRAY_D2H_PAGEABLE
  aw::timing("cudaMemcpy2DFromArrayAsync into pageable memory returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(back.data(), back.size(), 37), "array -> pageable: data not complete on return");
  char* pinned = nullptr;
  AW_CHECK(cudaMallocHost(&pinned, w * h));
  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpy2DFromArrayAsync(pinned, w, array, 0, 0, w, h, cudaMemcpyDeviceToHost, s));  // @ARRAY_D2H_PINNED
  aw::timing("cudaMemcpy2DFromArrayAsync into pinned memory returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s));
  AW_EXPECT(aw::check(pinned, w * h, 37), "array -> pinned: wrong data");
  std::printf("CUDA array copies: ok\n");

  AW_CHECK(cudaFreeHost(pinned));
  AW_CHECK(cudaFreeArray(array));
  AW_CHECK(cudaFree(src.ptr));
  AW_CHECK(cudaFree(dst.ptr));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
