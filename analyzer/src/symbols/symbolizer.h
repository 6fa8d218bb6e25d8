// Offline symbolization of return addresses with elfutils libdw/libdwfl: every ModuleRecord of
// a trace is reported at its load bias; each address is resolved once and cached. An address
// whose code was inlined becomes several frames, one per inline scope (DW_TAG_inlined_subroutine),
// as `addr2line -i` shows them: nvcc -O2 inlines the host wrapper of a kernel into the function
// that launches it, and that function may itself be inlined into its caller.
#pragma once

#include "options.h"
#include "read/trace_reader.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct Dwfl;
struct Dwfl_Module;

namespace asyncwatch {

class ElfCalls;
struct DebugInfoBudget;
struct ModuleSearch;
struct UnitFunctions;  // symbolizer.cpp
struct ModuleSymbols;  // symbolizer.cpp

// Where a frame comes from: native code, a Python frame (function = qualified name, file = the .py
// file, no address or module), or native code of the Python interpreter itself (libpython or the
// python executable) in a stack that has Python frames.
enum class FrameOrigin : uint8_t { Native, Python, Interpreter };

// The small members first, together: 120 bytes instead of 136 (a report holds 8 or more per
// finding, and findings can be hundreds of thousands: docs/performance.md, "Report memory").
struct Frame {
  FrameOrigin origin = FrameOrigin::Native;
  bool inlined = false;   // code of `function` inlined into the next (outer) frame, which called it at ITS file:line
  bool borrowed = false;  // a Python frame of another thread (StackRecord.python_lender), after the stack's own
  int line = 0;
  uint64_t address = 0;  // the return address as traced (every inline frame of it has the same one)
  uint64_t offset = 0;   // address - load bias of its module: the same in every process (ASLR, fork)
  std::string function;  // demangled, in full; empty when unknown
  std::string file;      // empty when unknown
  std::string module;    // path of the module holding the address, as traced; empty when none

  // A source line: a file and a line above 0. DWARF's line 0 is "no source line" (clang -O2 makes
  // the identical calls of an if and its else one instruction at line 0): such a frame names its
  // file, and is told apart and shown as one without a line.
  bool has_line() const { return !file.empty() && line > 0; }
};

// "FROM=TO" -> mapping; false (and `error` says why) when malformed.
bool parse_path_mapping(const std::string& text, PathMapping* out, std::string* error);
// `path` with the first mapping whose FROM is a prefix of it applied; `path` when none is.
std::string map_module_path(const std::string& path, const std::vector<PathMapping>& mappings);

class Symbolizer {
 public:
  // `read_symbols` false: modules are only used to name the module of an address; no file is
  // opened (ASYNCWATCH_NO_SYMBOLS=1, for golden tests of traces from other machines). Files are
  // found and opened as symbols/debuginfo.h says (regular files only, never blocking); `budget`
  // (shared by a report's traces): a module whose debug information does not fit is not used
  // for symbols, and problems() names it.
  explicit Symbolizer(const std::vector<ModuleInfo>& modules, bool read_symbols = true,
                      const std::vector<PathMapping>& path_map = {}, DebugInfoBudget* budget = nullptr);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frames of one return address (the call instruction is at address - 1), innermost first:
  // the inline scopes, each with the line it is at, then the function the code belongs to. Never
  // empty; a frame without symbols keeps its address, offset and module.
  const std::vector<Frame>& resolve(uint64_t address);
  // A whole stack (innermost first), inline frames expanded.
  std::vector<Frame> expand(const std::vector<uint64_t>& addresses);
  // The function that the call instruction ending at `return_address` called, decoded from the
  // module's file on disk (elf_calls.h: a direct call of a PLT stub or of a function of the same
  // module, an indirect call through a GOT slot), as a frame at that function's entry: its name
  // (the PLT/GOT slot's relocation symbol for an imported function) and the module that defines it,
  // looked up in the module `prefer_module` (a path as traced) first, then in every module in trace
  // order. Without function when the call is none of those forms or its module cannot be read;
  // without module when no readable module defines the imported symbol. Cached per address.
  Frame called_function(uint64_t return_address, const std::string& prefer_module = {});
  // Modules that could not be opened or whose build id differs, one line each: only those
  // that an address resolved so far falls in. The kernel's pseudo-modules (linux-vdso.so.1,
  // [vdso], [vsyscall]) are skipped silently.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  const ModuleInfo* module_of(uint64_t address) const;
  ElfCalls* calls_of(size_t module, uint64_t* bias);
  Frame entry_frame(size_t module, uint64_t address, const std::string& symbol);
  Dwfl* dwfl_ = nullptr;
  std::vector<Dwfl_Module*> dwfl_modules_;  // per module, null when not reported
  struct ModuleCalls {
    bool tried = false;
    uint64_t bias = 0;
    std::unique_ptr<ElfCalls> calls;
  };
  std::vector<ModuleCalls> calls_;  // per module, read on first use
  // Per module, built the first time libdw finds no unit for an address (symbolizer.cpp, unit_of):
  // each compilation unit's address ranges, by start.
  struct UnitRange {
    uint64_t low, high;
    void* unit;  // its Dwarf_Die, owned by libdwfl
  };
  struct ModuleUnits {
    bool indexed = false;
    uint64_t bias = 0;
    std::vector<UnitRange> ranges;
  };
  std::vector<ModuleUnits> units_;
  void* unit_of(size_t module, uint64_t pc, uint64_t* bias);  // a Dwarf_Die*, null if none
  // Per compilation unit (by its Dwarf_Die), made on its first address: its functions' address
  // ranges, so that each address of a unit is a binary search, not a walk of the unit.
  std::unordered_map<const void*, std::unique_ptr<UnitFunctions>> unit_functions_;
  const UnitFunctions& functions_of(void* unit);
  // Per Dwfl_Module, made on its first address: its sized function symbols by address, so that an
  // address's symbol is a binary search (libdwfl's dwfl_module_addrname reads the whole table).
  std::unordered_map<const void*, std::unique_ptr<ModuleSymbols>> module_symbols_;
  // The name of pc's symbol, and in *start where the symbol starts (0: not known).
  const char* symbol_name(void* dwfl_module, uint64_t pc, uint64_t* start);
  std::map<std::pair<uint64_t, std::string>, Frame> called_cache_;
  std::vector<ModuleInfo> modules_;
  std::vector<std::unique_ptr<ModuleSearch>> searches_;  // per module: its find_debuginfo userdata
  std::vector<bool> usable_;
  std::vector<std::string> module_problem_;
  std::unordered_map<uint64_t, std::vector<Frame>> cache_;
  std::vector<std::string> problems_;
};

std::string demangle(const char* name);
// A symbol table name as a function name: demangled, GCC's clone suffixes removed ("main.cold" ->
// "main", "f() [clone .constprop.0]" -> "f()").
std::string symbol_function_name(const char* sym);

// True for module paths that name no file to read: the vDSO (linux-vdso.so.1, linux-gate.so.1,
// [vdso]), [vsyscall] and other "[...]" pseudo-modules, empty paths.
bool is_pseudo_module(const std::string& path);

}  // namespace asyncwatch
