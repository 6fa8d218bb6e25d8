// The futex calls of the trace's writers and its file thread (process-private words), and the
// bounded wait of a writer waiting for the file and of the process's end: neither may hang on a
// file system that stops answering (a hard-mounted NFS server gone: linkat or ftruncate never
// returns).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace asyncwatch::trace_sync {

inline long futex(std::atomic<uint32_t>* a, int op, uint32_t v, const timespec* rel = nullptr) noexcept {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(a), op | FUTEX_PRIVATE_FLAG, v, rel, nullptr, 0);
}

inline uint64_t monotonic_ns() noexcept {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// How long a writer waits for the file to be made, and the process's end for the file thread in all
// (the file's naming, its truncation): milliseconds on any working file system (13 ms seen on a
// busy disk). Past it a writer stops the trace; the end leaves the file as a crash leaves it.
constexpr uint64_t kFileWaitNs = 5000000000ull;
constexpr long kSliceNs = 100000000;  // slept at a time

// A bounded wait's budget, counted in slices slept. A slice that took far longer than asked is not
// counted: the process was stopped meanwhile (SIGSTOP, a debugger's breakpoint), its file thread
// with it, so a resumed process never gives up on a file thread that simply had no time to run.
struct Patience {
  uint32_t slices_left = static_cast<uint32_t>(kFileWaitNs / kSliceNs);
};

// Sleeps once while `*a == v` (one slice at most; without a patience, until woken). False when the
// patience is spent; callers loop and re-check their condition. Changes errno (callers keep the
// application's).
inline bool wait_patiently(std::atomic<uint32_t>* a, uint32_t v, Patience* p) noexcept {
  if (!p) {
    futex(a, FUTEX_WAIT, v);
    return true;
  }
  if (p->slices_left == 0) return false;
  const uint64_t t0 = monotonic_ns();
  timespec rel{0, kSliceNs};
  if (futex(a, FUTEX_WAIT, v, &rel) != 0 && errno == ETIMEDOUT &&
      monotonic_ns() - t0 < 4 * static_cast<uint64_t>(kSliceNs))
    --p->slices_left;
  return p->slices_left != 0;
}

}  // namespace asyncwatch::trace_sync
