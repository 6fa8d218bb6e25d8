// Per-thread record writing into the thread's current block: no lock, no atomic RMW; the
// record header is stored last with release order so a reader of the mapping (or of the file
// after a crash) never sees a half-written record.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"

namespace asyncwatch::thread_buffer {

// `record` starts with a RecordHeader whose type and size are set; size is a multiple of 8 and
// at most kBlockSize - sizeof(BlockHeader). Returns false when the record was lost.
bool write(const void* record) noexcept;

// Variable-sized records (Stack, String, Module): fixed part + trailing bytes, written as one.
bool write2(const void* fixed, uint32_t fixed_size, const void* tail, uint32_t tail_size) noexcept;

// Kernel thread id of the calling thread (cached).
uint32_t tid() noexcept;

}  // namespace asyncwatch::thread_buffer
