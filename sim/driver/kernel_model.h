// Modules, kernels and how long a kernel takes. No device code runs: a kernel is a name and a
// simulated duration, derived from the name (and, for sleep kernels, the first argument).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace aw_sim {

struct SimModule;

// Stands for CUfunction and CUkernel alike (the handles are interchangeable in the simulator).
struct SimFunction {
  std::string mangled_name;  // as registered, e.g. _Z5dummyx
  std::string plain_name;    // the identifier, e.g. dummy
  bool first_param_is_int64 = false;
  bool is_sleep_kernel = false;
  // Lazy loading: kNotLoaded until the first launch (or graph instantiation) loads it.
  enum LoadState { kNotLoaded, kLoading, kLoaded };
  std::atomic<int> load_state{kNotLoaded};
  SimModule* module = nullptr;
};

// Stands for CUmodule and CUlibrary. Any image is accepted; functions are created by name on request.
struct SimModule {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<SimFunction>> functions;
  // First-parameter sizes the image declares (image_params.h); decides extern "C" sleep kernels.
  std::map<std::string, std::size_t> first_param_size;
  SimFunction* get_or_create(const std::string& name);
};

SimModule* create_module(const void* image = nullptr);
bool destroy_module(SimModule* m);
bool is_module(const void* handle);
bool is_function(const void* handle);

// Lazy module loading (CUDA_MODULE_LOADING=LAZY): the first caller loads the kernel, spinning for
// ASYNCWATCH_SIM_LAZY_LOAD_US; callers that come while it loads wait for it, as they would for the
// driver's module lock.
void ensure_loaded(SimFunction& f);

// Simulated run time of one launch. `params` are cuLaunchKernel's kernelParams (may be null).
uint64_t kernel_duration_ns(const SimFunction& f, void** params);

// Demangling just enough of an Itanium name: the identifier and the first parameter's type code.
struct MangledKernelName {
  std::string identifier;
  char first_param = 0;  // 'x', 'l', 'y', 'm', ... or 0 when not known
};
MangledKernelName parse_mangled_name(const std::string& name);

}  // namespace aw_sim
