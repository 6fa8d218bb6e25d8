// A shared library built without debug information (libaw_nodebug.so, nodebug_copy.cpp) that copies
// with the CUDA runtime: its frames have no source line, so the analyzer reports its copies where
// the program called it (callsites.cu).
#pragma once

#include <cstddef>

extern "C" {
// Copies `n` bytes of pageable `host` to a device buffer of its own and back (cudaMemcpyAsync both
// ways on the legacy stream). 0 on success, 2 when a CUDA call failed.
int aw_nodebug_roundtrip(void* host, size_t n);
}
