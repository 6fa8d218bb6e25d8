#include "thread_buffer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "common.h"
#include "flight_ring.h"
#include "thread_exit.h"
#include "trace_writer.h"

namespace asyncwatch::thread_buffer {

AW_TLS_SHARED detail::State detail::tl_state;

namespace {

using namespace asyncwatch::trace;
using detail::Cursor;
using detail::State;
using detail::tl_state;

inline void compiler_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// An exiting thread offers its block to the next thread when at least this much of it is unused:
// a new thread's first records (ThreadInfo, a stack, a call) are a few hundred bytes.
constexpr uint32_t kOfferMinRoom = 4096;

}  // namespace

namespace {
// Blocks start with their BlockHeader, which says where they are in the file.
inline void retire(const char* block) noexcept {
  trace_writer::retire_block(reinterpret_cast<const BlockHeader*>(block)->block_index);
}
}  // namespace

namespace {
// The rest of a block an exited thread offered (trace_writer::offer_block), for a thread's first
// block in the trace: its records go after a Handoff record naming it, and the block is marked
// handed on (kBlockMagicShared) before that, so that a reader looks for Handoffs in it. Only a
// first block: a thread's later blocks are claimed afresh, after it in the file, so that the
// thread's parts stay in file order (docs/trace-format.md). nullptr when none fits.
char* take_offered(Cursor& c, uint32_t size) noexcept {
  uint64_t index = 0;
  uint32_t used = 0;
  char* b = trace_writer::claim_offered_block(&index, &used);
  if (!b) return nullptr;
  if (uint64_t{used} + sizeof(HandoffRecord) + size > kBlockSize) {  // not for this record (a large first one)
    retire(b);
    return nullptr;
  }
  auto* bh = reinterpret_cast<BlockHeader*>(b);
  __atomic_store_n(&bh->magic, kBlockMagicShared, __ATOMIC_RELEASE);
  auto* h = reinterpret_cast<HandoffRecord*>(b + used);
  h->tid = tid();
  RecordHeader rh{static_cast<uint16_t>(RecordType::Handoff), static_cast<uint16_t>(sizeof(HandoffRecord))};
  uint32_t word;
  memcpy(&word, &rh, sizeof word);
  __atomic_store_n(reinterpret_cast<uint32_t*>(h), word, __ATOMIC_RELEASE);  // the header last, as commit's
  c.block = b;
  constexpr uint32_t kHandoff = sizeof(HandoffRecord);
  c.used = used + kHandoff + size;
  return b + used + kHandoff;
}
}  // namespace

char* detail::reserve_in_new_block(Cursor& c, uint32_t size) noexcept {
  if (&c == &tl_state.level[0]) {
    ++tl_state.block_epoch;
    clear_slots(tl_state);
  }
  if (c.block) retire(c.block);  // full: the thread never writes into it again
  // used == 0: the thread has had no block of this trace yet (after one, `used` stays past the header).
  if (!c.block && c.used == 0 && &c == &tl_state.level[0])
    if (char* p = take_offered(c, size)) return p;
  uint64_t index = 0;
  char* b = trace_writer::claim_block(&index);
  if (!b) {
    c.block = nullptr;
    return nullptr;
  }
  auto* bh = reinterpret_cast<BlockHeader*>(b);
  bh->tid = tid();
  bh->block_index = index;
  __atomic_store_n(&bh->magic, kBlockMagic, __ATOMIC_RELEASE);
  c.block = b;
  c.used = sizeof(BlockHeader) + size;
  return b + sizeof(BlockHeader);
}

namespace {
using detail::take;

bool write_thread_info() noexcept {
  ThreadInfoRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::ThreadInfo);
  r.h.size = static_cast<uint16_t>(record_size_aligned(sizeof r));
  r.tid = tid();
  pthread_getname_np(pthread_self(), r.name, sizeof r.name);
  return write(&r);
}

}  // namespace

char* detail::reserve_slow(uint32_t size, uint32_t gen) noexcept {
  State& s = tl_state;
  if (s.open) {
    if (s.generation != gen || s.open != 1) return nullptr;  // two levels deep: lost
    s.open = 3;
    compiler_fence();
    char* p = take(s.level[1], size);
    if (!p) {
      compiler_fence();
      s.open = 1;
    }
    return p;
  }
  if (gen == 0) {  // a child made by a raw clone: tracing stops in it (trace_writer marks it)
    trace_writer::process_is_ours();
    return nullptr;
  }
  // A new trace for this thread: its old blocks (if any) belong to another file, and so do the
  // losses not reported yet.
  s.level[0] = s.level[1] = Cursor{nullptr, 0};
  ++s.block_epoch;
  clear_slots(s);
  s.tid = 0;
  s.lost_count = 0;
  s.generation = gen;
  thread_exit::watch_this_thread();  // its blocks are retired when it exits (release_thread)
  if (!write_thread_info()) return nullptr;
  return reserve(size);
}

uint32_t tid() noexcept {
  if (AW_UNLIKELY(tl_state.tid == 0)) tl_state.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tl_state.tid;
}

char* reserve(uint32_t size) noexcept {
  if (AW_UNLIKELY(size > kMaxRecord || !trace_writer::ensure_open())) return nullptr;
  uint32_t gen;
  return reserve_active(size, &gen);
}

// The in-band LostRecord of the losses noted since this thread's last record (at level 0, no
// reservation open). The count is taken with one exchange: a handler's note_lost meanwhile stays
// for the next record.
void detail::write_lost(State& s) noexcept {
  s.open = 1;
  compiler_fence();
  char* p = take(s.level[0], sizeof(LostRecord));
  if (!p) {
    compiler_fence();
    s.open = 0;
    return;
  }
  auto* r = reinterpret_cast<LostRecord*>(p);
  r->count = __atomic_exchange_n(&s.lost_count, 0, __ATOMIC_RELAXED);
  r->reason = s.lost_reason;
  r->first_lost_ns = s.lost_first_ns;
  r->last_lost_ns = s.lost_last_ns;
  commit(p, RecordType::Lost, sizeof(LostRecord));
}

bool write2(const void* fixed, uint32_t fixed_size, const void* tail, uint32_t tail_size) noexcept {
  uint32_t total = record_size_aligned(fixed_size + tail_size);
  char* dst = reserve(total);
  if (AW_UNLIKELY(!dst)) return false;
  memcpy(dst + sizeof(RecordHeader), static_cast<const char*>(fixed) + sizeof(RecordHeader),
         fixed_size - sizeof(RecordHeader));
  if (tail_size) memcpy(dst + fixed_size, tail, tail_size);
  // The padding up to `total` is already zero: blocks come from freshly allocated file space and
  // no byte of a block is handed out twice.
  commit(dst, static_cast<RecordType>(static_cast<const RecordHeader*>(fixed)->type), total);
  return true;
}

void note_lost(LostReason why) noexcept {
  State& s = tl_state;
  uint64_t now = now_ns();
  if (s.lost_count == 0) {
    s.lost_reason = static_cast<uint32_t>(why);
    s.lost_first_ns = now;
  }
  s.lost_last_ns = now;
  compiler_fence();
  __atomic_fetch_add(&s.lost_count, 1, __ATOMIC_RELAXED);
  // Summary mode's slots are taken again, the loss reported first (site_summary::slot tests no loss).
  clear_slots(s);
}

void release_thread() noexcept {
  flight_ring::release_thread();  // its ring block, if any, may be reused
  State& s = tl_state;
  // Only this trace's blocks, and none while a reservation is open (not from a thread's exit).
  if (s.key != trace_writer::generation()) return;
  ++s.block_epoch;
  clear_slots(s);
  for (Cursor& c : s.level) {
    char* b = c.block;
    if (!b) continue;
    c.block = nullptr;  // before the block is given back: a signal handler's write from here on takes a new one
    compiler_fence();
    // The thread's block with room left goes on with another thread's records (offer_block); every
    // record of this one is committed (no reservation open), so they end exactly at `used`.
    if (&c == &s.level[0] && kBlockSize - c.used >= kOfferMinRoom &&
        trace_writer::offer_block(reinterpret_cast<const BlockHeader*>(b)->block_index, c.used))
      continue;
    retire(b);
  }
}

LostReason failure_reason() noexcept { return tl_state.open ? LostReason::SignalHandler : LostReason::NoBlock; }

bool write(const void* record) noexcept {
  const auto* h = static_cast<const RecordHeader*>(record);
  return write2(record, h->size, nullptr, 0);
}

}  // namespace asyncwatch::thread_buffer
