// The glibc functions that the asyncwatch command and the preload library libasyncwatch.so reach
// through the symbol version glibc 2.28 (RHEL 8) exports them under, rather than the build machine's
// newer default: AW_PIN(name, "version", USERS), USERS being COMMAND, PRELOAD or BOTH (a binary pins only what it calls: each pin is an import, and
// the preload library defines some of the command's, e.g. dlsym and pthread_create, itself).
// cmake/AsyncwatchGlibc228.cmake links each binary with -Wl,--wrap=NAME for each of its lines, and
// compat/glibc_2_28.c defines __wrap_NAME as a jump to NAME@VERSION: the references inside the
// statically linked libstdc++, libgcc, elfutils and SQLite are pinned too.
// package.binary-deps.asyncwatch and package.binary-deps.preload name any new function that needs a
// line here.
//
// Glibc 2.34 merged libpthread and libdl into libc under the version GLIBC_2.34 and keeps the old
// versions for older programs; before 2.34 they are in libpthread.so.0 / libdl.so.2, which the
// command and the preload library therefore list as NEEDED (empty compatibility stubs on 2.34 and
// later). libm's exp, log and pow got new versions in 2.29 (errno handling of a few inputs only).
AW_PIN(dlclose, "GLIBC_2.2.5", COMMAND)
AW_PIN(dlerror, "GLIBC_2.2.5", BOTH)
AW_PIN(dlopen, "GLIBC_2.2.5", BOTH)
AW_PIN(dlsym, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_create, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_detach, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_join, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_mutex_trylock, "GLIBC_2.2.5", BOTH)
AW_PIN(pthread_mutexattr_destroy, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_mutexattr_init, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_mutexattr_settype, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_once, "GLIBC_2.2.5", BOTH)
AW_PIN(pthread_rwlock_destroy, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_rwlock_init, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_rwlock_rdlock, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_rwlock_tryrdlock, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_rwlock_unlock, "GLIBC_2.2.5", COMMAND)
AW_PIN(pthread_rwlock_wrlock, "GLIBC_2.2.5", COMMAND)
AW_PIN(exp, "GLIBC_2.2.5", COMMAND)
AW_PIN(log, "GLIBC_2.2.5", COMMAND)
AW_PIN(pow, "GLIBC_2.2.5", COMMAND)
AW_PIN(dladdr, "GLIBC_2.2.5", PRELOAD)
AW_PIN(dlvsym, "GLIBC_2.2.5", PRELOAD)
AW_PIN(__pthread_key_create, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_attr_getstack, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_getattr_np, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_getname_np, "GLIBC_2.12", PRELOAD)
AW_PIN(pthread_getspecific, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_key_create, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_setspecific, "GLIBC_2.2.5", PRELOAD)
AW_PIN(pthread_sigmask, "GLIBC_2.2.5", PRELOAD)
AW_PIN(dlinfo, "GLIBC_2.3.3", PRELOAD)
