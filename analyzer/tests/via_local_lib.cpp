// The same tail call inside the executable itself (linked in statically, -O2, with line tables):
// made library code by --user-code '!*via_local_lib.cpp' in the test, it is reached by a direct
// call of a function of the same module.
#include "via_fixtures.h"

extern "C" {

__attribute__((noinline)) int aw_local_exec(aw_copy_fn copy, void* dst, size_t n) {
  int rc = copy(dst, nullptr, n, 2, nullptr);
  asm volatile("" : "+r"(rc));
  return rc;
}

__attribute__((noinline)) int aw_local_exec_c2c(aw_copy_fn copy, void* dst, size_t n) {
  return aw_local_exec(copy, dst, n);
}

}  // extern "C"
