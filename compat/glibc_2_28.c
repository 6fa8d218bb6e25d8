// What lets the asyncwatch command and the preload library load on glibc 2.28 (RHEL 8) although
// they are built on a newer glibc (docs/contracts.md, "What the binaries need"). Compiled once for
// each (AW_GLIBC_2_28_PRELOAD defined for the preload library) and linked with the -Wl,--wrap
// options of cmake/AsyncwatchGlibc228.cmake.
#include <stddef.h>

// Each AW_PIN of glibc_2_28_pins.h: __wrap_NAME jumps to NAME@VERSION (.symver binds the local
// name aw_pinned_NAME to that version of the library's symbol), for the lines of this binary. The
// preload library jumps through the GOT entry, bound when it loads like all its calls (-fno-plt):
// no lazy binding at a first call from a signal handler.
#ifdef AW_GLIBC_2_28_PRELOAD
#define AW_PIN_JUMP(name) "  jmp *aw_pinned_" #name "@GOTPCREL(%rip)\n"
#else
#define AW_PIN_JUMP(name) "  jmp aw_pinned_" #name "@PLT\n"
#endif
// clang-format off
#define AW_PIN_TRAMPOLINE(name, version)                 \
  __asm__(".text\n"                                      \
          ".globl __wrap_" #name "\n"                    \
          ".hidden __wrap_" #name "\n"                   \
          ".type __wrap_" #name ", @function\n"          \
          "__wrap_" #name ":\n"                          \
          AW_PIN_JUMP(name)                              \
          ".size __wrap_" #name ", .-__wrap_" #name "\n" \
          ".symver aw_pinned_" #name ", " #name "@" version "\n");
// clang-format on
#define AW_PIN_BOTH AW_PIN_TRAMPOLINE
#ifdef AW_GLIBC_2_28_PRELOAD
#define AW_PIN_PRELOAD AW_PIN_TRAMPOLINE
#define AW_PIN_COMMAND(name, version)
#else
#define AW_PIN_COMMAND AW_PIN_TRAMPOLINE
#define AW_PIN_PRELOAD(name, version)
#endif
#define AW_PIN(name, version, users) AW_PIN_##users(name, version)
#include "glibc_2_28_pins.h"
#undef AW_PIN

// stat, fstat, lstat and fstatat became functions in glibc 2.33; before, <sys/stat.h> made them
// inline calls of __xstat & co. with the structure's version (1 on x86-64), which glibc still has.
struct stat;
#define AW_STAT_VER 1
int aw_xstat(int, const char*, struct stat*);
int aw_lxstat(int, const char*, struct stat*);
int aw_fxstat(int, int, struct stat*);
int aw_fxstatat(int, int, const char*, struct stat*, int);
__asm__(".symver aw_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver aw_lxstat, __lxstat@GLIBC_2.2.5");
__asm__(".symver aw_fxstat, __fxstat@GLIBC_2.2.5");
__asm__(".symver aw_fxstatat, __fxstatat@GLIBC_2.4");
// On x86-64 struct stat and struct stat64 are the same, as are the functions of both names. The
// preload library calls fstat alone.
__attribute__((visibility("hidden"))) int __wrap_fstat(int fd, struct stat* buf) {
  return aw_fxstat(AW_STAT_VER, fd, buf);
}
__attribute__((visibility("hidden"))) int __wrap_fstat64(int fd, struct stat* buf) {
  return aw_fxstat(AW_STAT_VER, fd, buf);
}
#ifndef AW_GLIBC_2_28_PRELOAD
__attribute__((visibility("hidden"))) int __wrap_stat(const char* path, struct stat* buf) {
  return aw_xstat(AW_STAT_VER, path, buf);
}
__attribute__((visibility("hidden"))) int __wrap_stat64(const char* path, struct stat* buf) {
  return aw_xstat(AW_STAT_VER, path, buf);
}
__attribute__((visibility("hidden"))) int __wrap_lstat(const char* path, struct stat* buf) {
  return aw_lxstat(AW_STAT_VER, path, buf);
}
__attribute__((visibility("hidden"))) int __wrap_lstat64(const char* path, struct stat* buf) {
  return aw_lxstat(AW_STAT_VER, path, buf);
}
__attribute__((visibility("hidden"))) int __wrap_fstatat(int dirfd, const char* path, struct stat* buf, int flags) {
  return aw_fxstatat(AW_STAT_VER, dirfd, path, buf, flags);
}
__attribute__((visibility("hidden"))) int __wrap_fstatat64(int dirfd, const char* path, struct stat* buf, int flags) {
  return aw_fxstatat(AW_STAT_VER, dirfd, path, buf, flags);
}
#endif

// GCC 12's libstdc++ reads glibc 2.32's __libc_single_threaded to skip atomic operations in a
// process without threads. This hidden definition answers "there may be threads": always correct,
// and the command's few shared_ptr copies do not notice the atomics (nor the preload library's hot
// path, which has none: bench/callgrind_per_call.sh).
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

#ifndef AW_GLIBC_2_28_PRELOAD
// The crt1.o of glibc 2.34 calls __libc_start_main@GLIBC_2.34, which runs the executable's
// constructors itself. The old entry point (still in glibc) runs them only through the `init`
// argument, which the old crt1.o filled with __libc_csu_init: this is that function (the dynamic
// loader runs the preinit array itself, in every version).
typedef void (*aw_init_fn)(int, char**, char**);
extern aw_init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern aw_init_fn __init_array_end[] __attribute__((visibility("hidden")));
extern void _init(void);

static void aw_run_constructors(int argc, char** argv, char** envp) {
  _init();
  const size_t n = (size_t)(__init_array_end - __init_array_start);
  for (size_t i = 0; i < n; ++i) __init_array_start[i](argc, argv, envp);
}

typedef int (*aw_main_fn)(int, char**, char**);
int aw_libc_start_main(aw_main_fn main_fn, int argc, char** argv, aw_init_fn init, void (*fini)(void),
                       void (*rtld_fini)(void), void* stack_end);
__asm__(".symver aw_libc_start_main, __libc_start_main@GLIBC_2.2.5");

__attribute__((visibility("hidden"))) int __wrap___libc_start_main(aw_main_fn main_fn, int argc, char** argv,
                                                                   aw_init_fn init, void (*fini)(void),
                                                                   void (*rtld_fini)(void), void* stack_end) {
  (void)init;  // NULL from a glibc 2.34 crt1.o, as fini
  (void)fini;
  return aw_libc_start_main(main_fn, argc, argv, aw_run_constructors, NULL, rtld_fini, stack_end);
}
#endif
