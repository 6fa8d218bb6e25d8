// What a module image says about its kernels' parameters: only the first parameter's size, used to
// decide whether an extern "C" kernel (no parameter types in its name) is a sleep kernel.
#pragma once
#include <cstddef>
#include <map>
#include <string>

namespace aw_sim {

// Kernel name -> size in bytes of its first parameter, for the kernels the image declares, read from
// an uncompressed cubin (ELF .nv.info.<kernel>, EIATTR_KPARAM_INFO), PTX text (.entry declarations),
// a fat binary holding those, or nvcc's fat binary wrapper (__fatDeviceText). Anything else
// (compressed fat binary entries, unknown images) yields nothing: the size stays unknown.
std::map<std::string, std::size_t> first_param_sizes(const void* image);

}  // namespace aw_sim
