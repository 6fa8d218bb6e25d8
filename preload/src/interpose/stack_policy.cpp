#include "stack_policy.h"

namespace asyncwatch::calls {

__attribute__((noinline)) void capture_stack(trace::CallHead& h) noexcept {
  const ThreadCallState& st = thread_state();
  uint32_t id = stacks::capture_call_site(st.caller.ra, st.caller.frame);
  if (id) {
    h.stack_id = id;
    h.flags |= trace::kFlagStackCaptured;
  }
}

void apply_stack_policy(AnyRecord& r, Category c) noexcept {
  if (takes_stacks(c) && wants_stack(r, c, r.head.end_ns - r.head.start_ns) &&
      !(r.head.flags & trace::kFlagStackCaptured))
    capture_stack(r.head);
}

uint32_t stack_now() noexcept {
  const ThreadCallState& st = thread_state();
  return stacks::capture_call_site(st.caller.ra, st.caller.frame);
}

}  // namespace asyncwatch::calls
