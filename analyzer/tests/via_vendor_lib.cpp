// A vendor library in miniature, built at -O2 without debug information (library code by the
// call-site rules): an exported function that tail-calls (jmp) another exported one, as
// cufftExecC2C jumps to cufftXtExec, so that only the second has a frame on the stack.
#include "via_fixtures.h"

extern "C" {

__attribute__((noinline)) int aw_vendor_exec(aw_copy_fn copy, void* dst, size_t n) {
  int rc = copy(dst, nullptr, n, 2, nullptr);
  asm volatile("" : "+r"(rc));  // work after the call: this frame stays on the stack
  return rc;
}

int aw_vendor_exec_c2c(aw_copy_fn copy, void* dst, size_t n) { return aw_vendor_exec(copy, dst, n); }
int aw_vendor_exec_r2c(aw_copy_fn copy, void* dst, size_t n) { return aw_vendor_exec(copy, dst, n); }

}  // extern "C"
