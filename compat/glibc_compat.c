// Keeps the glibc that asyncwatch's binaries need at the figure in pyproject.toml's wheel tag
// (docs/contracts.md, "What the binaries need").
//
// GCC 12's libstdc++.a, built on glibc 2.36, calls arc4random (GLIBC_2.36) from std::random_device,
// which the static libstdc++ drags in through its COW-string instantiations even though asyncwatch
// never uses it. Linked statically (the command and libasyncwatch.so do), that reference would make
// both refuse to load on glibc 2.34/2.35 (RHEL 9, Ubuntu 22.04). This hidden definition satisfies it
// at link time with getrandom (GLIBC_2.25): it is local to each binary, so the traced application
// and libc keep their own arc4random.
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/random.h>

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value;
  for (;;) {
    ssize_t n = getrandom(&value, sizeof value, 0);
    if (n == (ssize_t)sizeof value) return value;
    if (n < 0 && errno != EINTR) abort();  // as glibc's arc4random: no randomness, no return
  }
}
