// What a call instruction of an x86-64 module called, read from the module's file (never from a
// trace): the function the user's code called when that function tail-called onwards (`jmp`) and
// left no frame of its own on the stack (cufftExecC2C jumps to cufftXtExec). Decoded forms:
//   E8 rel32 (call, also after a bnd/notrack prefix) to a PLT stub (.plt, .plt.sec, .plt.got, with
//            or without IBT's `endbr64` and MPX's `bnd`): the stub's `jmp *slot(%rip)` slot, named
//            by its JUMP_SLOT/GLOB_DAT relocation's symbol;
//   E8 rel32 to a function of the same module: that function (by address);
//   FF 15 disp32 (`call *slot(%rip)`, -fno-plt): the GOT slot's JUMP_SLOT/GLOB_DAT symbol.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

typedef struct Elf Elf;

namespace asyncwatch {

struct CallTarget {
  enum Kind { None, Imported, Local };
  Kind kind = None;
  std::string symbol;    // Imported: the relocation's symbol name, as in the dynamic symbol table
  uint64_t address = 0;  // Local: the called function's address (ELF virtual address)
};

class ElfCalls {
 public:
  // `elf` stays owned by the caller and must outlive this object. Nothing is decoded for an ELF
  // file that is not x86-64.
  explicit ElfCalls(Elf* elf);

  // The call instruction that ends at `return_vaddr` (an ELF virtual address of this module). The
  // PLT sections and the GOT relocations are read on first use.
  CallTarget call_before(uint64_t return_vaddr);
  // The address of the function `symbol` that this module defines (its dynamic symbol table),
  // or 0 when it defines none by that name. The table is read on first use.
  uint64_t defined_function(const std::string& symbol);

 private:
  void read_plt_and_slots();
  bool read(uint64_t vaddr, uint8_t* out, size_t n) const;
  std::string slot_symbol(uint64_t slot) const;
  bool in_plt(uint64_t vaddr) const;

  Elf* elf_ = nullptr;
  bool x86_64_ = false;
  struct Segment {
    uint64_t vaddr, offset, filesz;
  };
  std::vector<Segment> segments_;  // PT_LOAD
  bool slots_read_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> plt_;   // [begin, end) of .plt, .plt.sec, .plt.got
  std::unordered_map<uint64_t, std::string> slots_;  // GOT slot -> JUMP_SLOT/GLOB_DAT symbol
  bool exports_read_ = false;
  std::unordered_map<std::string, uint64_t> exports_;  // defined dynamic function symbols
};

}  // namespace asyncwatch
