// Which frame of a stack is "the user's code": the first (innermost) frame that is not in
// asyncwatch, the CUDA driver or the CUDA runtime, including a runtime linked statically
// into the program (functions named cuda*, __cuda*, cudart::*, __cudart*), nvcc's generated
// launch stubs (__device_stub_*, *.cudafe1.stub.c) and inline code of the CUDA headers.
#pragma once

#include "symbolizer.h"

#include <string>
#include <vector>

namespace asyncwatch {

// True for frames of asyncwatch, libcuda, libcudart or the static runtime.
bool is_tool_or_runtime_frame(const Frame& f);

// "cudaMemcpyAsync" from "cudaMemcpyAsync_ptsz", "cudaError cudaLaunchKernel<char>(...)": the
// plain name of a runtime API function, or "" when the frame is not one.
std::string runtime_api_of_frame(const Frame& f);

struct CallSite {
  int index = -1;           // index of the user frame in the stack, -1 when none was found
  std::string runtime_api;  // outermost runtime API frame below it ("" when none)
};

// `frames` innermost first.
CallSite select_call_site(const std::vector<Frame>& frames);

}  // namespace asyncwatch
