// Tests on the bytes of a string eight at a time, for the reports' checks of whether a text needs
// escaping (JSON strings, printable(), HTML text): most of a report's strings need none, and a
// byte at a time those checks were a good part of writing a report (the JSON report's records per
// second and the HTML report's time over it, docs/performance.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace asyncwatch::ascii_words {

constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;

// Nonzero when a byte of `w` is below `n` (n <= 0x80; exact as a whole-word answer).
inline uint64_t has_below(uint64_t w, uint8_t n) { return (w - k01 * n) & ~w & k80; }
// Nonzero when a byte of `w` is `c`.
inline uint64_t has_byte(uint64_t w, uint8_t c) { return has_below(w ^ (k01 * c), 1); }
// Nonzero when a byte of `w` is 0x80 or above.
inline uint64_t has_high(uint64_t w) { return w & k80; }

// Whether `bad(word)` is zero for every word of `s`: its 8-byte words, then the rest as one word
// made only of its own bytes (overlapping what was tested, or repeating them), so that a test
// of "some byte is X" answers for the bytes of `s` alone.
template <class Bad>
inline bool no_word(std::string_view s, Bad bad) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t w;
  for (; n >= 8; p += 8, n -= 8) {
    std::memcpy(&w, p, sizeof w);
    if (bad(w)) return false;
  }
  if (n == 0) return true;
  if (s.size() >= 8) {  // the last 8 bytes
    std::memcpy(&w, p + n - 8, sizeof w);
  } else if (n >= 4) {  // two 4-byte halves that overlap
    uint32_t lo, hi;
    std::memcpy(&lo, p, sizeof lo);
    std::memcpy(&hi, p + n - 4, sizeof hi);
    w = uint64_t{lo} | uint64_t{hi} << 32;
  } else {  // the first byte everywhere, then the middle and last ones
    auto b = [&](size_t i) { return uint64_t{static_cast<uint8_t>(p[i])}; };
    w = (k01 * b(0) & ~uint64_t{0xffff00}) | b(n / 2) << 8 | b(n - 1) << 16;
  }
  return !bad(w);
}

}  // namespace asyncwatch::ascii_words
