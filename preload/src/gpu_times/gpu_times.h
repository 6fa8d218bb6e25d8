// ASYNCWATCH_GPU_TIMES=1: when each copy, memset, kernel and host function ran on the device.
//
// Two timing events are recorded on the operation's stream, one just before and one just after the
// call that enqueues it (before(), after()); the pair waits in a per-thread ring and is resolved
// lazily, by the same thread, in later calls (a few per call), after each synchronizing call, at
// thread exit and at process exit (atexit, before the runtime's teardown): never from a thread of
// asyncwatch's. A resolved pair becomes a GpuSpan record. Device times are brought to
// CLOCK_MONOTONIC through a reference event recorded on a private non-blocking stream and
// synchronized (a GpuClock record per calibration; again after a second, so that the float
// milliseconds of cuEventElapsedTime keep ~60 ns resolution). Only the driver's entry points are
// called (through the real functions), so the runtime's cudaGetLastError state is untouched; nothing
// is recorded while any stream capture is active, nor in a reentrant call. docs/timeline.md.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "config.h"
#include "cuda_abi.h"

namespace asyncwatch::gpu_times {

// Whether the mode is on (read once from the configuration). Inline: the wrappers test it before
// calling before(), on every launch and copy.
inline bool enabled() noexcept { return config_fast().gpu_times; }

// Before the real call that enqueues an operation on `stream`: records the start event. Returns a
// token for after(), 0 when the operation is not timed (mode off, capture, ring full, no context).
uint32_t before(cuda::CUstream stream, bool per_thread_entry) noexcept;
// After it: when the call succeeded, records the end event and queues the pair. True when queued
// (the call record gets kFlagGpuTimed).
bool after(uint32_t token, cuda::CUresult result, cuda::CUstream stream, bool per_thread_entry, trace::GpuOp op,
           uint8_t stream_kind) noexcept;

// Resolves this thread's completed pairs (at most `max`, 0 = all): after a synchronizing call.
void drain(uint32_t max = 0) noexcept;

// Thread exit: resolves what completed, counts the rest as dropped, releases the events.
void release_thread() noexcept;

}  // namespace asyncwatch::gpu_times
