// Which frame of a stack is "the user's code", and through what it reached CUDA. Each frame (the
// symbolizer's, inline scopes expanded) is one of:
//   tool     asyncwatch itself (libasyncwatch*);
//   runtime  the CUDA driver and runtime: modules libcuda.so*, libcudart*; anywhere (a runtime
//            linked statically into a program or a library), functions with the exact name of a
//            CUDA runtime or driver API function (cuda_api_names.inc, generated from the toolkit's
//            headers) or of the static runtime's own symbols (libcudart_static_*, cudart::*,
//            __cudart*); nvcc's launch stubs (__device_stub_*, *.cudafe1.stub.c) and inline code
//            of the runtime's headers (cuda_runtime.h, cuda_runtime_api.h, crt/*.h);
//   library  other vendor and system code: modules under a CUDA toolkit's library directories,
//            Python's site-packages/dist-packages, the system's library and program directories,
//            NVIDIA's libraries by name wherever they are (kVendorLibraries), inline code of other
//            toolkit headers (thrust, cub) and of /usr/include, and frames without a source line
//            in a shared object (a library built without debug information);
//   user     everything else, and whatever --user-code names.
// The call site is the first user frame from the innermost outwards, after skipping the host
// wrapper nvcc generates for the launched __global__ function (named after the kernel, at the
// kernel's declaration line: at -O2 it is an inline frame whose caller is the <<<...>>> line).
// When no frame is user code, the first frame that is not the tool's or the runtime's.
#pragma once

#include "symbols/symbolizer.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

enum class FrameKind { Tool, Runtime, Library, User };

struct CallSitePolicy {
  std::string executable;  // the traced program: its frames are user code without debug info too
  // --user-code patterns (fnmatch, against a frame's module path, module file name and source
  // file): frames that match are user code; "!PATTERN": frames that match are library code. The
  // last matching pattern decides.
  std::vector<std::string> user_code;
};

// Plain names, for matching: "cudaMemcpyAsync" for "cudaMemcpyAsync_ptsz" too.
bool is_cuda_api_name(const std::string& name);
// The table itself (cuda_api_names.inc), for tests: name i of count, sorted.
size_t cuda_api_name_count();
const char* cuda_api_name(size_t i);
// The static runtime's internal functions (libcudart_static_<hex>, cudart::..., __cudart<N>).
bool is_static_runtime_internal(const std::string& qualified);

FrameKind classify_frame(const Frame& f, const CallSitePolicy& policy = {});
const char* frame_kind_name(FrameKind k);
// classify_frame's answers kept, by what it reads of the frame and the policy's executable: a
// report classifies the same frames in many findings' stacks, and one answer costs thousands of
// instructions (the text report of a 20 M-record trace: docs/performance.md).
// Every call must pass a policy with the same user_code.
class FrameKindMemo {
 public:
  FrameKind operator()(const Frame& f, const CallSitePolicy& policy);

 private:
  std::unordered_map<std::string, FrameKind> kinds_;
  std::string key_;
};

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
  int index = -1;               // index of the call site's frame, -1 when none was found
  int via = -1;                 // the library frame the user's frame called (adjacent to it), -1 when none
  bool user = false;            // the call site is user code (false: no user frame; the first library frame)
  std::string runtime_api;      // outermost runtime API frame below it ("" when none)
  bool chevron_launch = false;  // the stack went through nvcc's launch stub: kernel<<<...>>>
};

// The library function through which the user's frame `site` reached CUDA: `first_library`, the
// library frame adjacent to it, unless the user's call instruction called another function
// (`called`, Symbolizer::called_function of the site's return address): that function tail-called
// (jmp) onwards and left no frame (cufftExecC2C jumps to cufftXtExec), and it is the one the user
// called. `called` wins when it names another function and is library code (where its module is
// known; in the module that defines it, else `first_library`'s module); never when the library
// frame is inline code at the site's own address (the call then is the inlined library code's).
Frame via_function(const Frame& site, const Frame& first_library, const Frame& called,
                   const CallSitePolicy& policy = {});

// A frame by name and module, for text: "cusparseSpMV (libcusparse.so.12)"; "libfoo.so+0x1a2b"
// when it has no function name; long names shortened in the middle (names.h).
std::string frame_name_text(const Frame& f);

// What tells call sites apart (within a process and across processes): frames with a source line
// by function, file, line and module; frames without one by function, module and offset in the
// module (the same in every process: fork, ASLR); plus the library function called through
// (`via`, module empty when none) by name and module, or by module and offset when it has no name.
std::string call_site_key(const Frame& site, const Frame& via);

// The framework phase a stack was made in, from its Python frames (recorded in the trace): a
// framework's own compilation or autotuning (JAX's backend_compile, which runs XLA's autotuner;
// torch.compile's Dynamo/Inductor compilation and Inductor's and Triton's autotuning benchmarks),
// whose copies, allocations and syncs are the framework's one-time work, not the user's steady
// state. The name of the phase ("JAX compilation"), or nullptr. The list: kFrameworkPhases in
// call_site.cpp (docs/findings.md, "Framework phases").
const char* framework_phase(const std::vector<Frame>& frames);
// The same from a kernel the call waited for (its name recorded in the trace, so the verdict does
// not depend on the analyzing machine having the framework's symbols): kernels that run only inside
// such a phase (XLA's autotuner checks its candidates' redzones and compares their outputs). The list:
// kFrameworkPhaseKernels in call_site.cpp.
const char* framework_phase_of_kernel(std::string_view demangled_kernel);

// `frames` innermost first, inline frames expanded. `kernel_function`: for a launch, the launched
// kernel's demangled name ("dummy(long long)"); the host wrapper nvcc generates under that name
// (its line is the __global__ declaration) is skipped, so the call site is the line of the <<<...>>>.
CallSite select_call_site(const std::vector<Frame>& frames, const std::string& kernel_function = {},
                          const CallSitePolicy& policy = {});

}  // namespace asyncwatch
