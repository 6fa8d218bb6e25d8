// Polling: a loop of cudaEventQuery until an event behind a sleep kernel completes,
// then a loop of cudaStreamQuery behind another. The number of queries is printed to stderr with the
// time per query: traced, the loop must run nearly as fast as bare (H200: 0.24 us per query bare,
// 0.5-0.9 us traced without folding).
//   event_query_poll [cycles=2e8 (~101 ms)]
//   @EVENT_QUERY   the polled cudaEventQuery
//   @STREAM_QUERY  the polled cudaStreamQuery
//
// Today: every query is a record; no finding (queries are not waits).
// Expected: runs of identical results folded into one record with a count; still
// no finding; the traced loop within 20 % of bare iterations per second (measured on the H200:
// test_apps/gpu/validate_on_gpu.sh apps runs it bare and traced).
#include "aw_common.h"

int main(int argc, char** argv) {
  const long long cycles = aw::arg_num(argc, argv, 1, 200000000ll);
  cudaStream_t s;
  AW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t done;
  AW_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  sleep_kernel<<<1, 1, 0, s>>>(1000);  // warm-up
  AW_CHECK(cudaStreamSynchronize(s));

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  AW_CHECK(cudaEventRecord(done, s));
  long long queries = 0;
  long long t0 = aw::now_ns();
  cudaError_t e;
  while ((e = cudaEventQuery(done)) == cudaErrorNotReady) ++queries;  // @EVENT_QUERY
  long long t1 = aw::now_ns();
  AW_CHECK(e);
  std::fprintf(stderr, "# cudaEventQuery: %lld not-ready queries in %.3f ms, %.3f us per query\n", queries,
               double(t1 - t0) / 1e6, queries ? double(t1 - t0) / 1e3 / double(queries) : 0.0);
  AW_EXPECT(queries > 0, "the event was ready at once: the kernel did not run long enough");
  AW_EXPECT(cudaGetLastError() == cudaSuccess, "cudaErrorNotReady must not become the last error");

  sleep_kernel<<<1, 1, 0, s>>>(cycles);
  queries = 0;
  t0 = aw::now_ns();
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) ++queries;  // @STREAM_QUERY
  t1 = aw::now_ns();
  AW_CHECK(e);
  std::fprintf(stderr, "# cudaStreamQuery: %lld not-ready queries in %.3f ms, %.3f us per query\n", queries,
               double(t1 - t0) / 1e6, queries ? double(t1 - t0) / 1e3 / double(queries) : 0.0);
  AW_EXPECT(queries > 0, "the stream was idle at once");
  std::printf("polled the event and the stream until done\n");
  AW_CHECK(cudaEventDestroy(done));
  AW_CHECK(cudaStreamDestroy(s));
  return 0;
}
