// Every driver entry point of the toolkit, with the first CUDA version of each
// (driver_entry_points.inc, generated from the toolkit's headers by
// sim/tools/gen_driver_entry_points.py): what the simulator's cuGetProcAddress answers for a name
// it does not model (proc_address.cpp), and what its test walks.
#pragma once

#include <cstddef>

namespace aw_sim {

struct ToolkitEntry {
  const char* name;
  int since;
};
inline constexpr ToolkitEntry kToolkitEntries[] = {
#define AW_ENTRY_POINT(name, since) {name, since},
#include "driver_entry_points.inc"
#undef AW_ENTRY_POINT
};
inline constexpr size_t kToolkitCount = sizeof kToolkitEntries / sizeof kToolkitEntries[0];

}  // namespace aw_sim
