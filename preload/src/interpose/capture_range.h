// What part of the run is recorded: the application's pauses (the control API,
// asyncwatch/control.h) and the capture range (ASYNCWATCH_CAPTURE_RANGE, ASYNCWATCH_DELAY,
// ASYNCWATCH_DURATION; docs/configuration.md). Recording happens while no reason to pause holds;
// the reasons change under one lock (never taken on the hot path: the hot path sees only
// trace_writer's kPaused bit), and each change is kept in the trace header (pauses, ranges).
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"

namespace asyncwatch::capture {

// At load: a capture range or a delay starts the run paused.
void init(const Config& c) noexcept;

// Whether calls are not to be recorded now (the slow path's test, calls::recording). Crosses the
// delay's and the duration's boundaries when they have passed.
bool paused() noexcept;
// The same without crossing a boundary (no lock: code a signal handler may run).
bool paused_quiet() noexcept;
// Whether a capture range is configured (the trace is then opened by the first call even outside
// the range: a report says what was captured, also when nothing was).
bool configured() noexcept;

// The control API: pause (false) or resume (true); returns 1 if it was recording, else 0.
int set_recording(bool on) noexcept;
// cuProfilerStart (true) / cuProfilerStop (false), and through them the runtime's forms.
void profiler_api(bool start) noexcept;
// An NVTX push/start (true) or pop/end (false) of a range named as ASYNCWATCH_CAPTURE_RANGE's
// nvtx:NAME (nvtx_injection.cpp matches the name).
void nvtx_range(bool open) noexcept;

}  // namespace asyncwatch::capture
