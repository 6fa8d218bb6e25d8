// How a program reaches the CUDA driver, read from its executable: `asyncwatch run` asks when the
// program wrote no trace, to tell a program that made no CUDA call from one whose CUDA runtime
// could not reach a driver (nvcc's default static runtime loads libcuda.so.1 itself, through no
// function the preload library sees).
#pragma once

#include <string>

namespace asyncwatch {

struct CudaLinkage {
  bool readable = false;              // an ELF file that could be read
  bool needs_shared_runtime = false;  // DT_NEEDED libcudart.so*: the runtime comes from the library path
  bool loads_driver_itself = false;   // holds the name "libcuda.so.1" to dlopen (the static runtime does)
  bool has_device_code = false;       // .nv_fatbin / .nvFatBinSegment: compiled by nvcc
  // NVIDIA's runtime is inside the executable (nvcc's default -cudart static).
  bool static_runtime() const { return loads_driver_itself && !needs_shared_runtime; }
};

// `path`: the executable (not searched for on PATH: program_path does that). Unreadable or not
// ELF: all false.
CudaLinkage cuda_linkage(const std::string& path);

// The file execvp would run for `program`: itself when it holds a '/', else the first executable
// regular file of that name on $PATH; "" when none.
std::string program_path(const std::string& program);

}  // namespace asyncwatch
