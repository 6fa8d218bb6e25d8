#include "call_context.h"

namespace asyncwatch::calls {

void release_thread() noexcept {
  release_evidence_events();
  release_kernel_name_cache();
}

}  // namespace asyncwatch::calls

// The control API (asyncwatch/control.h).
extern "C" AW_EXPORT int asyncwatch_set_recording(int on) noexcept {
  asyncwatch::ErrnoKeeper keep;
  try {
    return asyncwatch::calls::set_recording(on != 0);
  } catch (...) {
    return -1;
  }
}
