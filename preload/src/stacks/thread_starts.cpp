#include "stacks/thread_starts.h"

#include <atomic>

namespace asyncwatch::thread_starts {
namespace {

// One word an entry: the start routine's address (user space: below 2^47) in the low 48 bits and
// a 16-bit tag of the thread's pthread_t in the high ones, so that a reader never sees one
// thread's tag with another's routine. Direct-mapped by another hash of the pthread_t: a thread
// whose entry was taken by a later one (1 in 65,536 for a tag that matches anyway) is "not known".
constexpr uint32_t kEntries = 1024;  // 8 KiB
std::atomic<uint64_t> g_entries[kEntries];
constexpr uint64_t kRoutineMask = (uint64_t{1} << 48) - 1;

uint64_t mix(pthread_t t) noexcept {
  uint64_t h = static_cast<uint64_t>(t) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 31);
}
uint32_t slot_of(uint64_t h) noexcept { return static_cast<uint32_t>(h >> 7) % kEntries; }
uint64_t tag_of(uint64_t h) noexcept { return (h >> 48) | 1; }  // never 0: an empty entry matches nothing

}  // namespace

void note_created(pthread_t thread, void* (*fn)(void*)) noexcept {
  const uint64_t routine = reinterpret_cast<uint64_t>(fn);
  if (routine == 0 || routine > kRoutineMask) return;
  const uint64_t h = mix(thread);
  g_entries[slot_of(h)].store((tag_of(h) << 48) | routine, std::memory_order_release);
}

uint64_t start_routine_of_self() noexcept {
  const uint64_t h = mix(pthread_self());
  const uint64_t e = g_entries[slot_of(h)].load(std::memory_order_acquire);
  return (e >> 48) == tag_of(h) ? e & kRoutineMask : 0;
}

}  // namespace asyncwatch::thread_starts
