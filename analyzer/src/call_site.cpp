#include "call_site.h"

#include "symbolizer.h"

#include <cctype>
#include <cstring>

namespace asyncwatch {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "cudaError cudaLaunchKernel<char>(char const*, ...)" -> "cudaLaunchKernel";
// "cudart::cudaApiMemcpyAsync(void*, ...)" -> "cudart::cudaApiMemcpyAsync".
std::string qualified_name(const std::string& fn) {
  std::string s;
  int depth = 0;
  for (char c : fn) {
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    else if (c == '>') { if (depth > 0) --depth; }
    else if (depth == 0) s += c;
  }
  auto space = s.rfind(' ');
  if (space != std::string::npos) s = s.substr(space + 1);
  return s;
}

bool is_runtime_function(const std::string& function) {
  std::string q = qualified_name(function);
  if (q.empty()) return false;
  if (starts_with(q, "cudart::") || starts_with(q, "__cudart") || starts_with(q, "__cuda") ||
      starts_with(q, "cudaGetExportTable") || starts_with(q, "libcudart"))
    return true;
  // cudaMemcpyAsync, cudaLaunchKernel: "cuda" + an upper-case letter.
  if (starts_with(q, "cuda") && q.size() > 4 && std::isupper(static_cast<unsigned char>(q[4]))) return true;
  // Driver entry points (a driver linked into the program, or our simulator): cuMemcpy...
  if (starts_with(q, "cu") && q.size() > 2 && std::isupper(static_cast<unsigned char>(q[2]))) return true;
  return false;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// A line of a CUDA toolkit header: .../targets/<arch>-linux/include/..., .../cuda[-X.Y]/include/...,
// or one of the headers nvcc's generated code includes (crt/host_runtime.h,
// crt/device_functions.h, ...) wherever the toolkit lives.
bool is_cuda_header(const std::string& file) {
  if (file.empty()) return false;
  if (file.find("/include/crt/") != std::string::npos || starts_with(file, "crt/")) return true;
  size_t t = file.find("/targets/");
  if (t != std::string::npos && file.find("-linux/include/", t) != std::string::npos) return true;
  for (size_t p = file.find("/cuda"); p != std::string::npos; p = file.find("/cuda", p + 1)) {
    size_t j = p + 5;  // "/cuda/include/", "/cuda-13.0/include/"
    if (j < file.size() && file[j] == '-') {
      ++j;
      while (j < file.size() && (std::isdigit(static_cast<unsigned char>(file[j])) || file[j] == '.')) ++j;
    }
    if (file.compare(j, 9, "/include/") == 0) return true;
  }
  for (const char* h : {"/cuda_runtime.h", "/cuda_runtime_api.h", "/host_runtime.h", "/device_functions.h"})
    if (ends_with(file, h)) return true;
  return false;
}

}  // namespace

bool is_launch_stub_frame(const Frame& f) {
  return starts_with(f.function, "__device_stub_") || f.file.find(".cudafe1.stub.c") != std::string::npos;
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

bool is_tool_or_runtime_frame(const Frame& f) {
  // Code nvcc generates into the program (the host stub of a kernel launch) and inline code of
  // the CUDA headers (cuda_runtime.h's template wrappers) belong to the runtime's side.
  if (is_launch_stub_frame(f) || is_cuda_header(f.file)) return true;
  if (!f.module.empty()) {
    std::string base = basename_of(f.module);
    if (starts_with(base, "libasyncwatch") || starts_with(base, "libcuda.so") || starts_with(base, "libcudart") ||
        starts_with(base, "libcuda-"))
      return true;
  }
  return is_runtime_function(f.function);
}

std::string runtime_api_of_frame(const Frame& f) {
  std::string q = qualified_name(f.function);
  if (q.find("::") != std::string::npos) return {};
  std::string name = q;
  if (starts_with(name, "__cuda")) {
    if (!starts_with(name, "__cudaLaunchKernel")) return {};
    return "cudaLaunchKernel";
  } else if (!(starts_with(name, "cuda") && name.size() > 4 && std::isupper(static_cast<unsigned char>(name[4])))) {
    return {};
  }
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.resize(name.size() - n);
  }
  return name;
}

CallSite select_call_site(const std::vector<Frame>& frames, const std::string& kernel_function) {
  CallSite site;
  std::string wrapper = kernel_function;  // the host wrapper of the launched kernel, if known
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (is_tool_or_runtime_frame(f)) {
      std::string api = runtime_api_of_frame(f);
      if (!api.empty()) site.runtime_api = api;  // keeps the outermost one seen
      if (is_launch_stub_frame(f)) {
        site.chevron_launch = true;
        std::string w = kernel_wrapper_of_stub(f);
        if (!w.empty()) wrapper = w;
      }
      continue;
    }
    // nvcc's host wrapper of the __global__ function (named after the kernel, its line the
    // declaration's): kernel<<<...>>> calls it, it calls the stub. Only right after the stub
    // (or, for a known kernel, anywhere below the first user frame).
    if (!wrapper.empty() && !f.function.empty() && (f.function == wrapper || qualified_name(f.function) == wrapper)) {
      site.chevron_launch = true;
      wrapper.clear();
      continue;
    }
    site.index = static_cast<int>(i);
    break;
  }
  return site;
}

}  // namespace asyncwatch
