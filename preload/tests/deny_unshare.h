// A test program's "container" mode: when the environment variable `env` is "1", a seccomp filter
// makes unshare() fail with EPERM, as a container's default profile does, before anything else
// (the preload library then keeps the trace's descriptor in the process's table). Exits 20 when the
// filter cannot be installed. Shared by preload/tests/test_app.cpp and test_apps/apps/hostile_app.cu.
// deny_tmpfile_if: the same for open(O_TMPFILE) (EOPNOTSUPP, as on a file system without it: the
// library then creates the trace under its name).
// hold_syscall: a file system that stops answering (a hard-mounted NFS server gone): every call of
// one system call, by the threads created after it, waits forever (seccomp's user notification,
// never answered).
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <thread>

// Installs a seccomp filter for this process and its children; exits 20 when it cannot.
inline void install_filter(sock_filter* f, size_t n) {
  sock_fprog prog{static_cast<unsigned short>(n), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    exit(20);
  }
}

inline void deny_unshare_if(const char* env) {
  const char* v = getenv(env);
  if (!v || strcmp(v, "1") != 0) return;
  sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  install_filter(f, sizeof f / sizeof f[0]);
}

inline void deny_tmpfile_if(const char* env) {
  const char* v = getenv(env);
  if (!v || strcmp(v, "1") != 0) return;
  sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + 2 * sizeof(__u64)),  // flags, low word
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, __O_TMPFILE, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EOPNOTSUPP & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  install_filter(f, sizeof f / sizeof f[0]);
}

// The system calls the preload library makes that a CUDA program itself need not (docs/reliability.md,
// "System calls the library adds"), by name. deny_syscalls_if: when the environment variable `env`
// names some of them ("unshare,linkat" or "all"), each fails with EPERM from then on (SECCOMP_RET_ERRNO),
// as under a container's or a sandbox's allowlist that lacks them. Exits 21 on an unknown name.
struct NamedSyscall {
  const char* name;
  long nr;
};
inline constexpr NamedSyscall kLibrarySyscalls[] = {
    {"clone3", 435},
    {"unshare", SYS_unshare},
    {"close_range", 436},
    {"getdents64", SYS_getdents64},
    {"linkat", SYS_linkat},
    {"fallocate", SYS_fallocate},
    {"fchmod", SYS_fchmod},
    {"pwritev", SYS_pwritev},
    {"ftruncate", SYS_ftruncate},
    {"sync_file_range", SYS_sync_file_range},
    {"madvise", SYS_madvise},
    {"prctl", SYS_prctl},
    {"tgkill", SYS_tgkill},
    {"process_vm_readv", SYS_process_vm_readv},
    {"uname", SYS_uname},
#ifdef SYS_readlink
    {"readlink", SYS_readlink},
#endif
    {"readlinkat", SYS_readlinkat},
    {"getppid", SYS_getppid},
    {"sched_getaffinity", SYS_sched_getaffinity},
};

inline void deny_syscalls_if(const char* env) {
  const char* v = getenv(env);
  if (!v || !*v) return;
  long nrs[sizeof kLibrarySyscalls / sizeof kLibrarySyscalls[0]];
  size_t n = 0;
  for (const NamedSyscall& c : kLibrarySyscalls) {
    const size_t len = strlen(c.name);
    bool listed = strcmp(v, "all") == 0;
    for (const char* p = v; !listed && p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : nullptr)
      listed = strncmp(p, c.name, len) == 0 && (p[len] == ',' || p[len] == 0);
    if (listed) nrs[n++] = c.nr;
  }
  if (n == 0) {
    fprintf(stderr, "%s: no known system call in '%s'\n", env, v);
    exit(21);
  }
  // Load nr; one test per call jumping to the EPERM return; else allow.
  sock_filter f[2 + sizeof kLibrarySyscalls / sizeof kLibrarySyscalls[0] + 1];
  size_t k = 0;
  f[k++] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  for (size_t i = 0; i < n; ++i)
    f[k++] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<__u32>(nrs[i]), static_cast<__u8>(n - i), 0);
  f[k++] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  f[k++] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
  install_filter(f, k);
}

// How many held calls the listener has received.
inline std::atomic<int> g_held_calls{0};

// Every later call of system call `nr` by this thread and the threads it creates from now on waits
// until the process ends, or, with `release_ms` >= 0, that long and then goes on (a slow file
// system). False when the kernel has no user notification (Linux < 5.0; releasing: 5.5).
inline bool hold_syscall(long nr, long release_ms = -1) {
  static std::atomic<int> listener{-1};
  // The listener is created first: a filter applies to the thread installing it and to the
  // threads that thread creates later, so the listener's own calls are never filtered.
  std::thread([release_ms] {
    int fd;
    while ((fd = listener.load()) < 0) usleep(100);
    for (;;) {
      seccomp_notif n;
      memset(&n, 0, sizeof n);
      if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) {
        g_held_calls.fetch_add(1);
        if (release_ms < 0) continue;  // never answered
        timespec t{release_ms / 1000, (release_ms % 1000) * 1000000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &t, nullptr);
        seccomp_notif_resp r;
        memset(&r, 0, sizeof r);
        r.id = n.id;
        r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;  // the call runs as if never held
        ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &r);
      } else if (errno != EINTR && errno != ENOENT) {
        return;
      }
    }
  }).detach();
  sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<__u32>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (fd < 0) return false;
  listener.store(static_cast<int>(fd));
  return true;
}
