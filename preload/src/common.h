// Small helpers used by every part of the preload library.
#pragma once

#include <cerrno>
#include <cstdint>
#include <ctime>

#include "tsc_clock.h"

#define AW_EXPORT __attribute__((visibility("default")))
// initial-exec: the library is LD_PRELOADed, so its TLS is in the static block and every
// access is one %fs-relative load, with no __tls_get_addr call on the hot path.
#define AW_TLS __attribute__((tls_model("initial-exec"))) thread_local
// The same for a variable shared between files (declared extern): __thread, which cannot have a
// dynamic initializer, so accesses need no call through the thread_local init wrapper.
#define AW_TLS_SHARED  __attribute__((tls_model("initial-exec"))) __thread
#define AW_LIKELY(x)   __builtin_expect(!!(x), 1)
#define AW_UNLIKELY(x) __builtin_expect(!!(x), 0)
// A driver wrapper's fill lambda (traced_call.h, traced_with): inlined into each of traced_with's
// ways. Left to itself GCC kept it out of line, so every call built the closure of its captures on
// the stack and called it (a pinned 64 B copy through the driver, as with the static runtime, was
// 371 instructions added, 292 with the fill inlined: callgrind_per_call.sh --driver).
#define AW_FILL __attribute__((always_inline))
// A large zero-initialized array, laid out after every other variable of .bss (in .lbss, which the
// linker places right after .bss in the same segment): the small variables then share a few pages
// instead of being scattered between the arrays, and the first touch of each page is a page fault
// of every traced process's start-up.
#define AW_LARGE_ZEROED __attribute__((section(".lbss")))

namespace asyncwatch {

// CLOCK_MONOTONIC nanoseconds, from the TSC once calibrated (tsc_clock.h): every time in a record
// and in the trace's header comes from here.
inline uint64_t now_ns() noexcept { return tsc_clock::read(tsc_clock::g_state); }

// The application must see the errno it would have seen without us: every wrapper saves errno
// after the real call and restores it after our own work (file I/O, dladdr, mmap...).
// Not instrumented by ASan or TSan: it runs in our dlsym, which the sanitizer runtime's own
// start-up calls before ASan's shadow memory / TSan's thread state exists (sanitizer CI jobs).
#define AW_NO_SANITIZE_EARLY __attribute__((no_sanitize_address, no_sanitize("thread")))
// Not instrumented by ASan: reads stack words outside any object by design (the call-site key
// scans the 512 bytes above the caller's frame, whatever frames and redzones lie there).
#define AW_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
class ErrnoKeeper {
 public:
  AW_NO_SANITIZE_EARLY ErrnoKeeper() noexcept : saved_(errno) {}
  AW_NO_SANITIZE_EARLY ~ErrnoKeeper() { errno = saved_; }
  void capture() noexcept { saved_ = errno; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

 private:
  int saved_;
};

}  // namespace asyncwatch
