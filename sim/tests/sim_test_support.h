// Helpers for the simulator's unit tests: wall-clock timing, fake nvcc registrations, and direct
// access to the simulated driver through dlopen + cuGetProcAddress_v2 (as the runtime does).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

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

// A host function that holds its stream until released: the stream cannot get past it, so a call
// that waits for the stream cannot return while it is held.
struct StreamHold {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  // The host function; `user` is a heap-allocated shared_ptr to the hold, deleted here.
  static void CUDART_CB run(void* user) {
    auto* self = static_cast<std::shared_ptr<StreamHold>*>(user);
    {
      std::unique_lock<std::mutex> lock((*self)->mutex);
      (*self)->cv.wait(lock, [&] { return (*self)->open; });
    }
    delete self;
  }
};

// True if `call` returns while its stream is held by a host function that `enqueue(fn, user)` puts
// on the stream (cudaLaunchHostFunc or cuLaunchHostFunc): the call did not wait for the stream.
// "Returned at once" without a time bound that a loaded machine could break. If the call does wait,
// a valve releases the stream after `valve` and the answer is false.
template <class Enqueue, class Call>
bool returns_while_stream_held(Enqueue enqueue, Call call, std::chrono::milliseconds valve = std::chrono::seconds(2)) {
  auto hold = std::make_shared<StreamHold>();
  auto* user = new std::shared_ptr<StreamHold>(hold);
  if (enqueue(&StreamHold::run, static_cast<void*>(user)) != 0) {
    delete user;
    return false;
  }
  std::thread opener([hold, valve] {
    std::unique_lock<std::mutex> lock(hold->mutex);
    hold->cv.wait_for(lock, valve, [&] { return hold->open; });
    hold->open = true;
    hold->cv.notify_all();
  });
  call();
  bool held;
  {
    std::lock_guard<std::mutex> lock(hold->mutex);
    held = !hold->open;
  }
  hold->release();
  opener.join();
  return held;
}
// The runtime form: held by cudaLaunchHostFunc on `stream`.
template <class Call>
bool returns_while_stream_held(cudaStream_t stream, Call call,
                               std::chrono::milliseconds valve = std::chrono::seconds(2)) {
  return returns_while_stream_held(
      [stream](cudaHostFn_t fn, void* user) { return cudaLaunchHostFunc(stream, fn, user); }, call, valve);
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
