#include "flight_ring.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "thread_buffer.h"
#include "trace_file.h"
#include "trace_writer.h"

namespace asyncwatch::flight_ring {

std::atomic<bool> g_enabled{false};

namespace {

using namespace asyncwatch::trace;

inline void compiler_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// Slot i of the ring is reached by the sequence numbers i, i + N, i + 2N, ... (N = g_blocks): the
// first takes a fresh block from the file (trace_writer::claim_block), the later ones reuse it.
std::atomic<uint64_t> g_blocks{0};
std::atomic<uint64_t> g_next_seq{0};
// The file block of each slot, + 1 (0: not taken yet).
AW_LARGE_ZEROED std::atomic<uint64_t> g_slot_block[kMaxRingBlocks];
// Each slot's state: kUnclaimed or kHeld while it cannot be taken (its first claim under way, or a
// thread writes into it); else the instant (now_ns) its thread let it go, which is after every record
// in it started: when it is reused, the trace's window starts no earlier than that.
AW_LARGE_ZEROED std::atomic<uint64_t> g_slot_state[kMaxRingBlocks];
constexpr uint64_t kUnclaimed = 0, kHeld = 1, kFirstFree = 2;

struct Cursor {
  uint32_t generation;  // trace_writer::generation() the block belongs to
  uint32_t busy;        // a copy in progress on this thread: a signal handler's copy meanwhile is dropped
  char* block;          // the thread's ring block, or nullptr
  uint32_t used;        // bytes written in it
  uint64_t slot;
};
AW_TLS_SHARED Cursor tl_ring;

void count_missed() noexcept {
  if (FileHeader* h = trace_writer::header()) __atomic_fetch_add(&h->flight_copies_missed, 1, __ATOMIC_RELAXED);
}

// The thread lets its block go: it may be reused from now on, and its pages leave the process's memory.
void let_go(Cursor& c) noexcept {
  if (!c.block) return;
  const uint64_t file_block = g_slot_block[c.slot].load(std::memory_order_relaxed) - 1;
  c.block = nullptr;
  compiler_fence();
  g_slot_state[c.slot].store(std::max(now_ns(), kFirstFree), std::memory_order_release);
  trace_file::drop_ring_block(file_block);
}

// The block of the file at `index`, mapped (a ring block's segment is never unmapped: trace_file.h).
char* block_at(uint64_t index) noexcept {
  const uint64_t seg = trace_file::segment_of_block(index);
  char* base = trace_file::mapped_segment(seg);
  return base ? base + (index - trace_file::segment_first_block(seg)) * kBlockSize : nullptr;
}

// A ring block for the calling thread: the next slot in sequence that is free, taken with one
// compare-and-swap (at most one lap of tries: past it, every block is held by a thread).
bool claim(Cursor& c) noexcept {
  FileHeader* h = trace_writer::header();
  const uint64_t n = g_blocks.load(std::memory_order_acquire);
  if (!h || !n) return false;
  for (uint64_t tries = 0; tries < n; ++tries) {
    const uint64_t seq = g_next_seq.fetch_add(1, std::memory_order_acq_rel);
    const uint64_t slot = seq % n;
    char* b;
    if (seq < n) {  // the first lap: fresh file space, all zero
      uint64_t index = 0;
      b = trace_writer::claim_block(&index);
      if (!b) return false;  // tracing stopped (disk full...): trace_writer said why
      g_slot_block[slot].store(index + 1, std::memory_order_release);
      g_slot_state[slot].store(kHeld, std::memory_order_release);
    } else {
      uint64_t was = g_slot_state[slot].load(std::memory_order_acquire);
      if (was < kFirstFree || !g_slot_state[slot].compare_exchange_strong(was, kHeld, std::memory_order_acq_rel))
        continue;  // held by a thread (or its first claim is under way): the next one
      b = block_at(g_slot_block[slot].load(std::memory_order_acquire) - 1);
      if (!b) continue;  // cannot happen (the segment stays mapped); the slot stays held, unused
      // Emptied before it is written again: its first record header, then its magic (from here it
      // reads as an unused block), so that a reader never sees its old records under the new
      // sequence, nor old and new records mixed (each new record is followed by a zero header).
      auto* bh = reinterpret_cast<BlockHeader*>(b);
      __atomic_store_n(reinterpret_cast<uint32_t*>(b + sizeof(BlockHeader)), 0u, __ATOMIC_RELEASE);
      __atomic_store_n(&bh->magic, 0u, __ATOMIC_RELEASE);
      // The window: every record of the block dropped started before `was`.
      uint64_t cur = __atomic_load_n(&h->flight_window_start_ns, __ATOMIC_RELAXED);
      while (cur < was && !__atomic_compare_exchange_n(&h->flight_window_start_ns, &cur, was, true, __ATOMIC_RELAXED,
                                                       __ATOMIC_RELAXED)) {}
      __atomic_fetch_add(&h->flight_blocks_reused, 1, __ATOMIC_RELAXED);
    }
    auto* bh = reinterpret_cast<BlockHeader*>(b);
    bh->tid = thread_buffer::tid();
    bh->block_index = seq;
    __atomic_store_n(&bh->magic, kBlockMagicRing, __ATOMIC_RELEASE);
    c.block = b;
    c.used = sizeof(BlockHeader);
    c.slot = slot;
    return true;
  }
  return false;
}

}  // namespace

void start(uint64_t blocks) noexcept {
  g_enabled.store(false, std::memory_order_relaxed);
  blocks = std::min(blocks, kMaxRingBlocks);
  const uint64_t used = std::min(std::max(g_blocks.load(), blocks), kMaxRingBlocks);
  for (uint64_t i = 0; i < used; ++i) {  // an earlier trace's (a fork child's parent's, a test's)
    g_slot_block[i].store(0, std::memory_order_relaxed);
    g_slot_state[i].store(kUnclaimed, std::memory_order_relaxed);
  }
  g_next_seq.store(0, std::memory_order_relaxed);
  g_blocks.store(blocks, std::memory_order_release);
  g_enabled.store(blocks != 0, std::memory_order_release);
}

void copy(const CallHead* rec) noexcept {
  Cursor& c = tl_ring;
  if (c.busy) {  // a signal handler's call while this thread copies: the cursor is not ours now
    count_missed();
    return;
  }
  c.busy = 1;
  compiler_fence();
  const uint32_t gen = trace_writer::generation();
  if (c.generation != gen) {  // a new trace (or a fork child): the old block is another file's
    c.generation = gen;
    c.block = nullptr;
  }
  const uint32_t size = rec->h.size;
  if (c.block && c.used + size > kBlockSize) let_go(c);
  if (!c.block && !claim(c)) {
    count_missed();
  } else {
    // As thread_buffer's commit: the body, then a zero header after it (the end of the block's
    // records, over whatever the block held before it was reused), then the header, with release order.
    char* p = c.block + c.used;
    std::memcpy(p + sizeof(RecordHeader), reinterpret_cast<const char*>(rec) + sizeof(RecordHeader),
                size - sizeof(RecordHeader));
    reinterpret_cast<CallHead*>(p)->flags &= ~uint32_t{kFlagInFlight};  // completed by the caller after the copy
    if (c.used + size + sizeof(RecordHeader) <= kBlockSize)
      __atomic_store_n(reinterpret_cast<uint32_t*>(p + size), 0u, __ATOMIC_RELAXED);
    uint32_t word;
    std::memcpy(&word, &rec->h, sizeof word);
    __atomic_store_n(reinterpret_cast<uint32_t*>(p), word, __ATOMIC_RELEASE);
    c.used += size;
  }
  compiler_fence();
  c.busy = 0;
}

void release_thread() noexcept {
  Cursor& c = tl_ring;
  if (c.busy || c.generation != trace_writer::generation()) return;
  let_go(c);
}

}  // namespace asyncwatch::flight_ring
