#include "query_fold.h"

#include "config.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::query_fold {
namespace {

// This thread's last query record, while it may still take more calls.
struct Last {
  trace::SyncRecord* rec;  // in the thread's block (published)
  const char* end;         // where the next record would start if nothing was written since
  uint32_t generation;
  uint16_t api;
  uint8_t per_thread;
  int32_t result;
  uint64_t handle;
};
AW_TLS Last tl_last;

}  // namespace

bool eligible() noexcept {
  const calls::ThreadCallState& st = calls::thread_state();
  return st.phase == calls::kPhaseApplication && trace_writer::recording_now() &&
         config_fast().stacks != StackPolicy::All;
}

bool may_fold(trace::Api api, uint64_t handle, bool per_thread) noexcept {
  const Last& l = tl_last;
  return l.rec && l.handle == handle && l.api == static_cast<uint16_t>(api) && l.per_thread == per_thread;
}

// Folds between two refreshes of the folded record's end time: at ~0.15 us a query, its end lags the
// last query by a few microseconds at most, and the next record of the thread bounds it exactly.
constexpr uint32_t kEndRefresh = 32;

bool fold(int32_t result) noexcept {
  Last& l = tl_last;
  // The position test before any read of the record: a record the thread's writing has moved past
  // may lie in a block that is no longer mapped.
  if (!l.rec || l.result != result || l.generation != trace_writer::generation() ||
      thread_buffer::next_position() != l.end || l.rec->repeat == UINT32_MAX)
    return false;
  const uint32_t repeat = l.rec->repeat + 1;
  if (repeat % kEndRefresh == 0) __atomic_store_n(&l.rec->end_ns, now_ns(), __ATOMIC_RELAXED);
  // Relaxed stores: a reader of the live mapping sees either count (each field is one store).
  __atomic_store_n(&l.rec->repeat, repeat, __ATOMIC_RELAXED);
  return true;
}

void record(trace::Api api, trace::Api driver_fn, uint64_t handle, trace::StreamKind kind, bool per_thread,
            int32_t result, uint64_t start, uint64_t end) noexcept {
  Last& l = tl_last;
  const uint32_t gen = trace_writer::generation();
  if (l.rec && l.generation == gen && l.handle == handle && l.api == static_cast<uint16_t>(api) && l.result == result &&
      l.per_thread == per_thread && thread_buffer::next_position() == l.end && l.rec->repeat < UINT32_MAX) {
    // Relaxed stores: a reader of the live mapping sees either count (each field is one store).
    __atomic_store_n(&l.rec->end_ns, end, __ATOMIC_RELAXED);
    __atomic_store_n(&l.rec->repeat, l.rec->repeat + 1, __ATOMIC_RELAXED);
    return;
  }
  // The run of folded results ends here: its record ends where this query began (its end time was
  // refreshed only every kEndRefresh folds).
  if (l.rec && l.generation == gen && thread_buffer::next_position() == l.end && l.rec->repeat > 1 &&
      start > l.rec->end_ns)
    __atomic_store_n(&l.rec->end_ns, start, __ATOMIC_RELAXED);
  l.rec = nullptr;
  constexpr uint32_t kSize = trace::record_size_aligned(sizeof(trace::SyncRecord));
  uint32_t reserved_gen;
  char* p = thread_buffer::reserve_active(kSize, &reserved_gen);
  if (!p) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
    return;
  }
  auto* s = reinterpret_cast<trace::SyncRecord*>(p);  // bytes after the header are zero
  s->api = static_cast<uint16_t>(api);
  s->driver_fn = static_cast<uint16_t>(driver_fn);
  s->flags = per_thread ? trace::kFlagPerThreadEntry : 0u;
  s->result = result;
  s->stream_kind = static_cast<uint8_t>(kind);
  s->start_ns = start;
  s->end_ns = end;
  s->handle = handle;
  s->repeat = 1;
  thread_buffer::commit(p, trace::RecordType::Sync, kSize);
  l = Last{s, p + kSize, gen, static_cast<uint16_t>(api), static_cast<uint8_t>(per_thread), result, handle};
  if (result == 0) calls::note_driver_ready();
}

}  // namespace asyncwatch::query_fold
