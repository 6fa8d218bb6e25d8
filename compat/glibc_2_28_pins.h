// The glibc functions the asyncwatch command reaches through the symbol version glibc 2.28 (RHEL 8)
// exports them under, rather than the build machine's newer default: AW_PIN(name, "version").
// cmake/AsyncwatchStaticDeps.cmake links the command with -Wl,--wrap=NAME for each line, and
// compat/glibc_2_28.c defines __wrap_NAME as a jump to NAME@VERSION: the references inside the
// statically linked libstdc++, elfutils and SQLite are pinned too. package.binary-deps.asyncwatch
// names any new function that needs a line here.
//
// Glibc 2.34 merged libpthread and libdl into libc under the version GLIBC_2.34 and keeps the old
// versions for older programs; before 2.34 they are in libpthread.so.0 / libdl.so.2, which the
// command therefore lists as NEEDED (empty compatibility stubs on 2.34 and later). libm's exp, log
// and pow got new versions in 2.29 (errno handling of a few inputs only).
AW_PIN(dlclose, "GLIBC_2.2.5")
AW_PIN(dlerror, "GLIBC_2.2.5")
AW_PIN(dlopen, "GLIBC_2.2.5")
AW_PIN(dlsym, "GLIBC_2.2.5")
AW_PIN(pthread_create, "GLIBC_2.2.5")
AW_PIN(pthread_detach, "GLIBC_2.2.5")
AW_PIN(pthread_join, "GLIBC_2.2.5")
AW_PIN(pthread_mutex_trylock, "GLIBC_2.2.5")
AW_PIN(pthread_mutexattr_destroy, "GLIBC_2.2.5")
AW_PIN(pthread_mutexattr_init, "GLIBC_2.2.5")
AW_PIN(pthread_mutexattr_settype, "GLIBC_2.2.5")
AW_PIN(pthread_once, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_destroy, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_init, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_rdlock, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_tryrdlock, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_unlock, "GLIBC_2.2.5")
AW_PIN(pthread_rwlock_wrlock, "GLIBC_2.2.5")
AW_PIN(exp, "GLIBC_2.2.5")
AW_PIN(log, "GLIBC_2.2.5")
AW_PIN(pow, "GLIBC_2.2.5")
