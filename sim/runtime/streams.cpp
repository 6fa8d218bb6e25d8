// Streams, events, host callbacks and capture begin/end: thin mappings onto the driver (graphs: graphs.cpp).
#include "driver_table.h"
#include "runtime_errors.h"
#include "stream_api_macro.h"

using namespace aw_rt;

namespace {
CUstream cu(cudaStream_t s) { return reinterpret_cast<CUstream>(s); }
CUevent cu(cudaEvent_t e) { return reinterpret_cast<CUevent>(e); }
}  // namespace

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* s) {
  AW_RT_INIT();
  return record(drv().stream_create(reinterpret_cast<CUstream*>(s), 0));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  AW_RT_INIT();
  return record(drv().stream_create(reinterpret_cast<CUstream*>(s), flags));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags,
                                                                     int priority) {
  AW_RT_INIT();
  return record(drv().stream_create_with_priority(reinterpret_cast<CUstream*>(s), flags, priority));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) {
  AW_RT_INIT();
  return record(drv().stream_destroy(cu(s)));
}
AW_STREAM_API(cudaStreamSynchronize, (cudaStream_t s), d.stream_synchronize(cu(s)))
AW_STREAM_API(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int flags),
              d.stream_wait_event(cu(s), cu(e), flags))
AW_STREAM_API(cudaStreamGetFlags, (cudaStream_t s, unsigned int* flags), d.stream_get_flags(cu(s), flags))
AW_STREAM_API(cudaStreamGetPriority, (cudaStream_t s, int* priority), d.stream_get_priority(cu(s), priority))
// The program's callback goes to the driver unchanged (the signatures are ABI-identical), so the
// driver-level view names the program's own function.
AW_STREAM_API(cudaStreamAddCallback, (cudaStream_t s, cudaStreamCallback_t cb, void* user, unsigned int flags),
              d.stream_add_callback(cu(s), reinterpret_cast<CUstreamCallback>(cb), user, flags))
AW_STREAM_API(cudaLaunchHostFunc, (cudaStream_t s, cudaHostFn_t fn, void* user), d.launch_host_func(cu(s), fn, user))
AW_STREAM_API(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), d.event_record(cu(e), cu(s)))
AW_STREAM_API(cudaEventRecordWithFlags, (cudaEvent_t e, cudaStream_t s, unsigned int flags),
              d.event_record_with_flags(cu(e), cu(s), flags))
AW_STREAM_API(cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode mode),
              d.stream_begin_capture(cu(s), static_cast<CUstreamCaptureMode>(mode)))
AW_STREAM_API(cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t* graph),
              d.stream_end_capture(cu(s), reinterpret_cast<CUgraph*>(graph)))
AW_STREAM_API(cudaStreamIsCapturing, (cudaStream_t s, enum cudaStreamCaptureStatus* status),
              d.stream_is_capturing(cu(s), reinterpret_cast<CUstreamCaptureStatus*>(status)))
AW_STREAM_API(cudaStreamGetDevice, (cudaStream_t s, int* device), d.stream_get_device(cu(s), device))
AW_STREAM_API(cudaStreamAttachMemAsync, (cudaStream_t s, void* p, size_t length, unsigned int flags),
              d.stream_attach_mem_async(cu(s), reinterpret_cast<CUdeviceptr>(p), length, flags))

// cudaStreamQuery's "not ready" is an answer, not an error: it does not become the last error.
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t s) {
  AW_RT_INIT();
  CUresult r = stream_api(false).stream_query(cu(s));
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : record(r);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaStreamQuery_ptsz(cudaStream_t s) {
  AW_RT_INIT();
  CUresult r = stream_api(true).stream_query(cu(s));
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : record(r);
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* e) {
  AW_RT_INIT();
  return record(drv().event_create(reinterpret_cast<CUevent*>(e), 0));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  AW_RT_INIT();
  return record(drv().event_create(reinterpret_cast<CUevent*>(e), flags));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  AW_RT_INIT();
  return record(drv().event_destroy(cu(e)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) {
  AW_RT_INIT();
  CUresult r = drv().event_query(cu(e));
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : record(r);
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
  AW_RT_INIT();
  return record(drv().event_synchronize(cu(e)));
}
AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  AW_RT_INIT();
  return record(drv().event_elapsed_time(ms, cu(start), cu(end)));
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  AW_RT_INIT();
  if (least) *least = 0;
  if (greatest) *greatest = -5;  // an H200's range
  return cudaSuccess;
}
