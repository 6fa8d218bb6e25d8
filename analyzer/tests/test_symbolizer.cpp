// Offline symbolization of this very test binary through libdwfl: a real module, a real
// return address, a real source line.
#include "symbols/call_site.h"
#include "symbols/symbolizer.h"

#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <random>

#include <cstring>

using namespace asyncwatch;

namespace {

struct Found {
  ModuleInfo module;
  bool ok = false;
};

int find_self(dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<Found*>(data);
  if (found->ok) return 0;
  // The first entry with an empty name is the executable.
  if (info->dlpi_name && info->dlpi_name[0]) return 0;
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    low = std::min<uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
    high = std::max<uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return 0;
  found->module.path.assign(path, static_cast<size_t>(n));
  found->module.load_bias = info->dlpi_addr;
  found->module.low = low;
  found->module.high = high;
  found->ok = true;
  return 0;
}

__attribute__((noinline)) uint64_t my_return_address() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

const int kCallSiteLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t user_function_calling_cuda() {
  asm volatile("" ::: "memory");
  uint64_t ret = my_return_address();  // this line is the call site
  asm volatile("" ::: "memory");
  return ret;
}

// nvcc -O2 inlines the host wrapper of a kernel into the launching function, which may itself be
// inlined into its caller: here inner() into middle() into outer(), always, at every -O level.
const int kInnerLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t inner() {
  asm volatile("" ::: "memory");
  uint64_t ret = my_return_address();
  asm volatile("" ::: "memory");
  return ret;
}
// Every loaded module whose path names one of `wanted` ("" for the executable), as a trace has it.
struct Loaded {
  std::vector<std::string> wanted;
  std::vector<ModuleInfo> modules;
};
int find_loaded(dl_phdr_info* info, size_t, void* data) {
  auto* l = static_cast<Loaded*>(data);
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  bool exe = path.empty();
  bool want = false;
  for (const std::string& w : l->wanted) want = want || (w.empty() ? exe : !exe && path.find(w) != std::string::npos);
  if (!want) return 0;
  if (exe) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return 0;
    path.assign(buf, static_cast<size_t>(n));
  }
  ModuleInfo m;
  m.path = path;
  m.load_bias = info->dlpi_addr;
  m.low = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.low = std::min<uint64_t>(m.low, info->dlpi_addr + ph.p_vaddr);
    m.high = std::max<uint64_t>(m.high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  l->modules.push_back(std::move(m));
  return 0;
}

// Modules reported to a libdwfl session of the test's own (libdwfl's answers, to compare with):
// each a path and the bias it is reported at.
struct OwnDwfl {
  Dwfl* dwfl = nullptr;
  std::vector<Dwfl_Module*> modules;  // null where one could not be reported
  explicit OwnDwfl(const std::vector<std::pair<std::string, uint64_t>>& paths) {
    static const Dwfl_Callbacks callbacks = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, nullptr, nullptr};
    dwfl = dwfl_begin(&callbacks);
    if (!dwfl) return;
    dwfl_report_begin(dwfl);
    for (const auto& [path, bias] : paths)
      modules.push_back(dwfl_report_elf(dwfl, path.c_str(), path.c_str(), -1, bias, false));
    dwfl_report_end(dwfl, nullptr, nullptr);
  }
  ~OwnDwfl() { dwfl_end(dwfl); }
  OwnDwfl(const OwnDwfl&) = delete;
  OwnDwfl& operator=(const OwnDwfl&) = delete;
};

// The defined function symbols of `mod` longer than `min_size` bytes: (address, size).
std::vector<std::pair<GElf_Addr, GElf_Xword>> functions_of(Dwfl_Module* mod, GElf_Xword min_size) {
  std::vector<std::pair<GElf_Addr, GElf_Xword>> functions;
  for (int i = 1, n = dwfl_module_getsymtab(mod); i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, nullptr, nullptr, nullptr);
    if (name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF && sym.st_size > min_size)
      functions.push_back({value, sym.st_size});
  }
  return functions;
}

const int kMiddleLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t middle() {
  asm volatile("" ::: "memory");
  uint64_t ret = inner() + 1;
  asm volatile("" ::: "memory");
  return ret - 1;
}
const int kOuterLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t outer() {
  asm volatile("" ::: "memory");
  uint64_t ret = middle();
  asm volatile("" ::: "memory");
  return ret;
}

}  // namespace

TEST(Symbolizer, ResolvesFunctionFileAndLineOfAReturnAddress) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  uint64_t ret = user_function_calling_cuda();
  Symbolizer symbols({self.module});
  const std::vector<Frame>& frames = symbols.resolve(ret);
  ASSERT_EQ(frames.size(), 1u);
  const Frame& f = frames[0];
  EXPECT_NE(f.function.find("user_function_calling_cuda"), std::string::npos) << f.function;
  EXPECT_NE(f.file.find("test_symbolizer.cpp"), std::string::npos) << f.file;
  EXPECT_EQ(f.line, kCallSiteLine);
  EXPECT_EQ(f.module, self.module.path);
  EXPECT_EQ(f.offset, ret - self.module.load_bias);
  EXPECT_FALSE(f.inlined);
  EXPECT_TRUE(symbols.problems().empty());
  // Cached: the same object comes back.
  EXPECT_EQ(&symbols.resolve(ret), &frames);
}

// One return address, three frames, as `addr2line -i` shows them: the innermost inline scope at
// the line of the call, each inline scope's caller at the line where it called the scope.
// The symbolizer finds an address's symbol in its own index of the module's symbols; its answer is
// libdwfl's (dwfl_module_addrname, which reads the whole table for each address): at the start,
// the middle and the last byte of functions of this program, the C library and the C++ library
// (aliases among them: libdwfl's choice of one is kept).
TEST(Symbolizer, SymbolOfAnAddressIsLibdwflsAnswer) {
  Loaded loaded;
  loaded.wanted = {"", "libc.so", "libstdc++.so"};
  dl_iterate_phdr(find_loaded, &loaded);
  ASSERT_EQ(loaded.modules.size(), 3u);
  Symbolizer symbols(loaded.modules);
  std::vector<std::pair<std::string, uint64_t>> paths;
  for (const ModuleInfo& m : loaded.modules) paths.push_back({m.path, m.load_bias});
  OwnDwfl own(paths);
  ASSERT_NE(own.dwfl, nullptr);
  std::mt19937_64 rng(7);
  size_t checked = 0, aliased = 0;
  for (Dwfl_Module* mod : own.modules) {
    ASSERT_NE(mod, nullptr);
    const std::vector<std::pair<GElf_Addr, GElf_Xword>> functions = functions_of(mod, 2);
    ASSERT_GT(functions.size(), 100u);
    for (int k = 0; k < 300; ++k) {
      const auto [start, size] = functions[rng() % functions.size()];
      for (GElf_Addr pc : {start, start + size / 2, start + size - 1}) {
        const char* expected = dwfl_module_addrname(mod, pc);
        if (!expected) continue;
        GElf_Off offset = 0;
        GElf_Sym sym;
        // (how many of the checked addresses are in a function with an alias)
        if (dwfl_module_addrinfo(mod, pc, &offset, &sym, nullptr, nullptr, nullptr)) {
          int same = 0;
          for (const auto& f : functions) same += f.first == start;
          aliased += same > 1;
        }
        // resolve() looks at the byte before a return address; the outermost frame is the symbol's
        EXPECT_EQ(symbols.resolve(pc + 1).back().function, symbol_function_name(expected)) << fmt::format(
            "{:#x} in {}", pc, dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 2000u);
  EXPECT_GT(aliased, 0u);  // the aliases' way was taken
}

TEST(Symbolizer, ExpandsInlineFramesWithTheirCallLines) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  uint64_t ret = outer();
  Symbolizer symbols({self.module});
  const std::vector<Frame>& frames = symbols.resolve(ret);
  ASSERT_EQ(frames.size(), 3u);
  // Functions of internal linkage: GCC gives them no DW_AT_linkage_name (named with their scopes),
  // clang does (its demangled form has the parameter list).
#if defined(__clang__)
  const std::string inner = "(anonymous namespace)::inner()", middle = "(anonymous namespace)::middle()";
#else
  const std::string inner = "(anonymous namespace)::inner", middle = "(anonymous namespace)::middle";
#endif
  EXPECT_EQ(frames[0].function, inner);
  EXPECT_EQ(frames[0].line, kInnerLine);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[1].function, middle);
  EXPECT_EQ(frames[1].line, kMiddleLine);
  EXPECT_TRUE(frames[1].inlined);
  EXPECT_EQ(frames[2].function, "(anonymous namespace)::outer()");
  EXPECT_EQ(frames[2].line, kOuterLine);
  EXPECT_FALSE(frames[2].inlined);
  for (const Frame& f : frames) {
    EXPECT_NE(f.file.find("test_symbolizer.cpp"), std::string::npos) << f.file;
    EXPECT_EQ(f.address, ret);
    EXPECT_EQ(f.offset, ret - self.module.load_bias);
  }
  std::vector<Frame> stack = symbols.expand({ret, ret});
  EXPECT_EQ(stack.size(), 6u);
}

// The reference: binutils' addr2line -i -f -C on the same binary and offsets (skipped without it).
TEST(Symbolizer, AgreesWithAddr2lineOnInlineFrames) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  if (system("addr2line --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no addr2line";
  Symbolizer symbols({self.module});
  for (uint64_t ret : {outer(), user_function_calling_cuda()}) {
    const std::vector<Frame>& frames = symbols.resolve(ret);
    std::string cmd =
        fmt::format("addr2line -i -f -C -e '{}' 0x{:x}", self.module.path, ret - 1 - self.module.load_bias);
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::vector<std::string> lines;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) {
      std::string l = buf;
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      lines.push_back(l);
    }
    pclose(p);
    ASSERT_EQ(lines.size(), 2 * frames.size()) << cmd;
    // Pairs of lines: a function, then "file:line" or "file:line (discriminator N)". Only the
    // locations are compared: binutils names the innermost inline frame after the enclosing symbol
    // and the others by their plain DW_AT_name; the names are checked in the test above.
    for (size_t i = 0; i < frames.size(); ++i) {
      std::string where = lines[2 * i + 1];
      where = where.substr(0, where.find(' '));
      std::string want = frames[i].file + ":" + std::to_string(frames[i].line);
      // A unit compiled with a relative name (ccache's CCACHE_BASEDIR makes them so): addr2line
      // joins it to the unit's compilation directory, we keep it as the unit names it.
      if (!want.empty() && want[0] != '/' && where.size() > want.size() &&
          where.compare(where.size() - want.size() - 1, std::string::npos, "/" + want) == 0)
        where = want;
      EXPECT_EQ(where, want);
    }
  }
}

// The same on 1000 addresses taken at random inside this program's functions (templates, lambdas,
// code of namespaces, classes and local classes): each address's chain of lines, innermost first,
// is addr2line's (the lines it does not know left out of both). Built by clang, llvm-symbolizer's
// in addr2line's style: binutils' addr2line (2.40) misses inline frames in clang's DWARF 5 that
// libdw and llvm-symbolizer both find. (Oracle lines without functions: a name such as "visit<(lambda
// at f.h:101:12)>" would read as line 12.)
TEST(Symbolizer, AgreesWithAddr2lineOnRandomAddressesOfThisProgram) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
#if defined(__clang__)
  const std::string tool = "llvm-symbolizer --output-style=GNU --functions=none";
#else
  const std::string tool = "addr2line";
#endif
  if (system((tool + " --version >/dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "no " << tool;
  std::vector<std::pair<GElf_Addr, GElf_Xword>> functions;
  {
    OwnDwfl own({{self.module.path, 0}});  // at bias 0: file addresses, what addr2line takes
    ASSERT_TRUE(own.dwfl && own.modules[0]);
    functions = functions_of(own.modules[0], 1);
  }
  ASSERT_GT(functions.size(), 1000u);
  std::mt19937_64 rng(11);
  std::vector<uint64_t> offsets;  // of the call's last byte, in the file: what addr2line takes
  std::string cmd = fmt::format("{} -a -i -e '{}'", tool, self.module.path);
  for (int k = 0; k < 1000; ++k) {
    const auto [start, size] = functions[rng() % functions.size()];
    offsets.push_back(start + rng() % size);
    cmd += fmt::format(" 0x{:x}", offsets.back());
  }
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::vector<std::vector<int>> theirs;  // per address, the known lines
  char buf[8192];
  while (fgets(buf, sizeof buf, p)) {
    std::string l = buf;
    if (l.rfind("0x", 0) == 0) {
      theirs.emplace_back();
      continue;
    }
    const size_t colon = l.rfind(':', l.find(" (discriminator"));
    if (theirs.empty() || colon == std::string::npos) continue;
    const int line = std::atoi(l.c_str() + colon + 1);
    if (line > 0) theirs.back().push_back(line);
  }
  pclose(p);
  ASSERT_EQ(theirs.size(), offsets.size()) << cmd.substr(0, 200);
  Symbolizer symbols({self.module});
  size_t known = 0;  // addresses with a line: not a comparison of nothing with nothing
  for (size_t k = 0; k < offsets.size(); ++k) {
    std::vector<int> ours;
    const std::vector<Frame>& frames = symbols.resolve(self.module.load_bias + offsets[k] + 1);
    for (const Frame& f : frames)
      if (f.line > 0) ours.push_back(f.line);
    known += !theirs[k].empty();
    std::string ours_text;
    for (const Frame& f : frames) ours_text += fmt::format("\n  {} at {}:{}", f.function, f.file, f.line);
    EXPECT_EQ(ours, theirs[k]) << fmt::format("0x{:x}", offsets[k]) << ours_text;
  }
  EXPECT_GE(known, 10u);  // (a Release build has line tables for the few files that need them: 5 %)
}

// A program without .debug_aranges (clang writes none by default; elfutils before 0.191 then maps
// no address to its unit): the same frames, from the units' own address ranges. This binary, copied
// without the section (skipped without binutils' objcopy).
TEST(Symbolizer, ProgramWithoutAddressRangeTableGetsTheSameFrames) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  if (system("objcopy --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no objcopy";
  const char* tmp = getenv("TMPDIR");
  std::string copy = fmt::format("{}/aw-symbolizer-noaranges-{}", tmp && *tmp ? tmp : "/tmp", getpid());
  struct Removed {
    std::string path;
    ~Removed() { unlink(path.c_str()); }
  } removed{copy};  // also when an assertion returns early
  std::string cmd = fmt::format("objcopy --remove-section=.debug_aranges '{}' '{}'", self.module.path, copy);
  ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
  std::string sections = fmt::format("readelf -S '{}' | grep -q debug_aranges", copy);
  EXPECT_NE(system(sections.c_str()), 0) << "the copy still has .debug_aranges";
  ModuleInfo stripped = self.module;
  stripped.path = copy;
  uint64_t site = user_function_calling_cuda(), nested = outer();
  Symbolizer with({self.module}), without({stripped});
  for (uint64_t ret : {site, nested}) {
    const std::vector<Frame>& want = with.resolve(ret);
    const std::vector<Frame>& got = without.resolve(ret);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].function, want[i].function);
      EXPECT_EQ(got[i].file, want[i].file);
      EXPECT_EQ(got[i].line, want[i].line);
      EXPECT_EQ(got[i].inlined, want[i].inlined);
    }
  }
  EXPECT_EQ(without.resolve(site).at(0).line, kCallSiteLine);
  EXPECT_EQ(without.resolve(nested).size(), 3u);
}

TEST(Symbolizer, MissingModulesAndStrayAddressesGiveUnknownFrames) {
  ModuleInfo gone;
  gone.path = "/nonexistent/libgone.so";
  gone.low = 0x1000;
  gone.high = 0x2000;
  Symbolizer symbols({gone});
  EXPECT_EQ(symbols.problems().size(), 0u);  // reported only once a frame falls in it
  const Frame& in_gone = symbols.resolve(0x1800).at(0);
  EXPECT_EQ(symbols.problems().size(), 1u);
  EXPECT_EQ(in_gone.module, "/nonexistent/libgone.so");
  EXPECT_TRUE(in_gone.function.empty());
  const Frame& nowhere = symbols.resolve(0xdead0000).at(0);
  EXPECT_TRUE(nowhere.module.empty());
  EXPECT_TRUE(symbols.resolve(0).at(0).function.empty());
}

#include <sys/stat.h>
#include <unistd.h>

// A trace is input: a module path that names a FIFO must not block the analysis (it did: libdwfl's
// open waited for a writer for ever), a directory or a device must not be read either.
TEST(Symbolizer, ModulesThatAreNotRegularFilesAreNotOpened) {
  std::string fifo = std::string(ASYNCWATCH_TEST_TMP) + "/module-fifo";
  mkdir(ASYNCWATCH_TEST_TMP, 0755);
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<ModuleInfo> mods;
  uint64_t base = 0x10000;
  for (const std::string& path : {fifo, std::string("/dev/null"), std::string("/tmp")}) {
    ModuleInfo m;
    m.path = path;
    m.low = base;
    m.high = base + 0x1000;
    mods.push_back(m);
    base += 0x10000;
  }
  Symbolizer symbols(mods);
  for (uint64_t a = 0x10800; a < base; a += 0x10000) EXPECT_TRUE(symbols.resolve(a).at(0).function.empty());
  ASSERT_EQ(symbols.problems().size(), 3u);
  for (const std::string& p : symbols.problems()) EXPECT_NE(p.find("not a regular file"), std::string::npos) << p;
  unlink(fifo.c_str());
}

TEST(Symbolizer, DifferentBuildIdIsNotUsed) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  self.module.build_id.assign(20, 0xab);
  Symbolizer symbols({self.module});
  uint64_t ret = user_function_calling_cuda();
  EXPECT_TRUE(symbols.resolve(ret).at(0).function.empty());
  EXPECT_TRUE(symbols.resolve(ret).at(0).file.empty());
  ASSERT_EQ(symbols.problems().size(), 1u);
  EXPECT_NE(symbols.problems()[0].find("build id"), std::string::npos);
}

TEST(Symbolizer, Demangles) {
  EXPECT_EQ(demangle("_Z5dummyv"), "dummy()");
  EXPECT_EQ(demangle("main"), "main");
}

TEST(Symbolizer, PseudoModulesAreSkippedSilently) {
  std::vector<ModuleInfo> mods;
  uint64_t base = 0x10000;
  for (const char* path : {"linux-vdso.so.1", "[vdso]", "[vsyscall]", "/proc/self/[vdso]", "linux-gate.so.1"}) {
    ModuleInfo m;
    m.path = path;
    m.low = base;
    m.high = base + 0x1000;
    m.build_id.assign(20, 0x11);
    mods.push_back(m);
    base += 0x10000;
  }
  Symbolizer symbols(mods);
  for (uint64_t a = 0x10800; a < base; a += 0x10000) EXPECT_EQ(symbols.resolve(a).at(0).module.empty(), false);
  EXPECT_TRUE(symbols.problems().empty()) << symbols.problems()[0];
  EXPECT_TRUE(is_pseudo_module("linux-vdso.so.1"));
  EXPECT_TRUE(is_pseudo_module("[vsyscall]"));
  EXPECT_FALSE(is_pseudo_module("/usr/lib/libvdsoish.so"));
  EXPECT_FALSE(is_pseudo_module("/work/app"));
}

TEST(Symbolizer, NoSymbolsReadsNoModule) {
  Found self;
  dl_iterate_phdr(find_self, &self);
  ASSERT_TRUE(self.ok);
  Symbolizer symbols({self.module}, false);
  uint64_t ret = user_function_calling_cuda();
  const Frame& f = symbols.resolve(ret).at(0);
  EXPECT_TRUE(f.function.empty());
  EXPECT_EQ(f.module, self.module.path);
  EXPECT_TRUE(symbols.problems().empty());
}

TEST(Symbolizer, PathMappings) {
  PathMapping m;
  std::string error;
  ASSERT_TRUE(parse_path_mapping("/root/corpus/bin/=/work/corpus/bin", &m, &error));
  EXPECT_EQ(m.from, "/root/corpus/bin");
  EXPECT_EQ(m.to, "/work/corpus/bin");
  EXPECT_EQ(map_module_path("/root/corpus/bin/app.O2", {m}), "/work/corpus/bin/app.O2");
  EXPECT_EQ(map_module_path("/root/corpus/binaries/app", {m}), "/root/corpus/binaries/app");  // whole components
  EXPECT_EQ(map_module_path("/usr/lib/libc.so.6", {m}), "/usr/lib/libc.so.6");
  for (const char* bad : {"", "=", "/a=", "=/b", "no-equals"}) EXPECT_FALSE(parse_path_mapping(bad, &m, &error)) << bad;
  EXPECT_NE(error.find("FROM=TO"), std::string::npos);
}

TEST(Symbolizer, SymbolNamesWithoutCloneSuffixes) {
  EXPECT_EQ(symbol_function_name("main.cold"), "main");
  EXPECT_EQ(symbol_function_name("_Z3foov.cold"), "foo()");
  EXPECT_EQ(symbol_function_name("helper.part.0"), "helper");
  EXPECT_EQ(symbol_function_name("_ZN12_GLOBAL__N_13barEi"), "(anonymous namespace)::bar(int)");
}
