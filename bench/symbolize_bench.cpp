// What symbolizing costs the report: the time of the analyzer's Symbolizer (the report's own code)
// per distinct return address, inline frames expanded, over addresses picked at random inside the
// functions of a binary's symbol table (as if the binary were loaded at a fixed base). Prints the
// addresses, the compilation units they fall in, the time per address and how many got file, line
// and inline frames. Asserts nothing about time.
//   asyncwatch_symbolize_bench BINARY [--addresses N (2000)] [--seed S (1)] [--print]
// --print: also each address (as an offset in BINARY, of the call's last byte: what addr2line takes)
// and its frames, innermost first, one line each: "  function at file:line".
#include "symbols/symbolizer.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace asyncwatch;

namespace {

struct Function {
  uint64_t start, size;
};

// The functions of BINARY's symbol table (defined, sized), and the span of its loadable segments.
bool read_functions(const char* path, std::vector<Function>* out, uint64_t* low, uint64_t* high, bool* pie) {
  elf_version(EV_CURRENT);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  bool ok = elf && gelf_getehdr(elf, &eh);
  if (ok) {
    *pie = eh.e_type == ET_DYN;
    size_t n = 0;
    elf_getphdrnum(elf, &n);
    *low = UINT64_MAX, *high = 0;
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        *low = std::min<uint64_t>(*low, ph.p_vaddr);
        *high = std::max<uint64_t>(*high, ph.p_vaddr + ph.p_memsz);
      }
    }
    // The symbol table, else (a stripped library) the dynamic one.
    bool has_symtab = false;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;)
      if (GElf_Shdr sh; gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) has_symtab = true;
    const Elf64_Word table = has_symtab ? SHT_SYMTAB : SHT_DYNSYM;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != table) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
            sym.st_shndx != SHN_UNDEF && sym.st_size > 1 && sym.st_value != 0)
          out->push_back({sym.st_value, sym.st_size});
      }
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return ok && !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  const char* binary = nullptr;
  size_t count = 2000;
  uint64_t seed = 1;
  bool print = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--addresses") && i + 1 < argc)
      count = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--print"))
      print = true;
    else if (argv[i][0] != '-' && !binary)
      binary = argv[i];
    else {
      std::fprintf(stderr, "usage: asyncwatch_symbolize_bench BINARY [--addresses N] [--seed S] [--print]\n");
      return 2;
    }
  }
  if (!binary || count == 0) {
    std::fprintf(stderr, "usage: asyncwatch_symbolize_bench BINARY [--addresses N] [--seed S] [--print]\n");
    return 2;
  }
  std::vector<Function> functions;
  uint64_t low = 0, high = 0;
  bool pie = false;
  if (!read_functions(binary, &functions, &low, &high, &pie)) {
    std::fprintf(stderr, "asyncwatch_symbolize_bench: %s: no ELF file with a symbol table of functions\n", binary);
    return 2;
  }
  char real[4096];
  if (!realpath(binary, real)) return 2;
  ModuleInfo m;
  m.path = real;
  m.load_bias = pie ? 0x555555554000ull : 0;  // where a PIE usually lands
  m.low = m.load_bias + low;
  m.high = m.load_bias + high;
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> addresses;
  for (size_t i = 0; i < count; ++i) {
    const Function& f = functions[rng() % functions.size()];
    addresses.push_back(m.load_bias + f.start + 1 + rng() % (f.size - 1));  // resolve() looks at the byte before
  }
  Symbolizer symbols({m});
  size_t with_line = 0, with_inline = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t a : addresses) {
    const std::vector<Frame>& frames = symbols.resolve(a);
    with_line += frames.front().line > 0;
    with_inline += frames.front().inlined;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (print)
    for (uint64_t a : addresses) {
      std::printf("0x%llx\n", static_cast<unsigned long long>(a - 1 - m.load_bias));
      for (const Frame& f : symbols.resolve(a))
        std::printf("  %s at %s:%d\n", f.function.c_str(), f.file.empty() ? "??" : f.file.c_str(), f.line);
    }
  std::printf(
      "binary=%s functions=%zu addresses=%zu seconds=%.3f us_per_address=%.1f with_line=%zu with_inline_frames=%zu\n",
      real, functions.size(), addresses.size(), s, 1e6 * s / static_cast<double>(addresses.size()), with_line,
      with_inline);
  return 0;
}
