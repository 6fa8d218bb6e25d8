#include "thread_buffer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "common.h"
#include "trace_writer.h"

namespace asyncwatch::thread_buffer {
namespace {

using namespace asyncwatch::trace;

struct State {
  char* block;          // current block in the mapping, or nullptr
  uint32_t used;        // bytes used in it
  uint32_t generation;  // trace_writer::generation() the block belongs to
  uint32_t tid;
  bool writing;         // re-entry guard (ThreadInfo is written from inside write)
};
AW_TLS State tl_state;

bool new_block() noexcept {
  uint64_t index = 0;
  char* b = trace_writer::claim_block(&index);
  if (!b) {
    tl_state.block = nullptr;
    return false;
  }
  auto* bh = reinterpret_cast<BlockHeader*>(b);
  bh->tid = tid();
  bh->block_index = index;
  __atomic_store_n(&bh->magic, kBlockMagic, __ATOMIC_RELEASE);
  tl_state.block = b;
  tl_state.used = sizeof(BlockHeader);
  return true;
}

inline void commit(char* dst, const void* fixed, uint32_t fixed_size, const void* tail, uint32_t tail_size,
                   uint32_t total) noexcept {
  memcpy(dst + sizeof(RecordHeader), static_cast<const char*>(fixed) + sizeof(RecordHeader),
         fixed_size - sizeof(RecordHeader));
  if (tail_size) memcpy(dst + fixed_size, tail, tail_size);
  if (total > fixed_size + tail_size) memset(dst + fixed_size + tail_size, 0, total - fixed_size - tail_size);
  RecordHeader h = *static_cast<const RecordHeader*>(fixed);
  h.size = static_cast<uint16_t>(total);
  uint32_t word;
  memcpy(&word, &h, sizeof word);
  // Stored last, with release order: the body is visible before the record is.
  __atomic_store_n(reinterpret_cast<uint32_t*>(dst), word, __ATOMIC_RELEASE);
}

bool write_thread_info() noexcept;

bool reserve(uint32_t total, char** out) noexcept {
  if (AW_UNLIKELY(!trace_writer::ensure_open())) {
    return false;
  }
  uint32_t gen = trace_writer::generation();
  if (AW_UNLIKELY(tl_state.generation != gen)) {
    // New trace (first use, or a forked child): the old block belongs to another file.
    tl_state.block = nullptr;
    tl_state.generation = gen;
    tl_state.tid = 0;
    if (!new_block()) return false;
    if (!write_thread_info()) return false;
  }
  if (AW_UNLIKELY(!tl_state.block || tl_state.used + total > kBlockSize)) {
    if (!new_block()) return false;
  }
  *out = tl_state.block + tl_state.used;
  tl_state.used += total;
  return true;
}

bool write_thread_info() noexcept {
  ThreadInfoRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::ThreadInfo);
  r.tid = tid();
  pthread_getname_np(pthread_self(), r.name, sizeof r.name);
  uint32_t total = record_size_aligned(sizeof r);
  char* dst;
  if (!tl_state.block || tl_state.used + total > kBlockSize) {
    if (!new_block()) return false;
  }
  dst = tl_state.block + tl_state.used;
  tl_state.used += total;
  commit(dst, &r, sizeof r, nullptr, 0, total);
  return true;
}

}  // namespace

uint32_t tid() noexcept {
  if (AW_UNLIKELY(tl_state.tid == 0)) tl_state.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tl_state.tid;
}

bool write2(const void* fixed, uint32_t fixed_size, const void* tail, uint32_t tail_size) noexcept {
  uint32_t total = record_size_aligned(fixed_size + tail_size);
  if (total > kBlockSize - sizeof(BlockHeader) || total > 0xffff) {
    trace_writer::count_lost(1);
    return false;
  }
  char* dst;
  if (AW_UNLIKELY(!reserve(total, &dst))) {
    trace_writer::count_lost(1);
    return false;
  }
  commit(dst, fixed, fixed_size, tail, tail_size, total);
  return true;
}

bool write(const void* record) noexcept {
  const auto* h = static_cast<const RecordHeader*>(record);
  return write2(record, h->size, nullptr, 0);
}

}  // namespace asyncwatch::thread_buffer
