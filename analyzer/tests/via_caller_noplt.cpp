// The user's call of the library compiled with -fno-plt: `call *aw_vendor_exec_r2c@GOTPCREL(%rip)`.
#include "via_fixtures.h"

const int kNoPltCallLine = __LINE__ + 3;
__attribute__((noinline)) int call_vendor_without_plt(aw_copy_fn copy, void* dst, size_t n) {
  asm volatile("" ::: "memory");
  int rc = aw_vendor_exec_r2c(copy, dst, n);  // the call site
  asm volatile("" : "+r"(rc));
  return rc;
}
