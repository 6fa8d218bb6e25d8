// Two GPUs: peer copies with and without peer access, device-to-device copies across the
// devices, and pageable copies on each device. Runs on the 2-device simulator (ASYNCWATCH_SIM_DEVICES=2)
// and on a 2-GPU machine; with fewer devices it says so and exits 0.
//   two_devices [cycles=2e8 (~101 ms)] [bytes=16M]
//   @PEER_NO_ACCESS      cudaMemcpyPeerAsync 0 -> 1 before peer access is enabled (staged by the
//                        driver, asynchronous to the host), behind a kernel on the stream
//   @ENABLE_PEER         cudaDeviceEnablePeerAccess(1) from device 0 (and 0 from device 1)
//   @PEER_WITH_ACCESS    cudaMemcpyPeerAsync 0 -> 1 with peer access, behind a kernel
//   @DTOD_CROSS_DEVICE   cudaMemcpyAsync(kind Default) device 1 -> device 0 memory, behind a kernel
//   @PEER_SYNC           cudaMemcpyPeer 1 -> 0 (asynchronous to the host, serialized on both devices)
//   @PAGEABLE_D2H_DEV0   pageable D2H from device 0 behind a kernel on device 0: blocked ~ the kernel
//   @PAGEABLE_D2H_DEV1   pageable D2H from device 1 behind a kernel on device 1: blocked ~ the kernel
//   @PAGEABLE_H2D_DEV1   pageable H2D to device 1 (staged)
//
// Today: pageable-async-copy waited-for-stream at @PAGEABLE_D2H_DEV0 and @PAGEABLE_D2H_DEV1, staged at
// @PAGEABLE_H2D_DEV1; cudaMemcpyPeerAsync is not intercepted; nothing at the device-to-device lines.
// Expected: copies classified per device (the device ordinal in each finding), no pageable
// finding for the peer and cross-device copies, the pageable ones at their lines with their device.
#include "aw_common.h"

#include <vector>

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  const size_t bytes = size_t(aw::arg_num(argc, argv, 2, 16ll << 20));
  int devices = 0;
  AW_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    std::printf("two_devices: %d device(s), needs 2: nothing to do\n", devices);
    return 0;
  }
  int can01 = 0, can10 = 0;
  AW_CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
  AW_CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  std::fprintf(stderr, "# peer access possible: 0->1 %d, 1->0 %d\n", can01, can10);
  char* d[2] = {};
  cudaStream_t s[2];
  for (int i = 0; i < 2; ++i) {
    AW_CHECK(cudaSetDevice(i));
    AW_CHECK(cudaMalloc(&d[i], bytes));
    AW_CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    sleep_kernel<<<1, 1, 0, s[i]>>>(1000);  // warm-up on each device
    AW_CHECK(cudaStreamSynchronize(s[i]));
  }
  std::vector<char> host(bytes);
  aw::fill(host.data(), bytes, 71);
  AW_CHECK(cudaSetDevice(0));
  AW_CHECK(cudaMemcpy(d[0], host.data(), bytes, cudaMemcpyHostToDevice));
  AW_CHECK(cudaDeviceSynchronize());
  std::fill(host.begin(), host.end(), 0);

  // Peer copies from device 0's stream, without and then with peer access.
  sleep_kernel<<<1, 1, 0, s[0]>>>(cycles);
  long long t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyPeerAsync(d[1], 1, d[0], 0, bytes, s[0]));  // @PEER_NO_ACCESS
  aw::timing("cudaMemcpyPeerAsync without peer access returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s[0]));
  if (can01) {
    AW_CHECK(cudaDeviceEnablePeerAccess(1, 0));  // @ENABLE_PEER
    AW_CHECK(cudaSetDevice(1));
    if (can10) AW_CHECK(cudaDeviceEnablePeerAccess(0, 0));
    AW_CHECK(cudaSetDevice(0));
  }
  sleep_kernel<<<1, 1, 0, s[0]>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyPeerAsync(d[1], 1, d[0], 0, bytes, s[0]));  // @PEER_WITH_ACCESS
  aw::timing("cudaMemcpyPeerAsync with peer access returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s[0]));

  // Device 1's memory -> device 0's through cudaMemcpyAsync (unified addressing), then cudaMemcpyPeer.
  AW_CHECK(cudaMemsetAsync(d[0], 0, bytes, s[0]));
  sleep_kernel<<<1, 1, 0, s[0]>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(d[0], d[1], bytes, cudaMemcpyDefault, s[0]));  // @DTOD_CROSS_DEVICE
  aw::timing("cross-device cudaMemcpyAsync returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s[0]));
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyPeer(d[0], 0, d[1], 1, bytes));  // @PEER_SYNC
  aw::timing("cudaMemcpyPeer returned after", aw::now_ns() - t0);
  AW_CHECK(cudaDeviceSynchronize());

  // Pageable copies on each device.
  sleep_kernel<<<1, 1, 0, s[0]>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host.data(), d[0], bytes, cudaMemcpyDeviceToHost, s[0]));  // @PAGEABLE_D2H_DEV0
  aw::timing("pageable D2H from device 0 returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(host.data(), bytes, 71), "device 0 -> pageable: data not complete on return");
  std::fill(host.begin(), host.end(), 0);
  AW_CHECK(cudaSetDevice(1));
  sleep_kernel<<<1, 1, 0, s[1]>>>(cycles);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(host.data(), d[1], bytes, cudaMemcpyDeviceToHost, s[1]));  // @PAGEABLE_D2H_DEV1
  aw::timing("pageable D2H from device 1 returned after", aw::now_ns() - t0);
  AW_EXPECT(aw::check(host.data(), bytes, 71), "device 1 -> pageable: data not complete on return");
  aw::fill(host.data(), bytes, 72);
  t0 = aw::now_ns();
  AW_CHECK(cudaMemcpyAsync(d[1], host.data(), bytes, cudaMemcpyHostToDevice, s[1]));  // @PAGEABLE_H2D_DEV1
  aw::timing("pageable H2D to device 1 returned after", aw::now_ns() - t0);
  AW_CHECK(cudaStreamSynchronize(s[1]));
  cudaPointerAttributes a{};
  AW_CHECK(cudaPointerGetAttributes(&a, d[1]));
  AW_EXPECT(a.type == cudaMemoryTypeDevice && a.device == 1, "device 1 memory: type %d device %d", int(a.type), a.device);
  std::printf("two devices: peer copies, cross-device copies, pageable copies on each device: ok\n");
  for (int i = 0; i < 2; ++i) {
    AW_CHECK(cudaSetDevice(i));
    AW_CHECK(cudaStreamDestroy(s[i]));
    AW_CHECK(cudaFree(d[i]));
  }
  return 0;
}
