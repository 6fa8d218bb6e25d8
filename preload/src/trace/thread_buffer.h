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

#include "asyncwatch/trace_format.h"

namespace asyncwatch::thread_buffer {

// The largest record: what fits a block after its header, and what RecordHeader::size can say.
inline constexpr uint32_t kMaxRecord = trace::kBlockSize - sizeof(trace::BlockHeader) < 0xfff8u
                                           ? trace::kBlockSize - sizeof(trace::BlockHeader)
                                           : 0xfff8u;

// Where a record of `size` bytes (header included, a multiple of 8, at most kMaxRecord) is to be
// written; its bytes after the RecordHeader are the body. nullptr when it cannot be written
// (tracing off, stopped or closed, no block, too large); then there is nothing to commit.
char* reserve(uint32_t size) noexcept;
// The same when the caller has just seen the trace active (trace_writer::recording_now): skips the
// open check (a trace stopped meanwhile is noticed when a block is claimed).
char* reserve_active(uint32_t size) noexcept;
// Publishes the record reserved at `p` (from the last reserve on this thread).
void commit(char* p, trace::RecordType type, uint32_t size) noexcept;

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
// that the thread wrote nothing since (query folding, interpose/query_fold.h).
const char* next_position() noexcept;

// Kernel thread id of the calling thread (cached).
uint32_t tid() noexcept;

}  // namespace asyncwatch::thread_buffer
