// Cost of python_frames::capture in a process without Python (after its one search): usage:
// aw_pyframes_bench_no_python [CALLS]. Prints ns per call; run_callgrind.sh counts instructions.
#include <time.h>

#include <cstdio>
#include <cstdlib>

#include "stacks/python_frames.h"

int main(int argc, char** argv) {
  long calls = argc > 1 ? std::atol(argv[1]) : 10000000;
  asyncwatch::python_frames::PythonFrame frames[64];
  uint64_t found = asyncwatch::python_frames::capture(frames, 64);  // the search
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < calls; ++i) found += asyncwatch::python_frames::capture(frames, 64);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = static_cast<double>((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec));
  auto s = asyncwatch::python_frames::status();
  std::printf("no Python: %ld captures, %.2f ns each, %llu frames, %llu search(es): %s\n", calls,
              ns / static_cast<double>(calls), static_cast<unsigned long long>(found),
              static_cast<unsigned long long>(s.searches), s.detail);
  return found == 0 && s.searches == 1 ? 0 : 1;
}
