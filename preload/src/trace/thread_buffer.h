// Per-thread record writing into the thread's current block: no lock, no atomic read-modify-write.
//
// A record is written in place: reserve(size) hands out the next `size` bytes of the thread's
// block, the caller fills the body, and commit() stores the 4-byte record header last, with
// release order, so that a reader of the mapping (or of the file after a crash) never sees a
// half-written record. Between reserve and commit the reservation is the thread's "open" one:
// a writer that runs on the same thread meanwhile (a signal handler making a CUDA call, code the
// library runs from a handler) does not touch that block; it writes into a second block of the
// thread's own (depth 1), and one more level down the record is lost (counted by the caller).
// So a handler can neither corrupt a record in progress nor hide its own records behind it.
#pragma once

#include <cstdint>

#include <atomic>
#include <cstring>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "trace/trace_writer.h"

namespace asyncwatch::thread_buffer {

// The largest record: what fits a block after its header, and what RecordHeader::size can say.
inline constexpr uint32_t kMaxRecord =
    trace::kBlockSize - sizeof(trace::BlockHeader) < 0xfff8u ? trace::kBlockSize - sizeof(trace::BlockHeader) : 0xfff8u;

// Where a record of `size` bytes (header included, a multiple of 8, at most kMaxRecord) is to be
// written; its bytes after the RecordHeader are the body. nullptr when it cannot be written
// (tracing off, stopped or closed, no block, too large); then there is nothing to commit.
char* reserve(uint32_t size) noexcept;
// The same when the caller has just seen the trace active (trace_writer::recording_now): skips the
// open check (a trace stopped meanwhile is noticed when a block is claimed). `*gen` gets the trace
// generation the reserved bytes belong to (trace_writer::generation() as it was read here).
inline __attribute__((always_inline)) char* reserve_active(uint32_t size, uint32_t* gen) noexcept;
// Publishes the record reserved at `p` (from the last reserve on this thread).
inline void commit(char* p, trace::RecordType type, uint32_t size) noexcept;

// `record` starts with a RecordHeader whose type and size are set; size is a multiple of 8 and
// at most kMaxRecord. Returns false when the record was not written (the caller counts it if it
// is a call's record: trace_writer::count_lost).
bool write(const void* record) noexcept;
// Variable-sized records (Stack, String, Module): fixed part + trailing bytes, written as one.
bool write2(const void* fixed, uint32_t fixed_size, const void* tail, uint32_t tail_size) noexcept;

// A call of this thread whose record could not be written (the caller counts it in records_lost):
// reported in band too, as one LostRecord {count, first and last time, reason of the first} written
// before this thread's next record (FileHeader.records_lost stays the total; a loss noted by a
// signal handler while the thread itself writes that LostRecord may be missing from the detail).
void note_lost(trace::LostReason why) noexcept;
// Why a reservation of this thread just failed: SignalHandler when one was already open on it (a
// nested writer two levels deep), else NoBlock.
trace::LostReason failure_reason() noexcept;

// Where this thread's next record would start (its level-0 block, no reservation open, no loss to
// report first), or nullptr. A writer that remembers where its last record ended can tell from it
// that the thread wrote nothing since (query folding, interpose/query_fold.h). Inline, below: every
// folded query of a polling loop asks (bench/poll_loop.sh's instructions a polled query).
inline const char* next_position() noexcept;
// next_position() == end for an `end` that is not nullptr, `gen` the trace's generation as the caller
// just read it (one read of it where a folded query makes both tests).
inline bool wrote_nothing_since(const char* end, uint32_t gen) noexcept;

// Kernel thread id of the calling thread (cached).
uint32_t tid() noexcept;

// The calling thread exits (thread_exit.h): its blocks are retired (trace_writer::retire_block), so
// that their memory goes back; a record it writes later in its exit takes a new block.
void release_thread() noexcept;

// ---- the hot path, inline (reserve_active and commit are called on every recorded call) -----
namespace detail {
struct Cursor {
  char* block;    // current block in the mapping, or nullptr
  uint32_t used;  // bytes used in it
};

// Summary mode's per-thread state (trace/site_summary.h, which explains it), kept here as a member
// of State: one thread-local object, so that the wrappers reach both from one TLS offset (summary
// per-call instructions <= full mode's, docs/performance.md).
struct SummarySlots {
  // slot[type]: the slot of the thread's current block, nullptr for none. Cleared whenever level[0]'s
  // block changes (clear_slots), so that a slot needs no epoch test (4 instructions of the idle
  // synchronization's summary-mode figure, docs/performance.md).
  char* slot[trace::kRecordTypeLimit];
  // sites and the thread's index of signatures are valid while `epoch` is State::block_epoch.
  uint32_t epoch;
  trace::SiteSummaryRecord* sites[64];
  // The return address whose call set sites[i] when the stack policy gives that summary's calls from
  // there no stack after the call unless they block (site_summary::fold_in_flight), else 0.
  uint64_t site_ra[64];
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
  // Changes whenever level[0]'s block does (a new block, a new trace, the thread's exit), as the
  // summary slots are cleared: what was placed in the thread's block (summary mode's site cache and
  // index, trace/site_summary.h) is valid while it is the same.
  uint32_t block_epoch;
  SummarySlots summary;
};
extern AW_TLS_SHARED State tl_state;

// Not the common case: a nested writer (a reservation of this thread is open), the thread's first
// record in this trace (also after a fork), or a process that is not ours.
__attribute__((noinline)) char* reserve_slow(uint32_t size, uint32_t gen) noexcept;
// Level 0's block changes (or a loss is to be reported before the next record): the summary slots are
// taken again (site_summary::slot tests neither the block nor losses).
inline void clear_slots(State& s) noexcept { memset(s.summary.slot, 0, sizeof s.summary.slot); }
// The in-band LostRecord of the losses noted since this thread's last record.
__attribute__((noinline)) void write_lost(State& s) noexcept;
// A fresh block for `c`, and `size` bytes of it.
__attribute__((noinline)) char* reserve_in_new_block(Cursor& c, uint32_t size) noexcept;

inline char* take(Cursor& c, uint32_t size) noexcept {
  if (AW_LIKELY(c.block && c.used + size <= trace::kBlockSize)) {
    char* p = c.block + c.used;
    c.used += size;
    return p;
  }
  return reserve_in_new_block(c, size);
}
}  // namespace detail

inline __attribute__((always_inline)) char* reserve_active(uint32_t size, uint32_t* gen_out) noexcept {
  const uint32_t gen = trace_writer::generation();
  *gen_out = gen;
  detail::State& s = detail::tl_state;
  if (AW_UNLIKELY(s.key != gen)) return detail::reserve_slow(size, gen);
  if (AW_UNLIKELY(s.lost_count)) detail::write_lost(s);
  // Open before the cursor is read: a writer that interrupts from here on (a signal handler) sees
  // it and uses level 1, so the bytes handed out below are never handed out twice.
  s.open = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  char* p = detail::take(s.level[0], size);
  if (AW_UNLIKELY(!p)) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    s.open = 0;
  }
  return p;
}

inline void commit(char* p, trace::RecordType type, uint32_t size) noexcept {
  trace::RecordHeader h{static_cast<uint16_t>(type), static_cast<uint16_t>(size)};
  uint32_t word;
  memcpy(&word, &h, sizeof word);
  // Stored last, with release order: the body is visible before the record is.
  __atomic_store_n(reinterpret_cast<uint32_t*>(p), word, __ATOMIC_RELEASE);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  detail::tl_state.open >>= 1;  // closes the innermost open reservation (3 -> 1, 1 -> 0)
}

inline const char* next_position() noexcept {
  const detail::State& s = detail::tl_state;
  if (s.key != trace_writer::generation() || s.lost_count || !s.level[0].block) return nullptr;
  return s.level[0].block + s.level[0].used;
}
inline bool wrote_nothing_since(const char* end, uint32_t gen) noexcept {
  const detail::State& s = detail::tl_state;
  // Integer sums: no block is address 0, never `end`.
  return s.key == gen && !s.lost_count &&
         reinterpret_cast<uintptr_t>(s.level[0].block) + s.level[0].used == reinterpret_cast<uintptr_t>(end);
}

}  // namespace asyncwatch::thread_buffer
