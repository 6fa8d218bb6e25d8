// Helpers for the simulator's unit tests: wall-clock timing, fake nvcc registrations, and direct
// access to the simulated driver through dlopen + cuGetProcAddress_v2 (as the runtime does).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <string>

extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun, const char* deviceName, int limit,
                            uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress, const char* deviceName, int ext, size_t size,
                       int constant, int global);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
}

namespace aw_sim_test {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
double time_call(F f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return seconds_since(t0);
}

constexpr double kClockHz = 1.98e9;  // ASYNCWATCH_SIM_CLOCK_HZ default
inline long long cycles_for(double seconds) { return static_cast<long long>(seconds * kClockHz); }

// Registers `host_stub` as a kernel named `mangled` (what nvcc's start-up code does) and returns it.
inline const void* register_kernel(const void* host_stub, const char* mangled) {
  static char fake_image[16] = "fake fatbin";
  void** handle = __cudaRegisterFatBinary(fake_image);
  __cudaRegisterFunction(handle, static_cast<const char*>(host_stub), const_cast<char*>(mangled), mangled, -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(handle);
  return host_stub;
}

// Launches a registered sleep kernel (first parameter: cycles) through cudaLaunchKernel.
inline cudaError_t launch_sleep(const void* kernel, double seconds, cudaStream_t stream) {
  long long cycles = cycles_for(seconds);
  void* args[] = {&cycles};
  return cudaLaunchKernel(kernel, dim3(1), dim3(1), args, 0, stream);
}

// The simulated driver, reached as the runtime reaches it.
struct Driver {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  decltype(&cuGetProcAddress_v2) get_proc =
      lib ? reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(lib, "cuGetProcAddress_v2")) : nullptr;

  template <class Fn>
  Fn get(const char* name, cuuint64_t flags = 0) const {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    if (!get_proc || get_proc(name, &fn, 13000, flags, &status) != CUDA_SUCCESS) return nullptr;
    return reinterpret_cast<Fn>(fn);
  }
  // The exported symbol name cuGetProcAddress returned for `name` (via dladdr, as the preload does).
  std::string symbol_for(const char* name, cuuint64_t flags) const {
    void* fn = get<void*>(name, flags);
    Dl_info info{};
    if (!fn || !dladdr(fn, &info) || !info.dli_sname) return "";
    return info.dli_sname;
  }
};

}  // namespace aw_sim_test
