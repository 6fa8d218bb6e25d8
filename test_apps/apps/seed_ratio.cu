// The seed answer's program with its buffer size and kernel length as arguments, for the ratio test
// of check_app.py seed-ratio. The seed's own 1e6 cycles (0.5 ms) is too short to assert
// "pinned copies return within 1% of the kernel time" robustly (1% = 5 us, about the cost of one
// simulated or real API call), so this variant defaults to 2e8 cycles (about 101 ms); the ratio test
// (check_app.py seed-ratio) passes 1e9 (505 ms), robust against a loaded 2-core CI machine.
//
//   seed_ratio [pageable|pinned] [bytes=64M] [cycles=2e8]
// stdout, besides the seed's lines: "Wall H2D: <s>", "Wall D2H: <s>" (steady clock, seconds);
// the seed's "Elapsed:" lines measure process CPU time as the seed does.
#include "aw_common.h"

#include <ctime>
#include <iostream>

__global__ void dummy(long long sleep_cycles) {
  long long start = clock64();
  while (clock64() - start < sleep_cycles) {
  }
}

static void callback(cudaStream_t, cudaError_t, void* ptr) { *static_cast<bool*>(ptr) = true; }

int main(int argc, char* argv[]) {
  const bool pinned = argc > 1 && std::string(argv[1]) == "pinned";
  AW_EXPECT(argc <= 1 || pinned || std::string(argv[1]) == "pageable", "usage: %s [pageable|pinned] [bytes] [cycles]", argv[0]);
  const size_t buffer_size = size_t(aw::arg_num(argc, argv, 2, 64ll << 20));
  const long long duration_in_clocks = aw::arg_num(argc, argv, 3, 200000000ll);
  AW_CHECK(cudaFree(0));
  timespec start, stop;
  bool callback_executed = false;
  cudaStream_t stream;
  void* host_ptr;
  if (!pinned) {
    host_ptr = malloc(buffer_size);
  } else {
    AW_CHECK(cudaMallocHost(&host_ptr, buffer_size, 0));
  }
  aw::fill(host_ptr, buffer_size, 7);
  char* device_ptr;
  AW_CHECK(cudaMalloc(&device_ptr, buffer_size));
  AW_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  long long w0 = aw::now_ns();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  AW_CHECK(cudaMemcpyAsync(device_ptr, host_ptr, buffer_size, cudaMemcpyDefault, stream));  // @RATIO_H2D
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &stop);
  long long w1 = aw::now_ns();
  double result = (stop.tv_sec - start.tv_sec) * 1e6 + (stop.tv_nsec - start.tv_nsec) / 1e3;
  std::cout << "Elapsed: " << result / 1000 / 1000 << std::endl;
  std::cout << "Wall H2D: " << double(w1 - w0) / 1e9 << std::endl;

  dummy<<<128, 128, 0, stream>>>(duration_in_clocks);  // @RATIO_KERNEL

  // The D2H copy overwrites the host buffer with what the H2D copy put on the device: same pattern.
  w0 = aw::now_ns();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  AW_CHECK(cudaMemcpyAsync(host_ptr, device_ptr, buffer_size, cudaMemcpyDefault, stream));  // @RATIO_D2H
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &stop);
  w1 = aw::now_ns();
  result = (stop.tv_sec - start.tv_sec) * 1e6 + (stop.tv_nsec - start.tv_nsec) / 1e3;
  std::cout << "Elapsed: " << result / 1000 / 1000 << std::endl;
  std::cout << "Wall D2H: " << double(w1 - w0) / 1e9 << std::endl;
  std::cout << "Kernel: " << aw::cycles_to_ms(duration_in_clocks) / 1e3 << std::endl;

  AW_CHECK(cudaStreamAddCallback(stream, callback, &callback_executed, 0));
  auto snapshot = callback_executed;
  std::cout << "Right after we finished enqueuing work, the stream has " << (snapshot ? "" : "not ")
            << "concluded execution." << std::endl;
  AW_CHECK(cudaStreamSynchronize(stream));
  snapshot = callback_executed;
  std::cout << "After cudaStreamSynchronize, the stream has " << (snapshot ? "" : "not ")
            << "concluded execution." << std::endl;
  AW_EXPECT(aw::check(host_ptr, buffer_size, 7), "round trip H2D + D2H returned wrong data");
  AW_CHECK(cudaFree(device_ptr));
  if (pinned) AW_CHECK(cudaFreeHost(host_ptr)); else free(host_ptr);
  AW_CHECK(cudaStreamDestroy(stream));
  return 0;
}
