// Version 1 of the trace format, read through an adapter: each v1 record is validated against
// its v1 size and converted into the v2 struct of its type (trace_format.h), so the rest of the
// analyzer knows one layout. v1 differs from v2 only in the call records (no common CallHead:
// the same fields in per-type orders, no stack_id/flags/stream_kind in StreamCreate/Capture),
// the Stack record (12-byte head, u32 depth) and LostRecord (16 bytes, count only; never
// written by v1 writers). ThreadInfo, Module, String, HostFuncRun and DeviceInfo are identical.
// The block framing (FileHeader, BlockHeader, RecordHeader) is the same in both.
#pragma once

#include <asyncwatch/trace_format.h>

#include <cstdint>
#include <string>

namespace asyncwatch::trace_v1 {

// Room for the largest converted record: a Stack of kMaxStackDepth frames.
inline constexpr size_t kScratchBytes = sizeof(trace::StackRecord) + 8 * trace::kMaxStackDepth;

// The v1 record `p` (of `type`, `size` bytes as stored; its bytes are readable) as a v2 record:
// `p` itself when the layouts agree, else its conversion written to `scratch` (kScratchBytes,
// 8-aligned). *v2_size gets the converted record's size. nullptr when the v1 record is malformed
// (its size does not match its type, or a stack is deeper than kMaxStackDepth): *error says why.
const uint8_t* to_v2(uint16_t type, uint32_t size, const uint8_t* p, uint8_t* scratch, uint32_t* v2_size,
                     std::string* error);

// Where the frames of a v1 Stack record at `p` start, and their count (for reads by offset).
inline constexpr uint32_t kStackPayloadOffset = 12;
uint32_t stack_depth(const uint8_t* p);

}  // namespace asyncwatch::trace_v1
