#include "call_site.h"

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

}  // namespace

bool is_tool_or_runtime_frame(const Frame& f) {
  // Code nvcc generates into the program (the host stub of a kernel launch) and inline code of
  // the CUDA headers (cuda_runtime.h's template wrappers) belong to the runtime's side.
  if (starts_with(f.function, "__device_stub_")) return true;
  if (f.file.find("/targets/x86_64-linux/include/") != std::string::npos ||
      f.file.find("/cuda/include/") != std::string::npos || f.file.find(".cudafe1.stub.c") != std::string::npos)
    return true;
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
  } else if (!(starts_with(name, "cuda") && name.size() > 4 && std::isupper(static_cast<unsigned char>(name[4])))) {
    return {};
  }
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.resize(name.size() - n);
  }
  return name;
}

CallSite select_call_site(const std::vector<Frame>& frames) {
  CallSite site;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (is_tool_or_runtime_frame(frames[i])) {
      std::string api = runtime_api_of_frame(frames[i]);
      if (!api.empty()) site.runtime_api = api;  // keeps the outermost one seen
      continue;
    }
    site.index = static_cast<int>(i);
    break;
  }
  return site;
}

}  // namespace asyncwatch
