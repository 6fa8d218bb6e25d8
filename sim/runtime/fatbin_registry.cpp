#include "fatbin_registry.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver_table.h"
#include "runtime_errors.h"

namespace aw_rt {
namespace {

struct FatBinary {
  void* image = nullptr;        // nvcc's __fatDeviceText wrapper (never parsed)
  CUlibrary library = nullptr;  // loaded on the first kernel lookup
};

struct RegisteredKernel {
  FatBinary* fatbin = nullptr;
  std::string device_name;  // mangled, e.g. _Z5dummyx
  CUkernel kernel = nullptr;
};

struct RegisteredVariable {
  std::string device_name;
  size_t size = 0;
  CUdeviceptr address = 0;  // 0 until first use
};

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<FatBinary>> fatbins;      // live for the process: stubs keep kernel handles
  std::map<const void*, RegisteredKernel> kernels;      // by host stub
  std::map<const void*, RegisteredVariable> variables;  // by host shadow variable
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: used from atexit handlers
  return *r;
}

}  // namespace

cudaError_t kernel_for_host_function(const void* host_fun, CUkernel* out) {
  AW_RT_DRIVER();  // libraries and kernels are context-independent (CUDA 12): no context is created
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().kernels.find(host_fun);
  if (it == registry().kernels.end()) return record(cudaErrorInvalidDeviceFunction);
  RegisteredKernel& k = it->second;
  if (!k.kernel) {
    FatBinary* fb = k.fatbin;
    if (!fb->library) {
      CUresult r = drv().library_load_data(&fb->library, fb->image, nullptr, nullptr, 0, nullptr, nullptr, 0);
      if (r != CUDA_SUCCESS) return record(r);
    }
    CUresult r = drv().library_get_kernel(&k.kernel, fb->library, k.device_name.c_str());
    if (r != CUDA_SUCCESS) return record(r);
  }
  *out = k.kernel;
  return cudaSuccess;
}

cudaError_t device_address_of_symbol(const void* host_var, void** dev, size_t* size) {
  AW_RT_INIT();
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().variables.find(host_var);
  if (it == registry().variables.end()) return record(cudaErrorInvalidSymbol);
  RegisteredVariable& v = it->second;
  if (!v.address) {
    // Device memory for the variable, tagged "device" in the driver like any cudaMalloc.
    CUresult r = drv().mem_alloc(&v.address, v.size ? v.size : 1);
    if (r != CUDA_SUCCESS) return record(r);
  }
  if (dev) *dev = reinterpret_cast<void*>(v.address);
  if (size) *size = v.size;
  return cudaSuccess;
}

}  // namespace aw_rt

using namespace aw_rt;

AW_RUNTIME_EXPORT void** CUDARTAPI __cudaRegisterFatBinary(void* fatCubin) {
  auto owned = std::make_unique<FatBinary>();
  owned->image = fatCubin;
  FatBinary* fb = owned.get();
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().fatbins.push_back(std::move(owned));
  return reinterpret_cast<void**>(fb);
}

AW_RUNTIME_EXPORT void CUDARTAPI __cudaRegisterFatBinaryEnd(void**) {}

AW_RUNTIME_EXPORT void CUDARTAPI __cudaUnregisterFatBinary(void** handle) {
  // Runs from atexit. The library stays loaded: detached stream workers may still be finishing.
  auto* fb = reinterpret_cast<FatBinary*>(handle);
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (auto it = registry().kernels.begin(); it != registry().kernels.end();)
    it = it->second.fatbin == fb ? registry().kernels.erase(it) : std::next(it);
}

AW_RUNTIME_EXPORT void CUDARTAPI __cudaRegisterFunction(void** handle, const char* hostFun, char*,
                                                        const char* deviceName, int, uint3*, uint3*, dim3*, dim3*,
                                                        int*) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  RegisteredKernel& k = registry().kernels[hostFun];
  k.fatbin = reinterpret_cast<FatBinary*>(handle);
  k.device_name = deviceName;
  k.kernel = nullptr;
}

AW_RUNTIME_EXPORT void CUDARTAPI __cudaRegisterVar(void**, char* hostVar, char*, const char* deviceName, int,
                                                   size_t size, int, int) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  RegisteredVariable& v = registry().variables[hostVar];
  v.device_name = deviceName;
  v.size = size;
}

AW_RUNTIME_EXPORT char CUDARTAPI __cudaInitModule(void**) { return ensure_initialized() == cudaSuccess ? 1 : 0; }
