// The shared runtime's wrappers (runtime_hooks.cpp): what the rest of the library asks of them.
#pragma once

#include <cstdint>

namespace asyncwatch::runtime_hooks {

// dlsym of a wrapped runtime name: the wrapper of the runtime instance bound to the object
// `real_fn` lies in (binding a free instance to it), or nullptr: hand `real_fn` out unwrapped.
void* wrapper_for(const char* name, void* real_fn) noexcept;
// Whether `ra` lies in the loaded object of runtime instance `instance` (the runtime -> driver
// nesting test of the wrappers).
bool text_contains(uint8_t instance, const void* ra) noexcept;
// After a dlclose: unbinds the instances whose object is no longer loaded.
void forget_unloaded() noexcept;

}  // namespace asyncwatch::runtime_hooks
