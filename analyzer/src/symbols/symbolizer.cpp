#include "symbols/symbolizer.h"

#include "symbols/debuginfo.h"
#include "symbols/elf_calls.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace asyncwatch {

namespace {
// The module whose DWARF this thread is reading, for libdw's out-of-memory handler.
thread_local const std::string* t_reading_module = nullptr;

// libdw's own handler exits with status 1, the status of a --fail-on finding.
__attribute__((noreturn)) void debug_info_out_of_memory() {  // GNU form: part of the type, as Dwarf_OOM wants (clang)
  const std::string what =
      fmt::format("asyncwatch: out of memory reading the debug information of {}: the analysis failed\n",
                  t_reading_module ? *t_reading_module : std::string("a module"));
  ssize_t ignored = write(STDERR_FILENO, what.data(), what.size());
  (void)ignored;
  _exit(kExitAnalysisFailed);
}

std::string hex_build_id(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
  return s;
}

// A function DIE's demangled linkage name (`*qualified` true: it names the scopes), else its
// DW_AT_name; "" when it has neither.
std::string die_function_name_plain(Dwarf_Die* die, bool* qualified = nullptr) {
  Dwarf_Attribute attr;
  if (qualified) *qualified = true;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name})
    if (dwarf_attr_integrate(die, at, &attr))
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
  if (qualified) *qualified = false;
  const char* name = dwarf_diename(die);
  return name ? name : "";
}

// The DIE that declares a function: through DW_AT_abstract_origin (an inline instance) and
// DW_AT_specification (a member defined outside its class).
Dwarf_Die declaring_die(Dwarf_Die* die) {
  Dwarf_Die cur = *die;
  for (int hops = 0; hops < 4; ++hops) {
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if ((dwarf_attr(&cur, DW_AT_abstract_origin, &attr) || dwarf_attr(&cur, DW_AT_specification, &attr)) &&
        dwarf_formref_die(&attr, &next))
      cur = next;
    else
      break;
  }
  return cur;
}

// "ns::Class::" for a DIE declared in namespace ns, class Class: the scopes that contain the
// declaring DIE, outermost first, as the demangler writes them: "(anonymous namespace)" for an
// unnamed namespace and for nvcc's renamed ones (_GLOBAL__N__<hash>), "f::" for a function's local
// class, "{lambda}" for a closure type (DWARF has no name for it; `operator_call`: the function is
// its operator()).
std::string scope_prefix(Dwarf_Die* decl, bool operator_call) {
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(decl, &scopes);
  std::string prefix;
  for (int i = n - 1; i > 0; --i) {  // scopes[0] is the DIE itself, scopes[n-1] its CU
    int tag = dwarf_tag(&scopes[i]);
    const char* name = dwarf_diename(&scopes[i]);
    if (tag == DW_TAG_namespace) {
      bool anonymous = !name || std::strncmp(name, "_GLOBAL__N", 10) == 0;
      prefix += anonymous ? std::string("(anonymous namespace)::") : std::string(name) + "::";
    } else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
      if (name)
        prefix += std::string(name) + "::";
      else
        prefix += operator_call && i == 1 ? "{lambda}::" : "{unnamed type}::";
    } else if (tag == DW_TAG_subprogram && name) {
      prefix += die_function_name_plain(&scopes[i]) + "::";
    }
  }
  free(scopes);
  return prefix;
}

// The full name of a function's DIE: its demangled linkage name ("(anonymous namespace)::f<int>(int*)",
// "main::{lambda()#1}::operator()() const"), else its name qualified by the namespaces and classes it
// is declared in (GCC gives functions of internal linkage no linkage name: "(anonymous namespace)::f"),
// else its plain name ("main", C functions).
std::string die_function_name(Dwarf_Die* die) {
  bool qualified = false;
  std::string name = die_function_name_plain(die, &qualified);
  if (qualified || name.empty()) return name;
  Dwarf_Die decl = declaring_die(die);
  return scope_prefix(&decl, name == "operator()") + name;
}

// A DIE's code holds pc: 1, 0 not, -1 it has no address attributes (dwarf_haspc's 0 for both).
int holds_pc(Dwarf_Die* die, Dwarf_Addr pc) {
  if (dwarf_haspc(die, pc) > 0) return 1;
  return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges) ? 0 : -1;
}

// Nesting a hostile or broken module could make deeper than any compiler does.
constexpr int kMaxScopeDepth = 64;

// Appends to `path` the lexical blocks and inlined subroutines inside `scope` that hold pc,
// outermost first. A lexical block without addresses is looked into (GCC writes such blocks).
bool inner_scopes(Dwarf_Die* scope, Dwarf_Addr pc, std::vector<Dwarf_Die>* path, int depth) {
  Dwarf_Die child;
  if (depth >= kMaxScopeDepth || dwarf_child(scope, &child) != 0) return false;
  do {
    const int tag = dwarf_tag(&child);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block) continue;
    const int holds = holds_pc(&child, pc);
    if (holds > 0) {
      path->push_back(child);
      inner_scopes(&child, pc, path, depth + 1);
      return true;
    }
    if (holds < 0 && tag == DW_TAG_lexical_block) {
      const size_t at = path->size();
      if (inner_scopes(&child, pc, path, depth + 1)) return true;
      path->resize(at);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

}  // namespace

// Address ranges that may nest or overlap, by start, with the running highest end: the ranges
// holding an address are found from the last one starting at or before it backwards, as far back
// as any range reaches it (a unit's functions, a module's symbols).
template <class Range>  // with `low` and `high`
struct RangeIndex {
  std::vector<Range> ranges;    // by low, once sorted
  std::vector<uint64_t> reach;  // reach[i]: the highest end of ranges[0..i]
  void sort() {
    std::stable_sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.low < y.low; });
    reach.resize(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) reach[i] = std::max<uint64_t>(ranges[i].high, i ? reach[i - 1] : 0);
  }
  // Calls `visit` with each range holding pc, the one starting last first, until it returns false.
  // False when more than 256 ranges had to be looked at (the answer is then not known here).
  template <class Visit>
  bool holders(uint64_t pc, Visit visit) const {
    size_t i = static_cast<size_t>(
        std::upper_bound(ranges.begin(), ranges.end(), pc, [](uint64_t a, const Range& r) { return a < r.low; }) -
        ranges.begin());
    for (int looked = 0; i > 0 && reach[i - 1] > pc; --i) {  // no range further back reaches pc
      if (++looked > 256) return false;
      if (pc < ranges[i - 1].high && !visit(ranges[i - 1])) return true;
    }
    return true;
  }
};

// A module's symbols that can name an address: named, defined, of a nonzero size, not a section,
// file or TLS symbol (those dwfl_module_addrname weighs). libdwfl reads the whole table for each
// address: 10 ms an address in a library of 35 k functions (bench/symbolize_bench.cpp), seconds
// for the thousands of return addresses a framework's stacks have.
struct ModuleSymbols {
  struct Symbol {
    GElf_Addr low, high;
    const char* name;  // libdwfl's, valid while the module is
  };
  RangeIndex<Symbol> index;
  // Aliases (symbols of one range, other names: a constructor's C1 and C2, memcpy and its
  // variant): libdwfl's order of preference picks one, the same for every address of the range.
  std::unordered_map<GElf_Addr, const char*> alias_choice;  // by the range's start
  // The name every symbol holding pc has, when they agree (one symbol, or one function in two
  // tables; *start: where the innermost starts), else nullptr with *aliases_at set when they are
  // aliases of one range starting there (0 when the symbols differ in range, none holds pc, or too
  // many overlap pc to look at).
  const char* name_at(GElf_Addr pc, GElf_Addr* aliases_at, GElf_Addr* start) const {
    *aliases_at = *start = 0;
    const Symbol* first = nullptr;
    bool same_name = true, same_range = true;
    const bool known = index.holders(pc, [&](const Symbol& x) {
      if (!first) {
        first = &x;
      } else {
        same_name = same_name && std::strcmp(first->name, x.name) == 0;
        same_range = same_range && first->low == x.low && first->high == x.high;
      }
      return true;
    });
    if (!known || !first) return nullptr;
    if (same_name) {
      *start = first->low;
      return first->name;
    }
    if (same_range) *aliases_at = first->low;
    return nullptr;
  }
};

// A unit's functions with code, by start address, wherever their entries are: at the unit's level,
// in namespaces (clang writes a function defined in a namespace there; libdw 0.188's dwarf_getscopes
// does not look inside them, so such code had no inline frames), in classes, in other functions
// (the members of local classes: GCC's lambda closures' invokers) and in dwz's imported units.
struct UnitFunctions {
  struct Range {
    Dwarf_Addr low, high;
    Dwarf_Die function;
  };
  RangeIndex<Range> index;
  // The innermost function whose code holds pc (the one starting last), or nullptr.
  const Dwarf_Die* at(Dwarf_Addr pc) const {
    const Dwarf_Die* found = nullptr;
    index.holders(pc, [&](const Range& r) {
      found = &r.function;
      return false;
    });
    return found;
  }
};

namespace {
void index_functions(Dwarf_Die* scope, std::vector<UnitFunctions::Range>* out, int depth) {
  Dwarf_Die child;
  if (depth >= kMaxScopeDepth || dwarf_child(scope, &child) != 0) return;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_entry_point: {
        Dwarf_Addr base = 0, low = 0, high = 0;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &low, &high)) > 0;)
          if (low < high && low != 0) out->push_back({low, high, child});  // 0: code the linker dropped
        index_functions(&child, out, depth + 1);
        break;
      }
      case DW_TAG_namespace:
      case DW_TAG_module:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_lexical_block:
      case DW_TAG_inlined_subroutine: index_functions(&child, out, depth + 1); break;
      case DW_TAG_imported_unit: {  // dwz's partial units (distributions' debug files)
        Dwarf_Attribute attr;
        Dwarf_Die unit;
        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit)) index_functions(&unit, out, depth + 1);
        break;
      }
      default: break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

// Expands the inline scopes of `pc` (an address as libdwfl sees it; `cudie` its unit, `bias` the
// module's) into frames,
// innermost first, each a copy of `base` with its function, file and line. The innermost frame
// takes the line table's line; each scope's caller takes the scope's DW_AT_call_file/call_line.
// Appends nothing when the module has no DWARF for pc (the caller keeps the symbol table's name).
void inline_frames(Dwarf_Die* cudie, const UnitFunctions& functions, Dwarf_Addr bias, Dwarf_Addr pc, const Frame& base,
                   std::vector<Frame>& out) {
  // The concrete nesting at pc, outermost first: the function, then its blocks and inlined code.
  std::vector<Dwarf_Die> path(1);
  if (const Dwarf_Die* function = functions.at(pc - bias)) {
    path[0] = *function;
    inner_scopes(&path[0], pc - bias, &path, 1);
    std::reverse(path.begin(), path.end());
  } else {
    // No function of the index holds pc (a layout it does not know): libdw's scopes, whose
    // innermost's own parents are the concrete nesting (as eu-addr2line -i walks them).
    Dwarf_Die* found = nullptr;
    const int k = dwarf_getscopes(cudie, pc - bias, &found);
    Dwarf_Die innermost;
    if (k > 0) innermost = found[0];
    free(found);
    found = nullptr;
    const int m = k > 0 ? dwarf_getscopes_die(&innermost, &found) : 0;
    path.assign(found, found + std::max(m, 0));
    free(found);
    if (path.empty()) return;
  }
  Dwarf_Die* scopes = path.data();
  const int n = static_cast<int>(path.size());
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0) files = nullptr;
  std::string file = base.file;
  int line = base.line;
  size_t first = out.size();
  for (int i = 0; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram && tag != DW_TAG_entry_point) continue;
    Frame f = base;
    f.function = die_function_name(&scopes[i]);
    f.file = file;
    f.line = line;
    f.inlined = tag == DW_TAG_inlined_subroutine;
    out.push_back(std::move(f));
    if (tag != DW_TAG_inlined_subroutine) break;
    // Where the caller (the next scope out) called this inlined code.
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    file.clear();
    line = 0;
    if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &value) == 0 && value < nfiles)
      if (const char* src = dwarf_filesrc(files, value, nullptr, nullptr)) file = src;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &value) == 0) line = static_cast<int>(value);
  }
  // A trailing inline frame without its enclosing subprogram (broken DWARF): the symbol table's
  // function is the outer frame, at the call position just read.
  if (out.size() > first && out.back().inlined) {
    Frame f = base;
    f.file = file;
    f.line = line;
    out.push_back(std::move(f));
  }
}
}  // namespace

// A symbol's function name: demangled, without GCC's clone suffixes (the cold part of a function
// is "main.cold", "f() [clone .cold]"; partial inlining and constant propagation make ".part.0",
// ".isra.0", ".constprop.0"): the function the user wrote.
std::string symbol_function_name(const char* sym) {
  std::string name = demangle(sym);
  for (size_t c; (c = name.rfind(" [clone ")) != std::string::npos && name.back() == ']';) name.resize(c);
  if (name.rfind("_Z", 0) != 0)
    for (const char* clone : {".cold", ".part.", ".isra.", ".constprop.", ".lto_priv.", ".localalias"}) {
      size_t c = name.find(clone);
      if (c != std::string::npos && c > 0) name.resize(c);
    }
  return name;
}

bool parse_path_mapping(const std::string& text, PathMapping* out, std::string* error) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    *error = fmt::format("'{}' is not FROM=TO (two non-empty paths)", text);
    return false;
  }
  out->from = text.substr(0, eq);
  out->to = text.substr(eq + 1);
  while (out->from.size() > 1 && out->from.back() == '/') out->from.pop_back();
  while (out->to.size() > 1 && out->to.back() == '/') out->to.pop_back();
  return true;
}

std::string map_module_path(const std::string& path, const std::vector<PathMapping>& mappings) {
  for (const PathMapping& m : mappings) {
    if (path.compare(0, m.from.size(), m.from) != 0) continue;
    // whole components: FROM=/a maps /a and /a/x, not /ab
    if (path.size() == m.from.size() || path[m.from.size()] == '/' || m.from == "/")
      return m.to + path.substr(m.from == "/" ? 0 : m.from.size());
  }
  return path;
}

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

Symbolizer::Symbolizer(const std::vector<ModuleInfo>& modules, bool read_symbols,
                       const std::vector<PathMapping>& path_map, DebugInfoBudget* budget)
    : modules_(modules) {
  usable_.assign(modules_.size(), false);
  module_problem_.assign(modules_.size(), std::string());
  dwfl_modules_.assign(modules_.size(), nullptr);
  calls_.resize(modules_.size());
  units_.resize(modules_.size());
  searches_.resize(modules_.size());
  if (!read_symbols) return;
  dwfl_ = begin_dwfl();
  if (!dwfl_) return;
  dwfl_report_begin(dwfl_);
  for (size_t i = 0; i < modules_.size(); ++i) {
    const ModuleInfo& m = modules_[i];
    // [vdso], linux-vdso.so.1, [vsyscall]: no file to read (and never the user's code).
    if (is_pseudo_module(m.path)) continue;
    std::string path = map_module_path(m.path, path_map);
    std::string shown = path == m.path ? path : fmt::format("{} (mapped from {})", path, m.path);
    // Only regular files, opened without blocking: a trace is input, and a module path naming a
    // FIFO (or a terminal) would block the open for ever.
    int fd = open_regular_file(path.c_str());
    if (fd < 0) {
      module_problem_[i] = fmt::format("{}: cannot read it for symbols ({})", shown,
                                       errno == EINVAL ? "not a regular file" : std::strerror(errno));
      continue;
    }
    std::string name = m.path.substr(m.path.rfind('/') + 1);
    Dwfl_Module* mod = dwfl_report_elf(dwfl_, name.c_str(), path.c_str(), fd, m.load_bias, false);
    if (!mod) {
      close(fd);  // consumed only on success
      module_problem_[i] = fmt::format("{}: cannot read it for symbols ({})", shown, dwfl_errmsg(-1));
      continue;
    }
    auto search = std::make_unique<ModuleSearch>();
    search->budget = budget;
    search->shown = shown;
    void** userdata = nullptr;
    dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = search.get();
    searches_[i] = std::move(search);
    if (!m.build_id.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr vaddr = 0;
      int len = dwfl_module_build_id(mod, &bits, &vaddr);
      if (len > 0 && (static_cast<size_t>(len) != m.build_id.size() ||
                      std::memcmp(bits, m.build_id.data(), m.build_id.size()) != 0)) {
        module_problem_[i] = fmt::format("{}: build id {} differs from the traced one {}: not used for symbols", shown,
                                         hex_build_id(bits, static_cast<size_t>(len)),
                                         hex_build_id(m.build_id.data(), m.build_id.size()));
        continue;
      }
    }
    // The module's own debug information and symbol table, before libdw reads them (a separate
    // debug file is charged when find_debuginfo finds it).
    Dwarf_Addr elf_bias = 0;
    std::string over;
    if (budget && !budget->charge(debug_info_cost(dwfl_module_getelf(mod, &elf_bias)), shown, &over)) {
      module_problem_[i] = std::move(over);
      continue;
    }
    usable_[i] = true;
    dwfl_modules_[i] = mod;
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

const std::vector<Frame>& Symbolizer::resolve(uint64_t address) {
  auto it = cache_.find(address);
  if (it != cache_.end()) return it->second;
  Frame base;
  base.address = address;
  base.offset = address;
  const ModuleInfo* info = module_of(address);
  if (info) {
    base.module = info->path;
    base.offset = address - info->load_bias;
  }
  size_t index = info ? static_cast<size_t>(info - modules_.data()) : 0;
  bool usable = info && usable_[index];
  if (info && !module_problem_[index].empty()) {  // reported once, for modules frames fall in
    problems_.push_back(std::move(module_problem_[index]));
    module_problem_[index].clear();
  }
  std::vector<Frame> frames;
  if (dwfl_ && usable && address > 0) {
    Dwarf_Addr pc = address - 1;
    t_reading_module = &info->path;
    if (Dwfl_Module* mod = dwfl_addrmodule(dwfl_, pc)) {
      Dwarf_Addr dw_bias = 0;
      if (Dwarf* dw = dwfl_module_getdwarf(mod, &dw_bias)) dwarf_new_oom_handler(dw, debug_info_out_of_memory);
      uint64_t symbol_start = 0;
      if (const char* sym = symbol_name(mod, pc, &symbol_start)) base.function = symbol_function_name(sym);
      Dwarf_Addr bias = 0;
      Dwarf_Die* cu = mod == dwfl_modules_[index] ? static_cast<Dwarf_Die*>(unit_of(index, pc, &bias))
                                                  : dwfl_module_addrdie(mod, pc, &bias);
      // The line table's row for pc, in its unit (what dwfl_module_getsrc reads, but from the unit
      // found either way).
      // Not a row from before the symbol's start unless one of the unit's functions holds pc (a
      // cold part continuing the line of the code before it): code the unit does not describe (a
      // function built without debug information, or another unit's copy of it) gets no line
      // rather than the last line of other code before it.
      const UnitFunctions* functions = cu ? &functions_of(cu) : nullptr;
      Dwarf_Line* l = cu ? dwarf_getsrc_die(cu, pc - bias) : nullptr;
      Dwarf_Addr row = 0;
      if (l && symbol_start && dwarf_lineaddr(l, &row) == 0 && row + bias < symbol_start && !functions->at(pc - bias))
        l = nullptr;
      if (l) {
        int lineno = 0;
        const char* src = dwarf_linesrc(l, nullptr, nullptr);
        if (src && dwarf_lineno(l, &lineno) == 0) {
          base.file = src;
          base.line = lineno;
        }
      }
      if (cu) inline_frames(cu, *functions, bias, pc, base, frames);
      // The outermost frame is the symbol's: its demangled name has the argument list (DWARF
      // has it only through a linkage name, which functions of internal linkage lack).
      if (!frames.empty() && !base.function.empty()) frames.back().function = base.function;
    }
    t_reading_module = nullptr;
    // A separate debug file found but not used (its budget): said once, like a module's problem.
    if (ModuleSearch* search = searches_[index].get(); search && !search->problem.empty()) {
      problems_.push_back(std::move(search->problem));
      search->problem.clear();
    }
  }
  if (frames.empty()) frames.push_back(std::move(base));
  return cache_.emplace(address, std::move(frames)).first->second;
}

const UnitFunctions& Symbolizer::functions_of(void* unit) {
  std::unique_ptr<UnitFunctions>& f = unit_functions_[unit];
  if (!f) {
    f = std::make_unique<UnitFunctions>();
    index_functions(static_cast<Dwarf_Die*>(unit), &f->index.ranges, 0);
    f->index.sort();
  }
  return *f;
}

const char* Symbolizer::symbol_name(void* dwfl_module, uint64_t pc, uint64_t* start) {
  auto* mod = static_cast<Dwfl_Module*>(dwfl_module);
  std::unique_ptr<ModuleSymbols>& m = module_symbols_[mod];
  if (!m) {
    m = std::make_unique<ModuleSymbols>();
    const int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      GElf_Word shndx = 0;
      const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, nullptr, nullptr);
      const int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
      if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || sym.st_size == 0 || type == STT_SECTION ||
          type == STT_FILE || type == STT_TLS)
        continue;
      m->index.ranges.push_back({value, value + sym.st_size, name});
    }
    m->index.sort();
  }
  GElf_Addr aliases_at = 0;
  if (const char* name = m->name_at(pc, &aliases_at, start)) return name;
  if (aliases_at) {
    auto [it, added] = m->alias_choice.try_emplace(aliases_at, nullptr);
    if (added) it->second = dwfl_module_addrname(mod, pc);
    *start = it->second ? aliases_at : 0;
    return it->second;
  }
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, pc, &offset, &sym, nullptr, nullptr, nullptr);
  *start = name ? pc - offset : 0;
  return name;
}

// libdw finds an address's unit through .debug_aranges, which clang does not write by default, and
// elfutils before 0.191 then finds none (no file, line or inline frames for any clang-built
// program): the units' own ranges (DW_AT_low_pc/high_pc, DW_AT_ranges) indexed once per module
// answer instead.
void* Symbolizer::unit_of(size_t module, uint64_t pc, uint64_t* bias) {
  Dwfl_Module* mod = dwfl_modules_[module];
  Dwarf_Addr b = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &b)) {
    *bias = b;
    return cu;
  }
  ModuleUnits& m = units_[module];
  if (!m.indexed) {
    m.indexed = true;
    for (Dwarf_Die* cu = nullptr; (cu = dwfl_module_nextcu(mod, cu, &b)) != nullptr;) {
      m.bias = b;
      Dwarf_Addr base = 0, start = 0, end = 0;
      for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &start, &end)) > 0;)
        if (start < end) m.ranges.push_back({start, end, cu});
    }
    std::sort(m.ranges.begin(), m.ranges.end(), [](const UnitRange& x, const UnitRange& y) { return x.low < y.low; });
  }
  const uint64_t at = pc - m.bias;
  auto it =
      std::upper_bound(m.ranges.begin(), m.ranges.end(), at, [](uint64_t a, const UnitRange& r) { return a < r.low; });
  if (it == m.ranges.begin() || at >= (--it)->high) return nullptr;
  *bias = m.bias;
  return it->unit;
}

ElfCalls* Symbolizer::calls_of(size_t module, uint64_t* bias) {
  ModuleCalls& m = calls_[module];
  if (!m.tried) {
    m.tried = true;
    Dwarf_Addr b = 0;
    if (Elf* elf = usable_[module] && dwfl_modules_[module] ? dwfl_module_getelf(dwfl_modules_[module], &b) : nullptr) {
      m.calls = std::make_unique<ElfCalls>(elf);
      m.bias = b;
    }
  }
  *bias = m.bias;
  return m.calls.get();
}

Frame Symbolizer::entry_frame(size_t module, uint64_t address, const std::string& symbol) {
  Frame f = resolve(address + 1).back();  // resolve() looks at the byte before a return address
  f.address = address;
  f.offset = address - modules_[module].load_bias;
  f.function = symbol_function_name(symbol.c_str());
  f.inlined = false;
  return f;
}

Frame Symbolizer::called_function(uint64_t return_address, const std::string& prefer_module) {
  auto key = std::make_pair(return_address, prefer_module);
  auto it = called_cache_.find(key);
  if (it != called_cache_.end()) return it->second;
  Frame out;
  const ModuleInfo* info = return_address > 0 ? module_of(return_address - 1) : nullptr;
  uint64_t bias = 0;
  ElfCalls* calls = info && dwfl_ ? calls_of(static_cast<size_t>(info - modules_.data()), &bias) : nullptr;
  CallTarget t = calls ? calls->call_before(return_address - bias) : CallTarget{};
  const size_t self = info ? static_cast<size_t>(info - modules_.data()) : 0;
  if (t.kind == CallTarget::Local) {
    // Only where a function of the module's symbol table starts (the bytes before the return
    // address may end another instruction that merely holds an E8).
    GElf_Sym sym;
    GElf_Off off = 1;
    const char* name =
        dwfl_module_addrinfo(dwfl_modules_[self], t.address + bias, &off, &sym, nullptr, nullptr, nullptr);
    int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
    if (name && off == 0 && (type == STT_FUNC || type == STT_GNU_IFUNC))
      out = entry_frame(self, t.address + bias, name);
  } else if (t.kind == CallTarget::Imported) {
    out.function = symbol_function_name(t.symbol.c_str());
    // The module that defines it: the one execution went on in, if it does; else the first in
    // trace order (close to the dynamic linker's lookup order).
    std::vector<size_t> order;
    for (size_t i = 0; i < modules_.size(); ++i)
      if (modules_[i].path == prefer_module) order.push_back(i);
    for (size_t i = 0; i < modules_.size(); ++i)
      if (modules_[i].path != prefer_module) order.push_back(i);
    for (size_t i : order) {
      uint64_t b = 0;
      ElfCalls* c = calls_of(i, &b);
      uint64_t value = c ? c->defined_function(t.symbol) : 0;
      if (!value) continue;
      out = entry_frame(i, value + b, t.symbol);
      break;
    }
  }
  return called_cache_.emplace(key, std::move(out)).first->second;
}

std::vector<Frame> Symbolizer::expand(const std::vector<uint64_t>& addresses) {
  std::vector<Frame> out;
  out.reserve(addresses.size());
  for (uint64_t a : addresses) {
    const std::vector<Frame>& frames = resolve(a);
    out.insert(out.end(), frames.begin(), frames.end());
  }
  return out;
}

}  // namespace asyncwatch
