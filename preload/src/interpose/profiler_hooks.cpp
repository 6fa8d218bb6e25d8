// cuProfilerStart / cuProfilerStop: the program's "profile this part" marks (the runtime's
// cudaProfilerStart/Stop, torch.cuda.profiler.start/stop and cupy's reach them through the driver
// table, i.e. cuGetProcAddress). Not recorded; with ASYNCWATCH_CAPTURE_RANGE=cudaProfilerApi they
// open and close the capture range (capture_range.h). Honoured whatever the driver answers: the
// mark is the program's, not the profiler's.
#include "capture_range.h"
#include "common.h"
#include "cuda_abi.h"
#include "hook_entry.h"
#include "hook_table.h"
#include "real_functions.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;

#if AW_ENTRY_STUBS
#define AW_PROFILER_NAME(sym)  aw_traced_##sym
#define AW_PROFILER_VISIBILITY __attribute__((visibility("hidden")))
#define AW_PROFILER_INRT(sym) \
  extern "C" __attribute__((visibility("hidden"), alias("aw_traced_" #sym))) CUresult aw_inrt_##sym() noexcept;
#else
#define AW_PROFILER_NAME(sym)  AW_ENTRY_NAME(sym)
#define AW_PROFILER_VISIBILITY AW_ENTRY_VISIBILITY
#define AW_PROFILER_INRT(sym)
#endif

namespace {
CUresult call_real(Hook h) noexcept {
  auto real = reinterpret_cast<CUresult (*)()>(real::driver(h));
  return real ? real() : CUDA_ERROR_NOT_INITIALIZED;
}
}  // namespace

// Recording begins after the start returned, and ends after the stop returned.
extern "C" AW_PROFILER_VISIBILITY CUresult AW_PROFILER_NAME(cuProfilerStart)() noexcept {
  CUresult r = call_real(Hook::cuProfilerStart);
  ErrnoKeeper keep;
  capture::profiler_api(true);
  return r;
}
AW_PROFILER_INRT(cuProfilerStart)

extern "C" AW_PROFILER_VISIBILITY CUresult AW_PROFILER_NAME(cuProfilerStop)() noexcept {
  CUresult r = call_real(Hook::cuProfilerStop);
  ErrnoKeeper keep;
  capture::profiler_api(false);
  return r;
}
AW_PROFILER_INRT(cuProfilerStop)
