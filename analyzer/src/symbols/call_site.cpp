#include "symbols/call_site.h"

#include "symbols/names.h"
#include "symbols/symbolizer.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace asyncwatch {

namespace {

// The one list of CUDA API names (generated; analyzer/tools/gen_cuda_api_names.py).
const char* const kCudaApiNames[] = {
#include "symbols/cuda_api_names.inc"
};

// NVIDIA's libraries, and the CUDA-using libraries of the frameworks, by file name wherever they
// are installed (conda environments, pip wheels, containers): their frames are library code.
const char* const kVendorLibraries[] = {
    "libcublas",       "libcusparse",      "libcufft",     "libcurand", "libcusolver", "libnccl",    "libcudnn",
    "libnvrtc",        "libnvJitLink",     "libnvjitlink", "libnvjpeg", "libnpp",      "libcupti",   "libnvToolsExt",
    "libnvtx",         "libnvperf",        "libcutensor",  "libcufile", "libnvblas",   "libnvidia-", "libnvinfer",
    "libnvonnxparser", "libnvptxcompiler", "libnvfatbin",  "libtorch",  "libc10",      "libcaffe2",  "libcudadevrt",
};

// Directories of the system's libraries and programs (an interpreter such as /usr/bin/python3).
const char* const kSystemDirs[] = {"/lib/",       "/lib32/",     "/lib64/",      "/libx32/",          "/usr/lib/",
                                   "/usr/lib32/", "/usr/lib64/", "/usr/libx32/", "/usr/libexec/",     "/bin/",
                                   "/sbin/",      "/usr/bin/",   "/usr/sbin/",   "/usr/local/nvidia/"};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Code that frameworks generate at run time, by where they put it (docs/findings.md, "Generated
// code"): TorchInductor's cache (/tmp/torchinductor_<user>/: the compiled model's Python wrapper
// and its C++ .so), Triton's (~/.triton/cache/: kernel launchers), torch.fx's generated forward
// (file name "<eval_with_key>.N"). Never the user's line: the call site is the user's frame that
// called into it.
const char* const kGeneratedCode[] = {"/torchinductor_", "/.triton/", "<eval_with_key>"};
bool is_generated_code(const std::string& path) {
  for (const char* g : kGeneratedCode)
    if (path.find(g) != std::string::npos) return true;
  return false;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string strip_stream_suffix(std::string name) {
  for (const char* suffix : {"_ptsz", "_ptds"})
    if (name.size() > std::strlen(suffix) && ends_with(name, suffix)) name.resize(name.size() - std::strlen(suffix));
  return name;
}

// Path components named "cuda" or "cuda-<version>" (a toolkit's root), followed by `sub`:
// /usr/local/cuda-13.0/lib64/..., /opt/cuda/targets/x86_64-linux/include/...
bool under_toolkit(const std::string& path, std::initializer_list<const char*> subs) {
  for (size_t p = path.find("/cuda"); p != std::string::npos; p = path.find("/cuda", p + 1)) {
    size_t j = p + 5;
    if (j < path.size() && path[j] == '-') {
      ++j;
      size_t digits = j;
      while (j < path.size() && (std::isdigit(static_cast<unsigned char>(path[j])) || path[j] == '.')) ++j;
      if (j == digits) continue;
    }
    if (j >= path.size() || path[j] != '/') continue;
    for (const char* sub : subs)
      if (path.compare(j + 1, std::strlen(sub), sub) == 0) return true;
  }
  // A toolkit's target directory wherever its root is: .../targets/<arch>-linux/{lib,include}/
  size_t t = path.find("/targets/");
  if (t != std::string::npos) {
    size_t linux_dir = path.find("-linux/", t);
    if (linux_dir != std::string::npos)
      for (const char* sub : subs)
        if (path.compare(linux_dir + 7, std::strlen(sub), sub) == 0) return true;
  }
  return false;
}

// The runtime's own headers, whose inline code is the runtime's side of a call: cuda_runtime.h's
// template wrappers, crt/host_runtime.h, crt/device_functions.h (nvcc's generated launch code).
bool is_runtime_header(const std::string& file) {
  if (file.empty()) return false;
  if (file.find("/include/crt/") != std::string::npos || starts_with(file, "crt/")) return true;
  for (const char* h : {"/cuda_runtime.h", "/cuda_runtime_api.h", "/host_runtime.h", "/device_functions.h",
                        "/cuda_device_runtime_api.h"})
    if (ends_with(file, h)) return true;
  return file == "cuda_runtime.h" || file == "cuda_runtime_api.h";
}

// Headers of other vendor code: the toolkit's include directory (thrust, cub, libcu++,
// cooperative_groups) and the system's (libstdc++).
bool is_library_header(const std::string& file) {
  return under_toolkit(file, {"include/"}) || starts_with(file, "/usr/include/");
}

bool is_runtime_module(const std::string& base) {
  return starts_with(base, "libcuda.so") || starts_with(base, "libcuda-") || starts_with(base, "libcudart");
}

bool is_library_module(const std::string& path) {
  if (is_generated_code(path)) return true;
  std::string base = basename_of(path);
  for (const char* lib : kVendorLibraries)
    if (starts_with(base, lib)) return true;
  for (const char* dir : kSystemDirs)
    if (starts_with(path, dir)) return true;
  if (path.find("/site-packages/") != std::string::npos || path.find("/dist-packages/") != std::string::npos)
    return true;
  return under_toolkit(path, {"lib/", "lib64/", "targets/", "extras/", "nvvm/", "compat/"});
}

// --user-code: the last pattern matching the frame decides (1 user, -1 library, 0 none matched).
int user_code_override(const Frame& f, const CallSitePolicy& policy) {
  int verdict = 0;
  for (const std::string& raw : policy.user_code) {
    bool negated = !raw.empty() && raw[0] == '!';
    std::string pattern = negated ? raw.substr(1) : raw;
    if (pattern.empty()) continue;
    bool hit = false;
    for (const std::string* s : {&f.module, &f.file}) {
      if (s->empty()) continue;
      if (fnmatch(pattern.c_str(), s->c_str(), 0) == 0 || fnmatch(pattern.c_str(), basename_of(*s).c_str(), 0) == 0)
        hit = true;
    }
    if (hit) verdict = negated ? -1 : 1;
  }
  return verdict;
}

// The same function, whoever named it: the demangler from a linkage name ("void k<0u>(int*)") or
// DWARF from a DW_AT_name ("k<0>"): compared without signature, integer literal suffixes of
// template arguments dropped.
std::string comparable_name(const std::string& name) {
  std::string s = name_without_signature(name), out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      size_t j = i + 1;
      while (j < s.size() && std::strchr("uUlL", s[j])) ++j;
      if (j > i + 1 && (j == s.size() || std::strchr(",> ", s[j]))) i = j - 1;
    }
  }
  return out;
}

bool same_function(const std::string& a, const std::string& b) {
  return a == b || comparable_name(a) == comparable_name(b);
}

}  // namespace

namespace {
struct FrameworkPhase {
  const char* file_suffix;  // the Python frame's file ends with it
  const char* function;     // its function contains it ("" any)
  const char* phase;
};
const FrameworkPhase kFrameworkPhases[] = {
    {"/jax/_src/compiler.py", "compile", "JAX compilation (XLA autotuning)"},
    {"/jax/_src/interpreters/pxla.py", "compile", "JAX compilation (XLA autotuning)"},
    {"/torch/_dynamo/convert_frame.py", "compile", "torch.compile compilation"},
    {"/torch/_inductor/compile_fx.py", "compile", "torch.compile compilation"},
    {"/torch/_inductor/select_algorithm.py", "", "TorchInductor autotuning"},
    {"/torch/_inductor/runtime/triton_heuristics.py", "bench", "TorchInductor autotuning"},
    {"/torch/_inductor/runtime/triton_heuristics.py", "autotune", "TorchInductor autotuning"},
    {"/triton/runtime/autotuner.py", "bench", "Triton autotuning"},
};
// The same from native frames, for work a framework runs on its own threads with no Python line
// to borrow: XLA's autotuner profiles candidates on its thread pool (redzone checks copy device to
// host, scratch buffers are set).
struct NativeFrameworkPhase {
  const char* function;  // the native frame's function contains it
  const char* phase;
};
const NativeFrameworkPhase kNativeFrameworkPhases[] = {
    {"xla::Autotuner::", "XLA autotuning"},
    {"xla::ConfigRunner::", "XLA autotuning"},
    {"xla::gpu::GpuProfiler::", "XLA autotuning"},
};
// Kernels only an autotuner launches: a call that waited for one was made inside its phase.
struct KernelFrameworkPhase {
  const char* kernel;  // the demangled kernel name starts with it
  const char* phase;
};
const KernelFrameworkPhase kFrameworkPhaseKernels[] = {
    {"stream_executor::gpu::RedzoneAllocatorKernel", "XLA autotuning"},  // redzone checks of candidates
    {"stream_executor::gpu::xla_fp_comparison", "XLA autotuning"},       // comparing candidates' outputs
    {"stream_executor::gpu::xla_int_comparison", "XLA autotuning"},
};
}  // namespace

const char* framework_phase_of_kernel(std::string_view kernel) {
  for (const KernelFrameworkPhase& p : kFrameworkPhaseKernels)
    if (kernel.substr(0, std::strlen(p.kernel)) == p.kernel) return p.phase;
  return nullptr;
}

const char* framework_phase(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.origin != FrameOrigin::Python) {
      for (const NativeFrameworkPhase& p : kNativeFrameworkPhases)
        if (f.function.find(p.function) != std::string::npos) return p.phase;
      continue;
    }
    for (const FrameworkPhase& p : kFrameworkPhases)
      if (ends_with(f.file, p.file_suffix) && f.function.find(p.function) != std::string::npos) return p.phase;
  }
  return nullptr;
}

bool is_cuda_api_name(const std::string& name) {
  std::string plain = strip_stream_suffix(name);
  return std::binary_search(std::begin(kCudaApiNames), std::end(kCudaApiNames), plain.c_str(),
                            [](const char* a, const char* b) { return std::strcmp(a, b) < 0; });
}

size_t cuda_api_name_count() { return std::size(kCudaApiNames); }
const char* cuda_api_name(size_t i) { return kCudaApiNames[i]; }

bool is_static_runtime_internal(const std::string& q) {
  if (starts_with(q, "libcudart_static_") || starts_with(q, "cudart::")) return true;
  // __cudart123 (CUDA <= 12), __cudartGetExportTable...: the runtime's reserved prefix
  return starts_with(q, "__cudart");
}

bool is_launch_stub_frame(const Frame& f) {
  if (starts_with(f.function, "__device_stub_") || f.file.find(".cudafe1.stub.c") != std::string::npos) return true;
  // a template kernel's stub is called through nvcc's "__wrapper__device_stub_<kernel>"
  std::string q = qualified_name(f.function);
  size_t last = q.rfind("::");
  return q.compare(last == std::string::npos ? 0 : last + 2, 23, "__wrapper__device_stub_") == 0;
}

std::string kernel_wrapper_of_stub(const Frame& f) {
  if (!starts_with(f.function, "__device_stub_")) return {};
  // The stub of kernel _Z5dummyx is __device_stub__Z5dummyx: "__device_stub_" + the mangled name
  // (or "__device_stub__" + the plain name of an extern "C" kernel).
  std::string q = qualified_name(f.function);
  std::string rest = q.substr(std::strlen("__device_stub_"));
  if (starts_with(rest, "_Z")) {
    std::string d = demangle(rest.c_str());
    return d == rest ? std::string() : d;
  }
  if (starts_with(rest, "_")) rest = rest.substr(1);
  return rest.empty() ? std::string() : rest;
}

std::string public_api_name(const std::string& name) {
  if (starts_with(name, "__cudaLaunchKernel")) return "cudaLaunchKernel";
  return name;
}

const char* frame_kind_name(FrameKind k) {
  switch (k) {
    case FrameKind::Tool: return "tool";
    case FrameKind::Runtime: return "runtime";
    case FrameKind::Library: return "library";
    case FrameKind::User: return "user";
  }
  return "user";
}

// Python code of the interpreter's own library or of an installed package (the frameworks: torch,
// cupy, numba, jax... under site-packages) rather than the user's: installed packages, the standard
// library (lib/pythonX.Y/), frozen modules, and the frameworks' package directories wherever they are.
bool is_python_library_file(const std::string& file) {
  if (file.empty() || starts_with(file, "<frozen ") || is_generated_code(file)) return true;
  if (file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos)
    return true;
  static const char* const kFrameworkDirs[] = {"/torch/",      "/cupy/", "/cupy_backends/", "/cupyx/", "/numba/",
                                               "/numba_cuda/", "/jax/",  "/jaxlib/",        "/triton/"};
  // A package's directory anywhere in the path, or first in a relative one: "torch/_tensor.py" (a
  // module imported through a relative sys.path entry, or compiled without its source beside it,
  // keeps the path it was compiled with).
  for (const char* d : kFrameworkDirs)
    if (file.find(d) != std::string::npos || (file[0] != '/' && starts_with(file, d + 1))) return true;
  size_t lib = file.find("/lib/python3.");
  return lib != std::string::npos && file.find('/', lib + 13) != std::string::npos;
}

FrameKind classify_frame(const Frame& f, const CallSitePolicy& policy) {
  if (f.origin == FrameOrigin::Python) {
    if (int o = user_code_override(f, policy)) return o > 0 ? FrameKind::User : FrameKind::Library;
    // A function compiled from a string (exec, compile(): file "<string>") is code generated at
    // run time, Triton's kernel launcher among it: no source to show, its caller's line is the
    // call site. The module level of such code stays the user's: `python -c`.
    if (f.file == "<string>" && f.function != "<module>") return FrameKind::Library;
    return is_python_library_file(f.file) ? FrameKind::Library : FrameKind::User;
  }
  if (f.origin == FrameOrigin::Interpreter) return FrameKind::Library;
  std::string base = basename_of(f.module);
  if (starts_with(base, "libasyncwatch")) return FrameKind::Tool;
  if (is_runtime_module(base) || is_launch_stub_frame(f) || is_runtime_header(f.file)) return FrameKind::Runtime;
  if (!f.function.empty()) {
    std::string q = qualified_name(f.function);
    if (is_cuda_api_name(q) || is_static_runtime_internal(q)) return FrameKind::Runtime;
  }
  if (int o = user_code_override(f, policy)) return o > 0 ? FrameKind::User : FrameKind::Library;
  // Outside every loaded module (JIT-compiled code, or module records the trace lacks): no source
  // to point to; the user's frame, if any, is further out.
  if (f.module.empty() && f.file.empty()) return FrameKind::Library;
  if (!f.module.empty() && is_library_module(f.module)) return FrameKind::Library;
  // The interpreter's own extension modules (lib/python3.X/lib-dynload: _ctypes, ...) and those
  // of the frameworks' packages: the Python line that called them is the user's.
  if (!f.module.empty() && is_python_library_file(f.module)) return FrameKind::Library;
  if (is_library_header(f.file)) return FrameKind::Library;
  // A shared object without a source line for this frame: built without debug information, not
  // the program itself. (The program's own frames are user code even when it is stripped.)
  if (f.file.empty() && !f.module.empty() && f.module != policy.executable && !is_pseudo_module(f.module))
    return FrameKind::Library;
  return FrameKind::User;
}

FrameKind FrameKindMemo::operator()(const Frame& f, const CallSitePolicy& policy) {
  key_.clear();
  key_ += static_cast<char>(f.origin);
  for (const std::string* s : {&policy.executable, &f.module, &f.file, &f.function}) {
    key_ += *s;
    key_ += '\0';
  }
  auto it = kinds_.find(key_);
  if (it == kinds_.end()) it = kinds_.emplace(key_, classify_frame(f, policy)).first;
  return it->second;
}

std::string runtime_api_of_frame(const Frame& f) {
  std::string q = qualified_name(f.function);
  if (q.find("::") != std::string::npos) return {};
  if (starts_with(q, "__cudaLaunchKernel")) return "cudaLaunchKernel";
  if (!starts_with(q, "cuda") || !is_cuda_api_name(q)) return {};
  return strip_stream_suffix(q);
}

Frame via_function(const Frame& site, const Frame& first_library, const Frame& called, const CallSitePolicy& policy) {
  if (called.function.empty() || first_library.address == site.address || called.function == first_library.function)
    return first_library;
  if (called.module.empty()) {  // no readable module defines it: where execution went on
    Frame f = first_library;
    f.function = called.function;
    return f;
  }
  // The user's own function (or CUDA's) that jumped on into a library is not "the library function called".
  if (classify_frame(called, policy) != FrameKind::Library) return first_library;
  return called;
}

std::string frame_name_text(const Frame& f) {
  if (f.module.empty())
    return (f.function.empty() ? std::string() : shorten_middle(f.function, kDisplayNameMax) + " ") +
           fmt::format(FMT_COMPILE("(no module, 0x{:x})"), f.address);
  std::string module = basename_of(f.module);
  if (f.function.empty()) return module + "+0x" + fmt::format(FMT_COMPILE("{:x}"), f.offset);
  return shorten_middle(f.function, kDisplayNameMax) + " (" + module + ")";
}

std::string call_site_key(const Frame& site, const Frame& via) {
  std::string key = site.function + '\x1f' + site.module + '\x1f';
  // Without a line (also line 0: calls of several lines merged) each call instruction is a site.
  key += site.has_line() ? site.file + ':' + std::to_string(site.line) : "+" + std::to_string(site.offset);
  if (!via.module.empty())
    key += '\x1d' + via.module + '\x1f' + (via.function.empty() ? "+" + std::to_string(via.offset) : via.function);
  return key;
}

CallSite select_call_site(const std::vector<Frame>& frames, const std::string& kernel_function,
                          const CallSitePolicy& policy) {
  CallSite site;
  std::string wrapper = kernel_function;  // the host wrapper of the launched kernel, if known
  int first_other = -1;
  int via = -1;
  bool after_stub = false;  // the previous frame was nvcc's launch stub
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    FrameKind kind = classify_frame(f, policy);
    if (kind == FrameKind::Tool || kind == FrameKind::Runtime) {
      std::string api = runtime_api_of_frame(f);
      if (!api.empty()) site.runtime_api = api;  // keeps the outermost one seen
      after_stub = is_launch_stub_frame(f);
      if (after_stub) {
        site.chevron_launch = true;
        std::string w = kernel_wrapper_of_stub(f);
        if (!w.empty()) wrapper = w;
      }
      continue;
    }
    // nvcc's host wrapper of the __global__ function (named after the kernel, its line the
    // declaration's): kernel<<<...>>> calls it, it calls the stub. At -O2 it is inlined into the
    // launching function: an inline frame whose caller (the next frame) is at the <<<...>>> line.
    // DWARF names an inlined template wrapper "k<0>" where the kernel is "void k<0u>(...)": right
    // after the stub, the name without template arguments suffices.
    if (!wrapper.empty() && !f.function.empty() &&
        (same_function(f.function, wrapper) || (after_stub && qualified_name(f.function) == qualified_name(wrapper)))) {
      site.chevron_launch = true;
      wrapper.clear();
      after_stub = false;
      continue;
    }
    after_stub = false;
    if (first_other < 0) first_other = static_cast<int>(i);
    if (kind == FrameKind::Library) {
      via = static_cast<int>(i);
      continue;
    }
    site.index = static_cast<int>(i);
    site.via = via;
    site.user = true;
    return site;
  }
  site.index = first_other;
  return site;
}

}  // namespace asyncwatch
