#include "in_place_write.h"

#include <cstring>

#include "capture_range.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

using namespace asyncwatch::trace;

void write(AnyRecord& r) noexcept {
  if (AW_UNLIKELY(!thread_buffer::write(&r))) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
  }
}

AnyRecord* begin_in_place_lost(uint64_t* start) noexcept {
  *start = now_ns();
  // Not written: counted like any call that passes unrecorded (not when disabled, not while paused).
  if (!capture::paused_quiet() && trace_writer::lost_calls_counted()) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
  }
  return nullptr;
}

void cancel_in_place(AnyRecord* r) noexcept {
  if (site_summary::is_slot(reinterpret_cast<char*>(r))) {  // the slot idle again, its bytes zero
    site_summary::detail::release(reinterpret_cast<char*>(r), r->h.size);
    return;
  }
  RecordHeader ph{static_cast<uint16_t>(RecordType::Padding), r->h.size};
  uint32_t word;
  memcpy(&word, &ph, sizeof word);
  __atomic_store_n(reinterpret_cast<uint32_t*>(r), word, __ATOMIC_RELEASE);
}

void stack_into_target(ThreadCallState& st, Category c) noexcept {
  // Only the record the runtime call published in place (a pending one is written after the
  // call: nothing of it is in the file while the call runs), and only from the driver call whose
  // record it is (adopt_target's test).
  if (st.pending_valid || c != st.runtime_category || !st.target || st.target == &st.pending ||
      !in_place_valid(st.target_generation))
    return;
  CallHead& h = st.target->head;
  if (h.flags & kFlagStackCaptured) return;
  // The runtime call's start was read before it began: the capture's time is moved out of it.
  const uint64_t t0 = now_ns();
  const uint32_t id = stack_now();
  if (!id) return;
  h.start_ns += now_ns() - t0;
  h.stack_id = id;
  __atomic_store_n(&h.flags, h.flags | kFlagStackCaptured, __ATOMIC_RELEASE);
}

AnyRecord* adopt_target(ThreadCallState& st, Category c) noexcept {
  st.driver_reached = true;
  // One record per application call: the first driver call of the runtime API's kind fills the
  // body of the runtime call's record; other driver calls made by the runtime are internal.
  if (st.pending_valid || c != st.runtime_category) return nullptr;
  st.pending_valid = true;
  return st.target;
}

}  // namespace asyncwatch::calls
