// A program that never touches CUDA: under asyncwatch it must run unchanged, with no findings and
// no noise. Sums a little series and sleeps briefly.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  std::vector<double> v(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 1.0 / double((i + 1) * (i + 1));
  double sum = 0;
  for (double x : v) sum += x;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::printf("sum of 1/k^2 for k <= %ld: %.6f\n", n, sum);
  if (sum < 1.6 || sum > 1.65) return 1;
  return 0;
}
