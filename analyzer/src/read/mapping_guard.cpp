#include "read/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace asyncwatch::mapping_guard {

namespace {
// One per trace read at once (report --jobs, the HTML report's second reading, timeline).
constexpr int kSlots = 256;
struct Slot {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> len{0};
  std::atomic<bool> taken{false};
  std::atomic<bool> truncated{false};
};
Slot g_slots[kSlots];
struct sigaction g_previous;
uintptr_t g_page = 4096;
std::once_flag g_installed;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const uintptr_t base = s.base.load(std::memory_order_acquire);
    const size_t len = s.len.load(std::memory_order_acquire);
    if (!base || at < base || at - base >= len) continue;
    const uintptr_t page = at & ~(g_page - 1);
    // Zero pages from the faulting one to the end: the access is retried and reads zeros.
    if (mmap(reinterpret_cast<void*>(page), base + len - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
             0) != MAP_FAILED) {
      s.truncated.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  // Not a trace's: what was there before (a sanitizer's report, a fuzzer's, or the default).
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // the access faults again and the process ends with SIGBUS
}

void install() {
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) g_page = static_cast<uintptr_t>(page);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous);
}
}  // namespace

int add(const void* base, size_t len) {
  std::call_once(g_installed, install);
  for (int i = 0; i < kSlots; ++i) {
    bool free_slot = false;
    if (!g_slots[i].taken.compare_exchange_strong(free_slot, true)) continue;
    g_slots[i].truncated.store(false);
    g_slots[i].len.store(len, std::memory_order_release);
    g_slots[i].base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    return i;
  }
  return -1;
}

void remove(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].base.store(0, std::memory_order_release);
  g_slots[slot].len.store(0, std::memory_order_release);
  g_slots[slot].taken.store(false, std::memory_order_release);
}

bool truncated(int slot) {
  return slot >= 0 && slot < kSlots && g_slots[slot].truncated.load(std::memory_order_acquire);
}

}  // namespace asyncwatch::mapping_guard
