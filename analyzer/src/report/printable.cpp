#include "report/printable.h"

#include "report/ascii_words.h"

#include <cstdint>
#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch {

namespace {

// Length of the valid UTF-8 sequence at s[i] (overlong forms and surrogates are invalid), 0
// when the byte there starts none; its code point in *cp.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return i + k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  unsigned c = b(0);
  if (c >= 0xc2 && c <= 0xdf && cont(1)) {
    *cp = ((c & 0x1fu) << 6) | (b(1) & 0x3fu);
    return 2;
  }
  if (c >= 0xe0 && c <= 0xef) {
    unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    if (cont(1, lo, hi) && cont(2)) {
      *cp = ((c & 0x0fu) << 12) | ((b(1) & 0x3fu) << 6) | (b(2) & 0x3fu);
      return 3;
    }
    return 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    if (cont(1, lo, hi) && cont(2) && cont(3)) {
      *cp = ((c & 0x07u) << 18) | ((b(1) & 0x3fu) << 12) | ((b(2) & 0x3fu) << 6) | (b(3) & 0x3fu);
      return 4;
    }
  }
  return 0;
}

// C1 controls (a terminal may take U+009B for CSI), and the characters that reorder text
// (bidirectional overrides: "Trojan Source") or break lines.
bool is_unsafe_code_point(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// No byte below 0x20, from 0x7f up, a backslash, nor (quoted) a '"'.
bool plain(std::string_view s, bool quoted) {
  using namespace ascii_words;
  const uint8_t quote = quoted ? '"' : '\\';  // (unquoted: the backslash tested twice)
  return no_word(s, [quote](uint64_t w) {
    return has_high(w) | has_below(w, 0x20) | has_byte(w, 0x7f) | has_byte(w, '\\') | has_byte(w, quote);
  });
}

}  // namespace

std::string printable(std::string_view s, bool quoted) {
  if (plain(s, quoted)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '\\')
        out += "\\\\";
      else if (quoted && c == '"')
        out += "\\\"";
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default: out += fmt::format(FMT_COMPILE("\\x{:02x}"), c); break;
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) {
      out += fmt::format(FMT_COMPILE("\\x{:02x}"), c);
      ++i;
    } else if (is_unsafe_code_point(cp)) {
      out += fmt::format(FMT_COMPILE("\\u{:04x}"), cp);
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace asyncwatch
