// The shared runtime's wrappers (runtime_hooks.cpp): what the rest of the library asks of them.
#pragma once

#include <atomic>
#include <cstdint>

namespace asyncwatch::runtime_hooks {

inline constexpr int kRtInstances = 4;  // 0: the exported wrappers; 1..3: runtimes handed out by dlsym
// The address range of the object each runtime instance is bound to ([lo, lo + len); len 0:
// unbound). The exported driver stubs (entry_stubs.cpp) read it by its assembler name.
struct TextRange {
  std::atomic<uintptr_t> lo, len;
};
extern TextRange g_rt_text[kRtInstances] __asm__("aw_rt_text");

// dlsym of a wrapped runtime name: the wrapper of the runtime instance bound to the object
// `real_fn` lies in (binding a free instance to it), or nullptr: hand `real_fn` out unwrapped.
void* wrapper_for(const char* name, void* real_fn) noexcept;
// Whether `ra` lies in the loaded object of runtime instance `instance` (the runtime -> driver
// nesting test of the wrappers). Inline: every driver call the shared runtime makes asks it.
inline bool text_contains(uint8_t instance, const void* ra) noexcept {
  const TextRange& t = g_rt_text[instance & (kRtInstances - 1)];
  return reinterpret_cast<uintptr_t>(ra) - t.lo.load(std::memory_order_relaxed) < t.len.load(std::memory_order_relaxed);
}
// After a dlclose: unbinds the instances whose object is no longer loaded.
void forget_unloaded() noexcept;

}  // namespace asyncwatch::runtime_hooks
