// Error names/strings and the per-thread last error, set by failing runtime calls as the real one.
#include <map>

#include "runtime_errors.h"

namespace aw_rt {
namespace {
thread_local cudaError_t t_last_error = cudaSuccess;

const std::map<int, const char*>& error_names() {
  static const auto* names = new std::map<int, const char*>{
#include "cuda_error_names.inc"
  };
  return *names;
}
}  // namespace

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t to_runtime_error(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
    case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return cudaErrorStreamCaptureUnmatched;
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return cudaErrorStreamCaptureUnjoined;
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return cudaErrorStreamCaptureIsolation;
    case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: return cudaErrorGraphExecUpdateFailure;
    case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return cudaErrorPeerAccessAlreadyEnabled;
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: return cudaErrorPeerAccessNotEnabled;
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return cudaErrorPeerAccessUnsupported;
    default: return cudaErrorUnknown;
  }
}

cudaError_t record(CUresult r) { return record(to_runtime_error(r)); }

}  // namespace aw_rt

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaGetLastError(void) {
  cudaError_t e = aw_rt::t_last_error;
  aw_rt::t_last_error = cudaSuccess;
  return e;
}

AW_RUNTIME_EXPORT cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return aw_rt::t_last_error; }

AW_RUNTIME_EXPORT const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
  auto it = aw_rt::error_names().find(static_cast<int>(error));
  return it == aw_rt::error_names().end() ? "cudaErrorUnknown" : it->second;
}

AW_RUNTIME_EXPORT const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  // The simulator's description of an error is its name; the real runtime returns a sentence.
  auto it = aw_rt::error_names().find(static_cast<int>(error));
  return it == aw_rt::error_names().end() ? "unrecognized error code" : it->second;
}
