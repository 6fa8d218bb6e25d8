// AW_STREAM_API: defines a stream-ordered runtime API twice, as NAME (legacy default stream:
// driver entry points asked for with flags 0) and NAME_ptsz (per-thread default stream: flags
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM). CALL uses `d`, the matching StreamEntryPoints.
#pragma once
#include "driver_table.h"
#include "runtime_errors.h"

#define AW_STREAM_API(NAME, PARAMS, CALL)                      \
  AW_RUNTIME_EXPORT cudaError_t CUDARTAPI NAME PARAMS {        \
    AW_RT_INIT();                                              \
    const StreamEntryPoints& d = stream_api(false);            \
    return record(CALL);                                       \
  }                                                            \
  AW_RUNTIME_EXPORT cudaError_t CUDARTAPI NAME##_ptsz PARAMS { \
    AW_RT_INIT();                                              \
    const StreamEntryPoints& d = stream_api(true);             \
    return record(CALL);                                       \
  }

// The same for synchronous APIs whose per-thread form is NAME_ptds.
#define AW_SYNC_API(NAME, PARAMS, CALL)                        \
  AW_RUNTIME_EXPORT cudaError_t CUDARTAPI NAME PARAMS {        \
    AW_RT_INIT();                                              \
    const StreamEntryPoints& d = stream_api(false);            \
    return record(CALL);                                       \
  }                                                            \
  AW_RUNTIME_EXPORT cudaError_t CUDARTAPI NAME##_ptds PARAMS { \
    AW_RT_INIT();                                              \
    const StreamEntryPoints& d = stream_api(true);             \
    return record(CALL);                                       \
  }
