#include "query_fold.h"

#include "config.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::query_fold {
namespace detail {
AW_TLS_SHARED Last tl_last;
}  // namespace detail
using detail::kEndRefresh;
using detail::Last;
using detail::tl_last;

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
