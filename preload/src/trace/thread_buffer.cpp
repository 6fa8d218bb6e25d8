#include "thread_buffer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "common.h"
#include "trace_writer.h"

namespace asyncwatch::thread_buffer {
namespace {

using namespace asyncwatch::trace;

struct Cursor {
  char* block;    // current block in the mapping, or nullptr
  uint32_t used;  // bytes used in it
};

// `generation` and `open` are compared as one 64-bit word on the hot path: equal to the current
// generation means "this trace, no reservation open".
struct State {
  union {
    struct {
      uint32_t generation;  // trace_writer::generation() the cursors belong to
      uint32_t open;        // 0: none; 1: a reservation open at level 0; 3: at levels 0 and 1
    };
    uint64_t key;
  };
  Cursor level[2];  // [0] the thread's block; [1] for writes while [0] has a reservation open
  uint32_t tid;
  uint32_t lost_reason;  // LostReason of the first loss not yet reported in band
  uint64_t lost_count;   // losses not yet reported in band (note_lost)
  uint64_t lost_first_ns, lost_last_ns;
};
AW_TLS State tl_state;

inline void compiler_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// A fresh block for `c`, and `size` bytes of it.
char* reserve_in_new_block(Cursor& c, uint32_t size) noexcept {
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

inline char* take(Cursor& c, uint32_t size) noexcept {
  if (AW_LIKELY(c.block && c.used + size <= kBlockSize)) {
    char* p = c.block + c.used;
    c.used += size;
    return p;
  }
  return reserve_in_new_block(c, size);
}

bool write_thread_info() noexcept {
  ThreadInfoRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::ThreadInfo);
  r.h.size = static_cast<uint16_t>(record_size_aligned(sizeof r));
  r.tid = tid();
  pthread_getname_np(pthread_self(), r.name, sizeof r.name);
  return write(&r);
}

// Not the common case: a nested writer (a reservation of this thread is open), the thread's first
// record in this trace (also after a fork), or a process that is not ours.
__attribute__((noinline)) char* reserve_slow(uint32_t size, uint32_t gen) noexcept {
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
  s.tid = 0;
  s.lost_count = 0;
  s.generation = gen;
  if (!write_thread_info()) return nullptr;
  return reserve(size);
}

}  // namespace

const char* next_position() noexcept {
  const State& s = tl_state;
  if (s.key != trace_writer::generation() || s.lost_count || !s.level[0].block) return nullptr;
  return s.level[0].block + s.level[0].used;
}

uint32_t tid() noexcept {
  if (AW_UNLIKELY(tl_state.tid == 0)) tl_state.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tl_state.tid;
}

char* reserve(uint32_t size) noexcept {
  if (AW_UNLIKELY(size > kMaxRecord || !trace_writer::ensure_open())) return nullptr;
  return reserve_active(size);
}

// The in-band LostRecord of the losses noted since this thread's last record (at level 0, no
// reservation open). The count is taken with one exchange: a handler's note_lost meanwhile stays
// for the next record.
__attribute__((noinline)) void write_lost(State& s) noexcept {
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

char* reserve_active(uint32_t size) noexcept {
  uint32_t gen = trace_writer::generation();
  State& s = tl_state;
  if (AW_UNLIKELY(s.key != gen)) return reserve_slow(size, gen);
  if (AW_UNLIKELY(s.lost_count)) write_lost(s);
  // Open before the cursor is read: a writer that interrupts from here on (a signal handler) sees
  // it and uses level 1, so the bytes handed out below are never handed out twice.
  s.open = 1;
  compiler_fence();
  char* p = take(s.level[0], size);
  if (AW_UNLIKELY(!p)) {
    compiler_fence();
    s.open = 0;
  }
  return p;
}

void commit(char* p, RecordType type, uint32_t size) noexcept {
  RecordHeader h{static_cast<uint16_t>(type), static_cast<uint16_t>(size)};
  uint32_t word;
  memcpy(&word, &h, sizeof word);
  // Stored last, with release order: the body is visible before the record is.
  __atomic_store_n(reinterpret_cast<uint32_t*>(p), word, __ATOMIC_RELEASE);
  compiler_fence();
  tl_state.open >>= 1;  // closes the innermost open reservation (3 -> 1, 1 -> 0)
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
}

LostReason failure_reason() noexcept { return tl_state.open ? LostReason::SignalHandler : LostReason::NoBlock; }

bool write(const void* record) noexcept {
  const auto* h = static_cast<const RecordHeader*>(record);
  return write2(record, h->size, nullptr, 0);
}

}  // namespace asyncwatch::thread_buffer
