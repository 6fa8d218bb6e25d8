// Helpers shared by the asyncwatch sleep-kernel test apps (not used by the two seed programs,
// which stay as written in the seed).
//
// Conventions of every app:
//  - sizes and durations come from argv (defaults sized for the H200; the expectation files in
//    expected/ give smaller values for the simulator in CI);
//  - results are checked: wrong data -> message on stderr and exit 1; a failing CUDA call -> exit 2;
//  - stdout carries only deterministic lines (so a run with and without asyncwatch can be compared);
//    timings go to stderr, prefixed "# ".
//  - a comment "// @NAME" on a line marks a call site that an expectation file refers to as "@NAME".
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define AW_CHECK(call)                                                                  \
  do {                                                                                  \
    cudaError_t aw_err_ = (call);                                                       \
    if (aw_err_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
                   cudaGetErrorString(aw_err_));                                        \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

#define AW_EXPECT(cond, ...)                                                            \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// The seed's sleep kernel. The simulator recognises it by name (sleep|dummy|spin|wait) and by its
// first parameter (a 64-bit cycle count): simulated duration = cycles / 1.98e9 s. The H200's SM clock
// is 1.98 GHz at most, so the same count takes about as long on the GPU.
__global__ void sleep_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

namespace aw {

inline constexpr double kClockHz = 1.98e9;

inline double cycles_to_ms(long long cycles) { return double(cycles) / kClockHz * 1e3; }

inline long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Parses argv[i] as a number (accepts 1e6, 64M, 1G, 4K suffixes); def when absent.
inline long long arg_num(int argc, char** argv, int i, long long def) {
  if (i >= argc) return def;
  char* end = nullptr;
  double v = std::strtod(argv[i], &end);
  if (end && *end) {
    switch (*end) {
      case 'k': case 'K': v *= 1024.0; break;
      case 'm': case 'M': v *= 1024.0 * 1024.0; break;
      case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
      default: std::fprintf(stderr, "bad number: %s\n", argv[i]); std::exit(2);
    }
  }
  return static_cast<long long>(v);
}

// Fills buf with a pattern that depends on seed and position (cheap: one word per 4 KiB + edges).
inline void fill(void* buf, size_t n, unsigned seed) {
  unsigned char* p = static_cast<unsigned char*>(buf);
  std::memset(p, int(seed & 0xff), n);
  for (size_t off = 0; off + sizeof(unsigned) <= n; off += 4096) {
    unsigned v = seed * 2654435761u + unsigned(off / 4096);
    std::memcpy(p + off, &v, sizeof v);
  }
  if (n) p[n - 1] = static_cast<unsigned char>(seed ^ 0x5a);
}

// Checks the pattern written by fill(); returns true when it matches.
inline bool check(const void* buf, size_t n, unsigned seed) {
  const unsigned char* p = static_cast<const unsigned char*>(buf);
  for (size_t off = 0; off + sizeof(unsigned) <= n; off += 4096) {
    unsigned v = seed * 2654435761u + unsigned(off / 4096), got;
    std::memcpy(&got, p + off, sizeof got);
    if (got != v) return false;
    size_t end = off + 4096 < n - 1 ? off + 4096 : n - 1;
    for (size_t i = off + sizeof(unsigned); i < end; i += 97)
      if (p[i] != (seed & 0xff)) return false;
  }
  if (n && p[n - 1] != static_cast<unsigned char>(seed ^ 0x5a)) return false;
  return true;
}

// Prints a timing line to stderr (never stdout: see above).
inline void timing(const char* what, long long ns) {
  std::fprintf(stderr, "# %s: %.3f ms\n", what, double(ns) / 1e6);
}

}  // namespace aw
