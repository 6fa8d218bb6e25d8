// Call-site stacks: raw return addresses (Boost.Stacktrace's unwinder), interned so that each
// unique stack is written once as a StackRecord and every call carries only its id.
#pragma once

#include <cstdint>

namespace asyncwatch::stacks {

// Captures the calling thread's stack (frames inside libasyncwatch dropped) and returns its id
// in the current trace, writing a StackRecord the first time. 0 when nothing could be captured.
uint32_t capture_call_site() noexcept;

// Interning alone (tests): id of these frames, writing a StackRecord if new.
uint32_t intern(const uint64_t* frames, uint32_t depth) noexcept;

}  // namespace asyncwatch::stacks
