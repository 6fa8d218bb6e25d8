// The futex calls of the trace's writers and its file thread (process-private words), and the
// bounded wait that the process's end uses: exit must not hang on a file system that stops
// answering (a hard-mounted NFS server gone: linkat or ftruncate never returns).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
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

// Sleeps while `*a == v`, until `deadline_ns` (CLOCK_MONOTONIC); false once the deadline passed.
// One sleep: callers loop and re-check their condition.
inline bool wait_until(std::atomic<uint32_t>* a, uint32_t v, uint64_t deadline_ns) noexcept {
  uint64_t now = monotonic_ns();
  if (now >= deadline_ns) return false;
  uint64_t left = deadline_ns - now;
  timespec rel{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
  futex(a, FUTEX_WAIT, v, &rel);
  return true;
}

}  // namespace asyncwatch::trace_sync
