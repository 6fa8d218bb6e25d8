// The sleep kernel of the driver-API apps, compiled by nvcc -fatbin and embedded into them
// (CMakeLists.txt). C++ linkage on purpose: the apps look it up by its mangled name
// _Z12sleep_kernelx, as nvrtc users do; the mangled name carries the parameter type (long long) that
// the simulator needs to recognise a sleep kernel (an extern "C" name has no parameter information).
__global__ void sleep_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
