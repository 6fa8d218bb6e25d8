// Everything a wrapper needs about the call it is making, one include for the wrappers; each part
// lives in its own room:
//   call_record.h            the record a call produces and the scratch record (from the record table)
//   thread_state.h           the thread's call state and its phase protocol, reentrancy, signals
//   stack_policy.h           which calls get their call site, before or after the call
//   in_place_write.h         the record reserved, published in flight and completed in place
//   driver_queries.h         stream kind, capture status, completion evidence, the device's record
//   kernel_names.h           kernel names and other interned text
//   host_func_trampolines.h  the trampoline that times a host function
#pragma once

#include "call_record.h"
#include "driver_queries.h"
#include "host_func_trampolines.h"
#include "in_place_write.h"
#include "kernel_names.h"
#include "stack_policy.h"
#include "thread_state.h"

namespace asyncwatch::calls {

// Frees the calling thread's name cache and destroys its evidence events (thread_exit hook).
void release_thread() noexcept;

}  // namespace asyncwatch::calls
