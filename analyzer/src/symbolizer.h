// Offline symbolization of return addresses with elfutils libdwfl: every ModuleRecord of
// a trace is reported at its load bias; each address is resolved once and cached.
#pragma once

#include "trace_reader.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

struct Dwfl;

namespace asyncwatch {

struct Frame {
  uint64_t address = 0;
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty when unknown
  int line = 0;
  std::string module;    // path of the module holding the address; empty when none
};

class Symbolizer {
 public:
  // `read_symbols` false: modules are only used to name the module of an address; no file is
  // opened (ASYNCWATCH_NO_SYMBOLS=1, for golden tests of traces from other machines).
  explicit Symbolizer(const std::vector<ModuleInfo>& modules, bool read_symbols = true);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `address` is a return address: the call instruction is found at address - 1.
  const Frame& resolve(uint64_t address);
  // Modules that could not be opened or whose build id differs, one line each: only those
  // that an address resolved so far falls in. The kernel's pseudo-modules (linux-vdso.so.1,
  // [vdso], [vsyscall]) are skipped silently.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  const ModuleInfo* module_of(uint64_t address) const;
  Dwfl* dwfl_ = nullptr;
  std::vector<ModuleInfo> modules_;
  std::vector<bool> usable_;
  std::vector<std::string> module_problem_;
  std::unordered_map<uint64_t, Frame> cache_;
  std::vector<std::string> problems_;
};

std::string demangle(const char* name);

// True for module paths that name no file to read: the vDSO (linux-vdso.so.1, linux-gate.so.1,
// [vdso]), [vsyscall] and other "[...]" pseudo-modules, empty paths.
bool is_pseudo_module(const std::string& path);

}  // namespace asyncwatch
