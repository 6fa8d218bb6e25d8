// The loaded objects, written as ModuleRecords so that raw return addresses can be symbolized
// offline, even from the trace of a process that crashed.
#pragma once

#include <cstdint>

namespace asyncwatch::module_map {

// Writes a ModuleRecord for every loaded object not written yet to the current trace.
void write_new_modules() noexcept;
// True when `addr` lies in an object already written (lock-free read of a snapshot).
bool covered(uint64_t addr) noexcept;
// Bounds of this library's own code: frames inside it are dropped from stacks.
bool is_own_address(uint64_t addr) noexcept;
void init_own_range() noexcept;
// After fork: the child's trace needs the map again.
void reset() noexcept;

}  // namespace asyncwatch::module_map
