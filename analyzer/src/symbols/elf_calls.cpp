#include "symbols/elf_calls.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>

namespace asyncwatch {

namespace {
int32_t rel32(const uint8_t* p) {
  uint32_t v = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  int32_t s;
  std::memcpy(&s, &v, sizeof s);
  return s;
}
}  // namespace

ElfCalls::ElfCalls(Elf* elf) : elf_(elf) {
  GElf_Ehdr eh;
  if (!elf_ || !gelf_getehdr(elf_, &eh) || eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64) return;
  x86_64_ = true;
  size_t nph = 0;
  if (elf_getphdrnum(elf_, &nph) == 0)
    for (size_t i = 0; i < nph; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf_, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        segments_.push_back(Segment{ph.p_vaddr, ph.p_offset, ph.p_filesz});
    }
}

void ElfCalls::read_plt_and_slots() {
  slots_read_ = true;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf_, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf_, shstrndx, sh.sh_name);
    if (name && (!std::strcmp(name, ".plt") || !std::strcmp(name, ".plt.sec") || !std::strcmp(name, ".plt.got")))
      plt_.emplace_back(sh.sh_addr, sh.sh_addr + sh.sh_size);
    if (sh.sh_type != SHT_RELA) continue;
    // Dynamic relocations that fill a GOT slot with a symbol's address: the slots that the PLT
    // stubs (JUMP_SLOT) and -fno-plt calls (GLOB_DAT, or JUMP_SLOT with -z now) jump through.
    Elf_Scn* symscn = elf_getscn(elf_, sh.sh_link);
    GElf_Shdr symsh;
    Elf_Data* rela = elf_getdata(scn, nullptr);
    Elf_Data* syms = symscn ? elf_getdata(symscn, nullptr) : nullptr;
    if (!rela || !syms || !gelf_getshdr(symscn, &symsh) || sh.sh_entsize == 0) continue;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Rela r;
      GElf_Sym sym;
      if (!gelf_getrela(rela, static_cast<int>(i), &r)) break;
      uint64_t type = GELF_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      if (!gelf_getsym(syms, static_cast<int>(GELF_R_SYM(r.r_info)), &sym)) continue;
      const char* s = elf_strptr(elf_, symsh.sh_link, sym.st_name);
      if (s && *s) slots_.emplace(r.r_offset, s);
    }
  }
}

bool ElfCalls::read(uint64_t vaddr, uint8_t* out, size_t n) const {
  for (const Segment& s : segments_) {
    if (vaddr < s.vaddr || vaddr - s.vaddr > s.filesz || s.filesz - (vaddr - s.vaddr) < n) continue;
    Elf_Data* d = elf_getdata_rawchunk(elf_, static_cast<int64_t>(s.offset + (vaddr - s.vaddr)), n, ELF_T_BYTE);
    if (!d || !d->d_buf || d->d_size < n) return false;
    std::memcpy(out, d->d_buf, n);
    return true;
  }
  return false;
}

bool ElfCalls::in_plt(uint64_t vaddr) const {
  for (const auto& [begin, end] : plt_)
    if (vaddr >= begin && vaddr < end) return true;
  return false;
}

std::string ElfCalls::slot_symbol(uint64_t slot) const {
  auto it = slots_.find(slot);
  return it == slots_.end() ? std::string() : it->second;
}

CallTarget ElfCalls::call_before(uint64_t return_vaddr) {
  CallTarget t;
  if (x86_64_ && !slots_read_) read_plt_and_slots();
  uint8_t b[6];
  if (!x86_64_ || return_vaddr < sizeof b || !read(return_vaddr - sizeof b, b, sizeof b)) return t;
  if (b[0] == 0xff && b[1] == 0x15) {  // call *disp32(%rip): rip is the return address
    t.symbol = slot_symbol(return_vaddr + static_cast<uint64_t>(int64_t{rel32(b + 2)}));
    if (!t.symbol.empty()) t.kind = CallTarget::Imported;
    return t;
  }
  if (b[1] != 0xe8) return t;
  const uint64_t target = return_vaddr + static_cast<uint64_t>(int64_t{rel32(b + 2)});
  if (!in_plt(target)) {
    // A function of this module; the caller checks that a function starts there (these bytes
    // could be the tail of another instruction).
    t.kind = CallTarget::Local;
    t.address = target;
    return t;
  }
  // The stub: [endbr64] [bnd] jmp *disp32(%rip)
  uint8_t s[11];
  if (!read(target, s, sizeof s)) return t;
  size_t at = 0;
  if (s[0] == 0xf3 && s[1] == 0x0f && s[2] == 0x1e && s[3] == 0xfa) at = 4;
  if (s[at] == 0xf2) ++at;
  if (s[at] != 0xff || s[at + 1] != 0x25) return t;
  t.symbol = slot_symbol(target + at + 6 + static_cast<uint64_t>(int64_t{rel32(s + at + 2)}));
  if (!t.symbol.empty()) t.kind = CallTarget::Imported;
  return t;
}

uint64_t ElfCalls::defined_function(const std::string& symbol) {
  if (!exports_read_) {
    exports_read_ = true;
    for (Elf_Scn* scn = nullptr; elf_ && (scn = elf_nextscn(elf_, scn)) != nullptr;) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0) continue;
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (!d) continue;
      for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(d, static_cast<int>(i), &sym)) break;
        int type = GELF_ST_TYPE(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
        if (const char* s = elf_strptr(elf_, sh.sh_link, sym.st_name))
          if (*s) exports_.emplace(s, sym.st_value);
      }
    }
  }
  auto it = exports_.find(symbol);
  return it == exports_.end() ? 0 : it->second;
}

}  // namespace asyncwatch
