// LD_PRELOAD shim of the exit-5 test (test_untrusted_input.cpp, DebugInfoOutOfMemory): every malloc
// of libdw's memory-block size (a page less four pointers: libdw_alloc.c's mem_default_size)
// returns NULL, as when memory runs out while libdw reads a module's debug information; libdw then
// calls its out-of-memory handler. Told apart by size alone: libdw is linked into the command
// statically, so the caller's object does not say it (a report of the crafted trace makes no
// other allocation of that size; if one came first, the test would fail, not pass).
#include <stddef.h>
#include <unistd.h>

extern void* __libc_malloc(size_t n);

void* malloc(size_t n) {
  if (n == (size_t)sysconf(_SC_PAGESIZE) - 4 * sizeof(void*)) return NULL;
  return __libc_malloc(n);
}
