// LD_PRELOAD shim of the exit-5 test (test_untrusted_input.cpp, DebugInfoOutOfMemory): every malloc
// that libdw makes for one of its memory blocks (a page less four pointers, libdw_alloc.c) returns
// NULL, as when memory runs out while libdw reads a module's debug information; libdw then calls
// its out-of-memory handler. Other allocations, libdw's others included, are left alone.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t n);

static int from_libdw(const void* ret) {
  Dl_info info;
  return dladdr(ret, &info) && info.dli_fname && strstr(info.dli_fname, "libdw");
}

void* malloc(size_t n) {
  if (n == (size_t)sysconf(_SC_PAGESIZE) - 4 * sizeof(void*) && from_libdw(__builtin_return_address(0))) return NULL;
  return __libc_malloc(n);
}
