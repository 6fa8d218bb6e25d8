// The exported wrappers' first instructions, on x86-64 (hook_entry.h): one stub in assembly per row
// of the driver table (hook_table.h) and of the runtime table (runtime_hook_table.h), each
//
//   sym:  testb $kDisabled, aw_not_recording(%rip)   # ASYNCWATCH_DISABLE=1?
//         jnz   2f
//   1:    jmp   aw_entry_<sym>                         # no: the C++ entry, traced
//   2:    movq  <the real function's slot>(%rip), %rax
//         testq %rax, %rax                             # not known yet: the entry finds it
//         jz    1b
//         jmp   *%rax                                  # yes: the real function, nothing else touched
//
// Six instructions on the disabled path, three before the entry on the traced one. Only jumps: the
// real function and the entry see the application's registers, stack arguments and return address
// as the application left them (GCC's tail calls with stack arguments reload and store each of
// them). %rax holds nothing on entry to a function without variable arguments (none here).
// Compiled without LTO (preload/CMakeLists.txt): the link then sees the stubs' references to the
// entries and the tables, which stay global, hidden and named as here. The slot of row i is 8 * i
// bytes into its table (the tables' order, counted by the assembler: aw_stub_row).
#include <atomic>
#include <cstdint>

#include "hook_table.h"
#include "runtime_hook_table.h"
#include "trace/trace_writer.h"

#if defined(__x86_64__)

static_assert(asyncwatch::trace_writer::kDisabled == 4, "the stubs test $4");
static_assert(sizeof(std::atomic<uint32_t>) == 4 && sizeof(std::atomic<void*>) == 8, "the stubs' loads");

// One stub: `sym`, its real function at `table` + 8 * aw_stub_row.
// clang-format off
#define AW_STUB(sym, table)                                 \
  ".globl " #sym "\n"                                       \
  ".type " #sym ", @function\n"                             \
  ".hidden aw_entry_" #sym "\n"                             \
  ".globl aw_stub_" #sym "\n"                               \
  ".hidden aw_stub_" #sym "\n"                              \
  ".type aw_stub_" #sym ", @function\n"                     \
  ".p2align 4\n" #sym ":\n"                                 \
  "aw_stub_" #sym ":\n"                                     \
  ".cfi_startproc\n"                                        \
  "  testb $4, aw_not_recording(%rip)\n"                    \
  "  jnz 2f\n"                                              \
  "1:\n"                                                    \
  "  jmp aw_entry_" #sym "\n"                               \
  "2:\n"                                                    \
  "  movq " table "+8*aw_stub_row(%rip), %rax\n"            \
  "  testq %rax, %rax\n"                                    \
  "  jz 1b\n"                                               \
  "  jmp *%rax\n"                                           \
  ".cfi_endproc\n"                                          \
  ".size " #sym ", .-" #sym "\n"                            \
  ".size aw_stub_" #sym ", .-" #sym "\n"                    \
  ".set aw_stub_row, aw_stub_row + 1\n"
// clang-format on
#define AW_DRIVER_STUB(sym, api, pt)                         AW_STUB(sym, "aw_driver_real")
#define AW_RUNTIME_STUB(sym, api, cat, pt, params, args, fb) AW_STUB(sym, "aw_runtime_instances")

// aw_driver_real: real::g_real (real_functions.h); aw_runtime_instances: runtime instance 0's
// functions (runtime_hooks.cpp); aw_not_recording: trace_writer::g_not_recording.
__asm__(
    ".pushsection .text.asyncwatch_stubs, \"ax\", @progbits\n"
    ".hidden aw_not_recording\n"
    ".hidden aw_driver_real\n"
    ".hidden aw_runtime_instances\n"
    ".set aw_stub_row, 0\n" AW_DRIVER_HOOKS(AW_DRIVER_STUB) ".set aw_stub_row, 0\n" AW_RUNTIME_HOOKS(
        AW_RUNTIME_STUB) ".popsection\n");

#endif
