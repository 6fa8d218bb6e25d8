// Where the analyzer finds the files libdwfl reads for a module: the module itself and its
// separate debug information (.gnu_debuglink, build id, the dwz file of .gnu_debugaltlink). A
// trace names the modules, so each file is opened without blocking (O_NONBLOCK) and used only
// when it is a regular file: a FIFO or device named by a module path, a debug link or a build id
// link is never read. debuginfod servers are asked only when the user asks for it (--debuginfod):
// libdw's own search (dwfl_standard_find_debuginfo) would ask DEBUGINFOD_URLS' servers unasked.
// Memory: what a module's debug information will cost is estimated before libdw reads it and
// charged to a budget per module and per report (DebugInfoBudget).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

typedef struct Elf Elf;
struct Dwfl;

namespace asyncwatch {

// The file at `path` for reading if it is a regular file, else -1 (errno ENOENT, EACCES, ...;
// EINVAL: not a regular file). Never blocks, never makes a terminal the controlling one.
int open_regular_file(const char* path);

// What reading `elf`'s debug information and symbol table may cost libdw, in bytes: the
// sections' uncompressed sizes, the line table's weighted by kLineTableWeight (libdw keeps ~100
// bytes per row, a row can take one byte of .debug_line).
uint64_t debug_info_cost(Elf* elf);
inline constexpr uint64_t kLineTableWeight = 64;

// The memory that a report's symbolizers may spend on modules (options.h, Limits): shared by
// every trace of a report, whatever thread reads it.
struct DebugInfoBudget {
  uint64_t per_module = 0;  // bytes (debug_info_cost), 0 = no limit
  uint64_t total = 0;
  std::atomic<uint64_t> used{0};
  // Charges `cost` for `module`; false (and `why` says which budget, naming the module) when it
  // does not fit.
  bool charge(uint64_t cost, const std::string& module, std::string* why);
};

std::shared_ptr<DebugInfoBudget> make_debug_info_budget(uint64_t per_module, uint64_t total);

// A libdwfl session whose callbacks find nothing by themselves: the modules are reported by file
// (Symbolizer), their debug information found as said above (null when libdwfl fails).
Dwfl* begin_dwfl();

// --debuginfod: ask the servers of DEBUGINFOD_URLS for debug information not found locally
// (through libdebuginfod.so.1, loaded when first needed). Off by default.
void set_use_debuginfod(bool on);
bool use_debuginfod();

// What a module's find_debuginfo search needs (its dwfl userdata): the budget and where to say
// why debug information was not used.
struct ModuleSearch {
  DebugInfoBudget* budget = nullptr;
  std::string shown;    // the module's path as shown in messages
  std::string problem;  // set when a debug file was found but not used
};

}  // namespace asyncwatch
