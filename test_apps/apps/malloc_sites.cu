// Memory management calls at many distinct lines, and a caching allocator's pool
// growing from one line. Neither is "an allocation in a loop".
//   malloc_sites [growths=65] [step=64K]   (each growth asks for `step` bytes more than the last)
//   - cudaMalloc and cudaFree at 14 distinct lines each (@MALLOC_1 ... @MALLOC_14, @FREE_1 ... @FREE_14),
//     each called once;
//   - a caching-allocator-style pool (as PyTorch's): requests of growing sizes are served from cached
//     blocks, and the pool grows with cudaMalloc at one line (@POOL_GROW) `growths` times; blocks are
//     freed at the end, at one line (@POOL_RELEASE).
//
// Today: memory-management calls carry no stack by default, so they are grouped per API under an
// unknown call site: implicit-sync "cudaMalloc called 79 times here ... allocate once outside the
// loop" (14 + 65) and cudaFree 79 times, both without a location.
// Expected: stacks for memory-management calls; no implicit-sync for the 14
// distinct lines (one call each); @POOL_GROW not reported as a loop to hoist (a pool growing 65 times
// to 65 different sizes, each block kept), i.e. no implicit-sync finding in this program.
#include "aw_common.h"

#include <vector>

namespace {
// A minimal caching allocator: blocks are never returned to CUDA until release().
struct Pool {
  std::vector<std::pair<char*, size_t>> blocks;  // (block, size)
  std::vector<bool> busy;
  int growths = 0;
  char* get(size_t bytes) {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (!busy[i] && blocks[i].second >= bytes) {
        busy[i] = true;
        return blocks[i].first;
      }
    char* p = nullptr;
    AW_CHECK(cudaMalloc(&p, bytes));  // @POOL_GROW
    ++growths;
    blocks.emplace_back(p, bytes);
    busy.push_back(true);
    return p;
  }
  void put(char* p) {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].first == p) busy[i] = false;
  }
  void release() {
    for (auto& b : blocks) AW_CHECK(cudaFree(b.first));  // @POOL_RELEASE
    blocks.clear();
  }
};
}  // namespace

int main(int argc, char** argv) {
  const int growths = int(aw::arg_num(argc, argv, 1, 65));
  const size_t step_bytes = size_t(aw::arg_num(argc, argv, 2, 64 << 10));
  void* p[14] = {};
  AW_CHECK(cudaMalloc(&p[0], 1 << 10));  // @MALLOC_1
  AW_CHECK(cudaMalloc(&p[1], 2 << 10));  // @MALLOC_2
  AW_CHECK(cudaMalloc(&p[2], 3 << 10));  // @MALLOC_3
  AW_CHECK(cudaMalloc(&p[3], 4 << 10));  // @MALLOC_4
  AW_CHECK(cudaMalloc(&p[4], 5 << 10));  // @MALLOC_5
  AW_CHECK(cudaMalloc(&p[5], 6 << 10));  // @MALLOC_6
  AW_CHECK(cudaMalloc(&p[6], 7 << 10));  // @MALLOC_7
  AW_CHECK(cudaMalloc(&p[7], 8 << 10));  // @MALLOC_8
  AW_CHECK(cudaMalloc(&p[8], 9 << 10));  // @MALLOC_9
  AW_CHECK(cudaMalloc(&p[9], 10 << 10));  // @MALLOC_10
  AW_CHECK(cudaMalloc(&p[10], 11 << 10));  // @MALLOC_11
  AW_CHECK(cudaMalloc(&p[11], 12 << 10));  // @MALLOC_12
  AW_CHECK(cudaMalloc(&p[12], 13 << 10));  // @MALLOC_13
  AW_CHECK(cudaMalloc(&p[13], 14 << 10));  // @MALLOC_14
  for (int i = 0; i < 14; ++i) AW_CHECK(cudaMemset(p[i], i, size_t(i + 1) << 10));
  AW_CHECK(cudaDeviceSynchronize());
  unsigned char last = 0;
  AW_CHECK(cudaMemcpy(&last, static_cast<char*>(p[13]) + (14 << 10) - 1, 1, cudaMemcpyDeviceToHost));
  AW_EXPECT(last == 13, "memset of the 14th allocation: got %d", last);
  AW_CHECK(cudaFree(p[0]));  // @FREE_1
  AW_CHECK(cudaFree(p[1]));  // @FREE_2
  AW_CHECK(cudaFree(p[2]));  // @FREE_3
  AW_CHECK(cudaFree(p[3]));  // @FREE_4
  AW_CHECK(cudaFree(p[4]));  // @FREE_5
  AW_CHECK(cudaFree(p[5]));  // @FREE_6
  AW_CHECK(cudaFree(p[6]));  // @FREE_7
  AW_CHECK(cudaFree(p[7]));  // @FREE_8
  AW_CHECK(cudaFree(p[8]));  // @FREE_9
  AW_CHECK(cudaFree(p[9]));  // @FREE_10
  AW_CHECK(cudaFree(p[10]));  // @FREE_11
  AW_CHECK(cudaFree(p[11]));  // @FREE_12
  AW_CHECK(cudaFree(p[12]));  // @FREE_13
  AW_CHECK(cudaFree(p[13]));  // @FREE_14
  std::printf("14 allocation sites: ok\n");

  // The "model": each step needs a tensor a little larger than any before, and two small scratch
  // tensors that the pool serves from blocks it already has.
  Pool pool;
  char* scratch_a = pool.get(4096);
  char* scratch_b = pool.get(4096);
  pool.put(scratch_a);
  pool.put(scratch_b);
  for (int step = 0; pool.growths < growths; ++step) {
    const size_t activation = (size_t(step) + 1) * step_bytes;
    char* t = pool.get(activation);
    char* a = pool.get(4096);
    char* b = pool.get(4096);
    AW_CHECK(cudaMemsetAsync(t, step & 0xff, activation, 0));
    pool.put(a);
    pool.put(b);
    pool.put(t);  // cached, not freed: the next step needs a larger one
  }
  AW_CHECK(cudaDeviceSynchronize());
  std::printf("caching pool grew %d times\n", pool.growths);
  pool.release();
  return 0;
}
