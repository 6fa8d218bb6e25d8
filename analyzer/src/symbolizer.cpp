#include "symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace asyncwatch {

namespace {
char* debuginfo_path = nullptr;
const Dwfl_Callbacks kOfflineCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &debuginfo_path,
};

std::string hex_build_id(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
  return s;
}
}  // namespace

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  if (status == 0 && out) return out.get();
  return name;
}

bool is_pseudo_module(const std::string& path) {
  if (path.empty() || path[0] == '[') return true;
  std::string name = path.substr(path.rfind('/') + 1);
  if (!name.empty() && name[0] == '[') return true;  // ".../[vdso]"
  for (const char* vdso : {"linux-vdso", "linux-gate", "vdso"})
    if (name.rfind(vdso, 0) == 0) return true;
  return path.find('/') == std::string::npos;  // a bare soname: not a file we can find
}

Symbolizer::Symbolizer(const std::vector<ModuleInfo>& modules, bool read_symbols) : modules_(modules) {
  usable_.assign(modules_.size(), false);
  module_problem_.assign(modules_.size(), std::string());
  if (!read_symbols) return;
  dwfl_ = dwfl_begin(&kOfflineCallbacks);
  if (!dwfl_) return;
  dwfl_report_begin(dwfl_);
  for (size_t i = 0; i < modules_.size(); ++i) {
    const ModuleInfo& m = modules_[i];
    // [vdso], linux-vdso.so.1, [vsyscall]: no file to read (and never the user's code).
    if (is_pseudo_module(m.path)) continue;
    // Only regular files: a trace is input, and a module path naming a FIFO (or a terminal) would
    // block the open below for ever. A path that does not exist goes on to libdwfl, which says so.
    struct stat st {};
    if (stat(m.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      module_problem_[i] = fmt::format("{}: cannot read it for symbols (not a regular file)", m.path);
      continue;
    }
    std::string name = m.path.substr(m.path.rfind('/') + 1);
    Dwfl_Module* mod = dwfl_report_elf(dwfl_, name.c_str(), m.path.c_str(), -1, m.load_bias, false);
    if (!mod) {
      module_problem_[i] = fmt::format("{}: cannot read it for symbols ({})", m.path, dwfl_errmsg(-1));
      continue;
    }
    if (!m.build_id.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr vaddr = 0;
      int len = dwfl_module_build_id(mod, &bits, &vaddr);
      if (len > 0 && (static_cast<size_t>(len) != m.build_id.size() ||
                      std::memcmp(bits, m.build_id.data(), m.build_id.size()) != 0)) {
        module_problem_[i] = fmt::format("{}: build id {} differs from the traced one {}: not used for symbols",
                                         m.path, hex_build_id(bits, static_cast<size_t>(len)),
                                         hex_build_id(m.build_id.data(), m.build_id.size()));
        continue;
      }
    }
    usable_[i] = true;
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);
}

Symbolizer::~Symbolizer() {
  if (dwfl_) dwfl_end(dwfl_);
}

const ModuleInfo* Symbolizer::module_of(uint64_t address) const {
  // The most recently loaded module covering the address wins (dlclose + dlopen reuse).
  for (size_t i = modules_.size(); i-- > 0;)
    if (address >= modules_[i].low && address < modules_[i].high) return &modules_[i];
  return nullptr;
}

const Frame& Symbolizer::resolve(uint64_t address) {
  auto it = cache_.find(address);
  if (it != cache_.end()) return it->second;
  Frame f;
  f.address = address;
  const ModuleInfo* info = module_of(address);
  if (info) f.module = info->path;
  size_t index = info ? static_cast<size_t>(info - modules_.data()) : 0;
  bool usable = info && usable_[index];
  if (info && !module_problem_[index].empty()) {  // reported once, for modules frames fall in
    problems_.push_back(std::move(module_problem_[index]));
    module_problem_[index].clear();
  }
  if (dwfl_ && usable && address > 0) {
    Dwarf_Addr pc = address - 1;
    Dwfl_Module* mod = dwfl_addrmodule(dwfl_, pc);
    if (mod) {
      if (const char* sym = dwfl_module_addrname(mod, pc)) f.function = demangle(sym);
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        Dwarf_Addr a = 0;
        if (const char* src = dwfl_lineinfo(line, &a, &lineno, nullptr, nullptr, nullptr)) {
          f.file = src;
          f.line = lineno;
        }
      }
    }
  }
  return cache_.emplace(address, std::move(f)).first->second;
}

}  // namespace asyncwatch
