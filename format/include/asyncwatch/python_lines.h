// CPython line tables: from a code object's raw co_linetable bytes and co_firstlineno to the
// source location of an instruction. Plain C++17, no dependencies, no allocation: shared by the
// preload library (python_frames.cpp) and the analyzer, so a trace may carry only the raw bytes
// (once per code object) and be decoded offline.
//
// An instruction is named by its index in code units (2-byte _Py_CODEUNITs, inline caches
// included), the unit CPython's frames point at: f_lasti in 3.10, prev_instr/instr_ptr minus the
// start of the bytecode in 3.11+. CPython's own mapping (PyCode_Addr2Line, co_positions) takes
// the byte offset, twice this index. Two formats:
//  * kCpython310 (3.10, Objects/lnotab_notes.txt of 3.10): pairs (bytes delta: u8, line delta:
//    s8), a line delta of -128 meaning "no line"; an entry covers the bytes from the end of the
//    previous entry; entries of zero bytes only move the line.
//  * kCpython311 (3.11-3.14: Objects/locations.md): entries of 1-8 code units, each a first
//    byte 1cccclll (c: the form, l: units - 1) and the form's data in 6-bit varints (bit 6: more
//    follows): 15 no location, 14 long (svarint line delta, varint end-line delta, varint column+1,
//    varint end-column+1), 13 no columns (svarint line delta), 10-12 one line (line delta 0-2, a
//    column byte, an end-column byte), 0-9 short (line delta 0; one byte: column = form*8 +
//    bits 4-6, end column = column + bits 0-3).
// A malformed or truncated table never reads past `size`: decoding stops there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace asyncwatch::python_lines {

enum class LineTableFormat : uint8_t {
  kUnknown = 0,
  kCpython310 = 1,  // CPython 3.10
  kCpython311 = 2,  // CPython 3.11, 3.12, 3.13, 3.14 (unchanged in 3.14)
};

// Lines and columns are those of CPython: lines from 1, columns 0-based in UTF-8 bytes; -1 when
// the table has none for the instruction (columns are always -1 in 3.10).
struct SourceLocation {
  int32_t line = -1;
  int32_t end_line = -1;
  int32_t column = -1;
  int32_t end_column = -1;
};

namespace detail {

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  uint8_t byte() {
    if (p == end) {
      ok = false;
      return 0;
    }
    return *p++;
  }
  uint32_t varint() {
    uint32_t b = byte();
    uint32_t value = b & 63;
    unsigned shift = 0;
    while (ok && (b & 64)) {
      b = byte();
      shift += 6;
      if (shift > 30) {  // no real table holds a value beyond 32 bits
        ok = false;
        return 0;
      }
      value |= (b & 63) << shift;
    }
    return value;
  }
  int32_t svarint() {
    uint32_t u = varint();
    int32_t magnitude = static_cast<int32_t>(u >> 1);
    return (u & 1) ? -magnitude : magnitude;
  }
};

}  // namespace detail

// Calls f(first_instr, end_instr, const SourceLocation&) for each entry of the table, in order
// (end exclusive, in code units; entries are contiguous from instruction 0). Returns false when
// the table is malformed (f was called for the entries before the error), true otherwise.
// f may return void, or bool: false stops the walk (for_each_range then returns true).
template <class F>
bool for_each_range(LineTableFormat format, const uint8_t* table, size_t size, int32_t first_line, F&& f) {
  detail::Cursor c{table, table + size};
  auto call = [&f](uint32_t start, uint32_t end, const SourceLocation& loc) -> bool {
    if constexpr (std::is_same_v<decltype(f(start, end, loc)), bool>) {
      return f(start, end, loc);
    } else {
      f(start, end, loc);
      return true;
    }
  };
  int64_t line = first_line;
  if (format == LineTableFormat::kCpython310) {
    // In bytes: entries of an odd byte count cannot occur (code units are 2 bytes).
    uint64_t end_byte = 0;
    while (c.p != c.end) {
      uint32_t bytes = c.byte();
      int8_t line_delta = static_cast<int8_t>(c.byte());
      if (!c.ok) return false;
      uint64_t start_byte = end_byte;
      end_byte += bytes;
      SourceLocation loc;
      if (line_delta != -128) {
        line += line_delta;
        loc.line = loc.end_line = static_cast<int32_t>(line);
      }
      if (bytes != 0 && !call(static_cast<uint32_t>(start_byte / 2), static_cast<uint32_t>(end_byte / 2), loc)) {
        return true;
      }
    }
    return true;
  }
  if (format != LineTableFormat::kCpython311) return false;
  uint32_t end = 0;
  while (c.p != c.end) {
    uint8_t first = c.byte();
    if (!(first & 0x80)) return false;  // not the start of an entry
    unsigned form = (first >> 3) & 15;
    uint32_t units = (first & 7) + 1u;
    SourceLocation loc;
    if (form == 15) {
      // no location: the line does not move
    } else if (form == 14) {
      line += c.svarint();
      loc.line = static_cast<int32_t>(line);
      loc.end_line = static_cast<int32_t>(line + c.varint());
      loc.column = static_cast<int32_t>(c.varint()) - 1;
      loc.end_column = static_cast<int32_t>(c.varint()) - 1;
    } else if (form == 13) {
      line += c.svarint();
      loc.line = loc.end_line = static_cast<int32_t>(line);
    } else if (form >= 10) {
      line += form - 10;
      loc.line = loc.end_line = static_cast<int32_t>(line);
      loc.column = c.byte();
      loc.end_column = c.byte();
    } else {
      uint8_t second = c.byte();
      loc.line = loc.end_line = static_cast<int32_t>(line);
      loc.column = static_cast<int32_t>(form * 8 + ((second >> 4) & 7));
      loc.end_column = loc.column + (second & 15);
    }
    if (!c.ok) return false;
    uint32_t start = end;
    end += units;
    if (!call(start, end, loc)) return true;
  }
  return true;
}

// The location of instruction `instr` (code units). A negative instr (3.10's f_lasti of a frame
// that has not started) is the function's first line, as in CPython. Unknown: all -1.
inline SourceLocation locate(LineTableFormat format, const uint8_t* table, size_t size, int32_t first_line,
                             int32_t instr) {
  SourceLocation found;
  if (instr < 0) {
    found.line = found.end_line = first_line;
    return found;
  }
  uint32_t target = static_cast<uint32_t>(instr);
  for_each_range(format, table, size, first_line, [&](uint32_t start, uint32_t end, const SourceLocation& loc) {
    if (target >= start && target < end) {
      found = loc;
      return false;
    }
    return true;
  });
  return found;
}

// The line alone (-1 when unknown).
inline int32_t line_of(LineTableFormat format, const uint8_t* table, size_t size, int32_t first_line, int32_t instr) {
  return locate(format, table, size, first_line, instr).line;
}

}  // namespace asyncwatch::python_lines
