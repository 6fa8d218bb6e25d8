// NVTX ranges: asyncwatch as the NVTX v3 injection library (nvtx_injection.cpp).
#pragma once

#include <cstdint>

namespace asyncwatch::nvtx {

// The library's constructor: NVTX_INJECTION64_PATH = this library's path when it is unset. The
// variable is then visible to the application (getenv, /proc/self/environ, its children): that is
// how nvtx3's lazy initialization finds us (a weak InitializeInjectionNvtx2_fnptr of the
// application's own image would win over a symbol of ours).
void set_injection_path() noexcept;

// InitializeInjectionNvtx2: fills the CORE module's slots; 1 on success, 0 (NVTX stays a no-op).
int initialize(const void* (*get_export_table)(uint32_t)) noexcept;

}  // namespace asyncwatch::nvtx
