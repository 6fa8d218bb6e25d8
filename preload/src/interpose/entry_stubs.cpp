// The exported wrappers' first instructions, on x86-64 (hook_entry.h): one stub in assembly per row
// of the driver table (hook_table.h) and of the runtime table (runtime_hook_table.h). A driver stub:
//
//   sym:  testb $kDisabled, aw_not_recording(%rip)    # ASYNCWATCH_DISABLE=1?
//         jnz   3f
//         <called_in_runtime (hook_entry.h): phase 2, a runtime outer wrapper, the return address
//          in that runtime instance's object>
//         jnz   1f                                    # no
//         jmp   aw_inrt_<sym>                         # yes: the short body
//   1:    jmp   aw_traced_<sym>                       # every other way in
//   3:    movq  <the real function's slot>(%rip), %rax
//         testq %rax, %rax                            # not known yet: the body finds it
//         jz    1b
//         jmp   *%rax                                 # the real function, nothing else touched
//
// and a runtime stub the same with `phase == 0 && the trace recording in place` (AW_RT_EXPORTED_ENTRY,
// runtime_hooks.cpp) choosing `aw_app_<sym>`. Six instructions on the disabled path; 8 (runtime)
// and 16 (driver) before the common case's body. The query stubs (cuEventQuery, cuStreamQuery[_ptsz])
// also jump to the real function under a passive runtime outer (AW_DRIVER_STUB below). Only jumps: the real function and the bodies see
// the application's registers, stack arguments and return address as the application left them.
// Scratch: %rax (nothing on entry to a function without variable arguments: none here), %r10 and
// %r11 (no argument of a C function). Compiled without LTO (preload/CMakeLists.txt): the link then
// sees the stubs' references to the bodies, the tables and the thread's state, which stay global,
// hidden and named as here. The slot of row i is 8 * i bytes into its table (the tables' order,
// counted by the assembler: aw_stub_row).
#include <atomic>
#include <cstdint>

#include "hook_table.h"
#include "runtime_hook_table.h"
#include "trace/trace_writer.h"

#if defined(__x86_64__)

#include <cstddef>

#include "call_context.h"
#include "hook_entry.h"
#include "runtime_hooks.h"

namespace {
using asyncwatch::calls::ThreadCallState;
using asyncwatch::runtime_hooks::TextRange;
static_assert(asyncwatch::trace_writer::kDisabled == 4, "the stubs test $4");
static_assert(sizeof(std::atomic<uint32_t>) == 4 && sizeof(std::atomic<void*>) == 8, "the stubs' loads");
// ThreadCallState is not standard-layout (its record union), but GCC lays it out as written.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(asyncwatch::calls::ThreadLocals, call) == 0 && offsetof(ThreadCallState, phase) == 0 &&
                  sizeof(ThreadCallState::phase) == 4 && offsetof(ThreadCallState, outer) == 4 &&
                  offsetof(ThreadCallState, rt_instance) == 5,
              "the driver stubs' called_in_runtime: phase at 0, outer at 4, rt_instance at 5");
#pragma GCC diagnostic pop
static_assert(asyncwatch::calls::kOuterRuntime == 2 && asyncwatch::calls::kOuterRuntimePassive == 3,
              "the driver stubs compare outer with $2 (and the query stubs with $3)");
static_assert(asyncwatch::calls::kPhaseInReal == 2 && asyncwatch::calls::kPhaseApplication == 0,
              "the driver stubs compare phase with $2 (kPhaseInReal), the runtime stubs with $0");
static_assert(sizeof(TextRange) == 16 && offsetof(TextRange, lo) == 0 && offsetof(TextRange, len) == 8 &&
                  asyncwatch::runtime_hooks::kRtInstances == 4,
              "the driver stubs index aw_rt_text by (rt_instance & 3) * 16");
}  // namespace

// The symbol `sym` and its hidden alias aw_stub_<sym> (what the library's own pointers name).
// clang-format off
#define AW_STUB_BEGIN(sym)                                  \
  ".globl " #sym "\n"                                       \
  ".type " #sym ", @function\n"                             \
  ".globl aw_stub_" #sym "\n"                               \
  ".hidden aw_stub_" #sym "\n"                              \
  ".type aw_stub_" #sym ", @function\n"                     \
  ".hidden aw_traced_" #sym "\n"                            \
  ".p2align 4\n" #sym ":\n"                                 \
  "aw_stub_" #sym ":\n"                                     \
  ".cfi_startproc\n"                                        \
  "  testb $4, aw_not_recording(%rip)\n"                    \
  "  jnz 3f\n"
// The disabled path's end: the real function from `table` + 8 * aw_stub_row, else the full body.
#define AW_STUB_END(sym, table)                             \
  "1:\n"                                                    \
  "  jmp aw_traced_" #sym "\n"                              \
  "3:\n"                                                    \
  "  movq " table "+8*aw_stub_row(%rip), %rax\n"            \
  "  testq %rax, %rax\n"                                    \
  "  jz 1b\n"                                               \
  "  jmp *%rax\n"                                           \
  ".cfi_endproc\n"                                          \
  ".size " #sym ", .-" #sym "\n"                            \
  ".size aw_stub_" #sym ", .-" #sym "\n"                    \
  ".set aw_stub_row, aw_stub_row + 1\n"
// called_in_runtime (hook_entry.h): phase == 2, outer == kOuterRuntime, and the return address
// within [lo, lo + len) of aw_rt_text[rt_instance & 3].
#define AW_IN_RUNTIME_TEXT                                  \
  "  movzbl %fs:5(%rax), %eax\n"                            \
  "  andl $3, %eax\n"                                       \
  "  shll $4, %eax\n"                                       \
  "  leaq aw_rt_text(%rip), %r11\n"                         \
  "  movq (%rsp), %r10\n"                                   \
  "  subq (%r11,%rax), %r10\n"                              \
  "  cmpq 8(%r11,%rax), %r10\n"                             \
  "  jae 1f\n"
// A query's stub (the rows whose Api is cuEventQuery or cuStreamQuery: aw_q, set by the assembler
// from the row) also takes the passive runtime outer (phase 2, outer kOuterRuntimePassive: a runtime
// query on the folding path, query_fold.h, or a runtime call while not recording), from that runtime
// instance's object, straight to the real function: what the full body does then (the call passes
// through, classify_nested), without it. A polling loop through the shared runtime pays this stub
// instead of a second body per query.
#define AW_DRIVER_STUB(sym, api, ...)                       \
  AW_STUB_BEGIN(sym)                                        \
  ".hidden aw_inrt_" #sym "\n"                              \
  ".set aw_q, 0\n"                                          \
  ".ifc " #api ",cuEventQuery\n"                            \
  ".set aw_q, 1\n"                                          \
  ".endif\n"                                                \
  ".ifc " #api ",cuStreamQuery\n"                           \
  ".set aw_q, 1\n"                                          \
  ".endif\n"                                                \
  "  movq aw_tl_call_state@gottpoff(%rip), %rax\n"          \
  "  cmpl $2, %fs:(%rax)\n"                                 \
  "  jne 1f\n"                                              \
  ".if aw_q\n"                                              \
  "  cmpb $3, %fs:4(%rax)\n"                                \
  "  je 5f\n"                                               \
  ".endif\n"                                                \
  "  cmpb $2, %fs:4(%rax)\n"                                \
  "  jne 1f\n"                                              \
  AW_IN_RUNTIME_TEXT                                        \
  "  jmp aw_inrt_" #sym "\n"                                \
  ".if aw_q\n"                                              \
  "5:\n"                                                    \
  AW_IN_RUNTIME_TEXT                                        \
  "  jmp 3f\n"                                              \
  ".endif\n"                                                \
  AW_STUB_END(sym, "aw_driver_real")
// AW_RT_EXPORTED_ENTRY's test (runtime_hooks.cpp): phase == 0 and aw_not_recording == 0.
#define AW_RUNTIME_STUB(sym, api, cat, pt, params, args, fb) \
  AW_STUB_BEGIN(sym)                                         \
  ".hidden aw_app_" #sym "\n"                                \
  "  cmpl $0, aw_not_recording(%rip)\n"                      \
  "  jne 1f\n"                                               \
  "  movq aw_tl_call_state@gottpoff(%rip), %rax\n"           \
  "  cmpl $0, %fs:(%rax)\n"                                  \
  "  jne 1f\n"                                               \
  "  jmp aw_app_" #sym "\n"                                  \
  AW_STUB_END(sym, "aw_runtime_instances")
// A prefilled driver wrapper's in-runtime target (hook_entry.h, AW_PREFILLED_DRIVER_HOOKS): the six
// argument registers pushed (%rdi lowest: calls::StubArgs, with the caller's return address and
// stack arguments above them), the stack aligned, aw_prefill_<sym>(that area) called, the
// registers restored and its result jumped to: the real function or aw_inrt_full_<sym>, which see
// the arguments and return address as the stub got them. %rax, %r10, %r11: as in the stubs.
#define AW_PREFILL_SHIM(sym)                                \
  ".globl aw_inrt_" #sym "\n"                               \
  ".hidden aw_inrt_" #sym "\n"                              \
  ".hidden aw_prefill_" #sym "\n"                           \
  ".type aw_inrt_" #sym ", @function\n"                     \
  ".p2align 4\n"                                            \
  "aw_inrt_" #sym ":\n"                                     \
  ".cfi_startproc\n"                                        \
  "  pushq %r9\n"                                           \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  pushq %r8\n"                                           \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  pushq %rcx\n"                                          \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  pushq %rdx\n"                                          \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  pushq %rsi\n"                                          \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  pushq %rdi\n"                                          \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  movq %rsp, %rdi\n"                                     \
  "  subq $8, %rsp\n"                                       \
  "  .cfi_adjust_cfa_offset 8\n"                            \
  "  call aw_prefill_" #sym "\n"                            \
  "  addq $8, %rsp\n"                                       \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %rdi\n"                                           \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %rsi\n"                                           \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %rdx\n"                                           \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %rcx\n"                                           \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %r8\n"                                            \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  popq %r9\n"                                            \
  "  .cfi_adjust_cfa_offset -8\n"                           \
  "  jmp *%rax\n"                                           \
  ".cfi_endproc\n"                                          \
  ".size aw_inrt_" #sym ", .-aw_inrt_" #sym "\n"
static_assert(sizeof(asyncwatch::calls::StubArgs::reg) == 48 && offsetof(asyncwatch::calls::StubArgs, ra) == 48 &&
                  offsetof(asyncwatch::calls::StubArgs, stack) == 56,
              "the shim's save area");
// clang-format on

// aw_driver_real: real::g_real (real_functions.h); aw_runtime_instances: runtime instance 0's
// functions (runtime_hooks.cpp); aw_not_recording: trace_writer::g_not_recording; aw_tl_call_state:
// calls::tl_locals (thread_state.h); aw_rt_text: runtime_hooks::g_rt_text (runtime_hooks.h).
__asm__(
    ".pushsection .text.asyncwatch_stubs, \"ax\", @progbits\n"
    ".hidden aw_not_recording\n"
    ".hidden aw_driver_real\n"
    ".hidden aw_runtime_instances\n"
    ".hidden aw_tl_call_state\n"
    ".hidden aw_rt_text\n"
    ".set aw_stub_row, 0\n" AW_DRIVER_HOOKS(AW_DRIVER_STUB) ".set aw_stub_row, 0\n" AW_RUNTIME_HOOKS(AW_RUNTIME_STUB)
        AW_PREFILLED_DRIVER_HOOKS(AW_PREFILL_SHIM) ".popsection\n");

#endif
