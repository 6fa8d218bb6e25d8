#include "thread_state.h"

#include "capture_range.h"
#include "real_functions.h"
#include "runtime_hooks.h"
#include "signal_hooks.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

AW_TLS_SHARED ThreadLocals tl_locals;

int set_recording(bool on) noexcept { return capture::set_recording(on); }

bool recording() noexcept {
  // Paused (by the application, or outside the capture range): not recorded, and not lost either.
  if (AW_UNLIKELY(capture::paused())) {
    // A capture range's trace is opened by the first call all the same (after the call would be
    // better, as for a recorded first call, but no record is written here to open it then).
    if (AW_UNLIKELY(capture::configured() && trace_writer::not_open_yet()) && !tracing_disabled() &&
        !thread_state().reentrant) {
      LibraryScope scope;
      if (trace_writer::accepts_calls_slow(true)) trace_writer::ensure_open();
    }
    return false;
  }
  if (AW_UNLIKELY(tracing_disabled())) return false;
  if (AW_LIKELY(trace_writer::is_active())) return true;
  // The first call (the file thread is started here), or the trace stopped: as the library's own
  // code, so that a signal handler meanwhile passes through.
  bool may_start = !thread_state().reentrant;
  LibraryScope scope;
  return trace_writer::accepts_calls_slow(may_start);
}

Nested classify_nested(ThreadCallState& st, Caller c) noexcept {
  if (st.phase == kPhaseHandler) {  // an application's handler, through our trampoline
    if (signals::handler_running(st, c.frame)) return Nested::Reentrant;
    signals::handler_left(st);
    return Nested::Application;
  }
  if (st.phase & kPhaseQuiet) return Nested::PassThrough;  // under a call already counted as lost
  if (in_library(st.phase)) return Nested::Lost;           // a handler interrupted our own code
  // Inside a real function: of the runtime (kPhaseInReal under a runtime wrapper), else of the
  // driver. kPhaseInReal also covers the real function of a prefilled driver wrapper called by the
  // runtime (hook_entry.h: it jumps to it in kPhaseInReal): the driver's text is the callee's then too.
  bool in_runtime = st.phase == kPhaseInReal && (st.outer == kOuterRuntime || st.outer == kOuterRuntimePassive);
  // From the library the active wrapper called (or a tail call from it: the return address is then
  // ours): the library calling its own (or the driver's) entry point. A handler's call comes from
  // the application's code.
  bool from_callee = real::is_own(c.ra) || (in_runtime && runtime_hooks::text_contains(st.rt_instance, c.ra)) ||
                     real::driver_text_contains(c.ra);
  return from_callee ? Nested::PassThrough : Nested::Reentrant;
}

uint32_t begin_lost(ThreadCallState& st) noexcept {
  uint32_t saved = st.phase;
  st.phase = saved | kPhaseQuiet;
  signal_fence();
  if (!capture::paused_quiet() && !tracing_disabled() && trace_writer::lost_calls_counted()) {
    thread_buffer::note_lost(trace::LostReason::SignalHandler);  // a handler interrupted the library's own code
    trace_writer::count_lost(1);
  }
  return saved;
}

}  // namespace asyncwatch::calls
