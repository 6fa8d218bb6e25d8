// Functions that tail-call onwards (test_end_to_end.cpp, "via" of a call made inside a library):
// in a shared library without debug information (via_vendor_lib.cpp, called through the PLT and,
// from via_caller_noplt.cpp, through the GOT) and inside the executable (via_local_lib.cpp).
#pragma once

#include <cstddef>

extern "C" {
typedef int (*aw_copy_fn)(void* dst, const void* src, size_t n, int kind, void* stream);
// aw_vendor_exec_c2c and _r2c jump to aw_vendor_exec, which calls `copy`. The test executable
// calls _c2c through the PLT only (a .plt.sec stub, JUMP_SLOT), _r2c through the GOT (-fno-plt:
// GLOB_DAT) and through the PLT (then a .plt.got stub, as the slot has no JUMP_SLOT).
int aw_vendor_exec(aw_copy_fn copy, void* dst, size_t n);
int aw_vendor_exec_c2c(aw_copy_fn copy, void* dst, size_t n);
int aw_vendor_exec_r2c(aw_copy_fn copy, void* dst, size_t n);
int aw_local_exec(aw_copy_fn copy, void* dst, size_t n);
int aw_local_exec_c2c(aw_copy_fn copy, void* dst, size_t n);
}

extern const int kNoPltCallLine;
int call_vendor_without_plt(aw_copy_fn copy, void* dst, size_t n);
