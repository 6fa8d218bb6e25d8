// Which frame of a stack is "the user's code": the first (innermost) frame that is not in
// asyncwatch, the CUDA driver or the CUDA runtime, including a runtime linked statically
// into the program (functions named cuda*, __cuda*, cudart::*, __cudart*), nvcc's generated
// launch stubs (__device_stub_*, *.cudafe1.stub.c), the host wrapper nvcc generates for each
// __global__ function, and inline code of the CUDA headers (cuda_runtime.h, crt/*.h).
#pragma once

#include "symbolizer.h"

#include <string>
#include <vector>

namespace asyncwatch {

// True for frames of asyncwatch, libcuda, libcudart or the static runtime.
bool is_tool_or_runtime_frame(const Frame& f);

// "cudaMemcpyAsync" from "cudaMemcpyAsync_ptsz", "cudaError cudaLaunchKernel<char>(...)": the
// plain name of a runtime API function, or "" when the frame is not one. The runtime's
// internal launch entry points that nvcc's stubs call (__cudaLaunchKernel,
// __cudaLaunchKernel_helper, _ptsz forms) are named "cudaLaunchKernel".
std::string runtime_api_of_frame(const Frame& f);

// The name of an API as the application knows it: "cudaLaunchKernel" for the internal
// "__cudaLaunchKernel"/"__cudaLaunchKernel_helper" (what `kernel<<<...>>>` reaches), `name`
// unchanged otherwise.
std::string public_api_name(const std::string& name);

// True for a frame of nvcc's generated launch code: __device_stub_* or a *.cudafe1.stub.c line.
bool is_launch_stub_frame(const Frame& f);

// "dummy(long long)" for "__device_stub__Z5dummyx(long long)": the host function nvcc
// generates for a __global__ function (it calls the stub), "" when `f` is not a stub.
std::string kernel_wrapper_of_stub(const Frame& f);

struct CallSite {
  int index = -1;           // index of the user frame in the stack, -1 when none was found
  std::string runtime_api;  // outermost runtime API frame below it ("" when none)
  bool chevron_launch = false;  // the stack went through nvcc's launch stub: kernel<<<...>>>
};

// `frames` innermost first. `kernel_function`: for a launch, the launched kernel's demangled
// name ("dummy(long long)"); the host wrapper nvcc generates under that name (its line is the
// __global__ declaration) is skipped, so the call site is the line of the <<<...>>>.
CallSite select_call_site(const std::vector<Frame>& frames, const std::string& kernel_function = {});

}  // namespace asyncwatch
