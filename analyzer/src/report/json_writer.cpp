#include "report/json_writer.h"

#include "report/ascii_words.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace asyncwatch {

namespace {
constexpr size_t kFlushAt = 1 << 16;

// Printable ASCII other than '"' and '\\' is written as it is by nlohmann's serializer too.
bool plain_ascii(std::string_view s) {
  using namespace ascii_words;
  return no_word(s, [](uint64_t w) { return has_high(w) | has_below(w, 0x20) | has_byte(w, '"') | has_byte(w, '\\'); });
}
// memcpy for the short strings of a report (keys, numbers, indentation) without the library
// call: two overlapping word copies.
inline void copy_bytes(char* d, const char* s, size_t n) {
  if (n > 16) {
    std::memcpy(d, s, n);
  } else if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}
}  // namespace

JsonWriter::JsonWriter(std::FILE* out) : out_(out) {}

JsonWriter::~JsonWriter() { flush(); }

void JsonWriter::flush() {
  if (!out_ || size_ == 0) return;
  std::fwrite(buf_.data(), 1, size_, out_);  // errors surface in ferror (OutputFile::commit)
  size_ = 0;
}

void JsonWriter::grow(size_t n) { buf_.resize(std::max(buf_.size() * 2, std::max<size_t>(size_ + n, 2 * kFlushAt))); }

void JsonWriter::maybe_flush() {
  if (out_ && size_ >= kFlushAt) flush();
}

void JsonWriter::raw(std::string_view s) {
  char* p = room(s.size());
  copy_bytes(p, s.data(), s.size());
  size_ += s.size();
  maybe_flush();
}

void JsonWriter::newline_indent(size_t depth) {
  static constexpr char kSpaces[] = "                                                                ";
  size_t n = 2 * depth;
  char* p = room(n + 1);
  *p = '\n';
  if (n <= sizeof kSpaces - 1)
    copy_bytes(p + 1, kSpaces, n);
  else
    std::memset(p + 1, ' ', n);
  size_ += n + 1;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level& l = stack_.back();
  if (!l.empty) put(',');
  l.empty = false;
  newline_indent(stack_.size());
}

void JsonWriter::key(std::string_view k) {
  before_value();
  string(k);
  put(": ", 2);
  after_key_ = true;
}

void JsonWriter::open(char c) {
  before_value();
  put(c);
  stack_.push_back(Level{});
}

void JsonWriter::close(char c) {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline_indent(stack_.size());
  put(c);
  maybe_flush();
}

void JsonWriter::begin_object() { open('{'); }
void JsonWriter::end_object() { close('}'); }
void JsonWriter::begin_array() { open('['); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::string(std::string_view s) {
  if (plain_ascii(s)) {
    char* p = room(s.size() + 2);
    *p = '"';
    copy_bytes(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    size_ += s.size() + 2;
    maybe_flush();
    return;
  }
  // Escapes and the replacement of invalid UTF-8 exactly as nlohmann's serializer does them.
  raw(nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void JsonWriter::value(std::string_view s) {
  before_value();
  string(s);
}

void JsonWriter::value(bool b) {
  before_value();
  raw(b ? "true" : "false");
}

void JsonWriter::value(double d) {
  before_value();
  raw(nlohmann::json(d).dump());  // the same shortest round-trip form ("0.0", "1e-05")
}

void JsonWriter::integer(bool negative, uint64_t magnitude) {
  before_value();
  char text[24];
  char* p = text;
  if (negative) *p++ = '-';
  p = std::to_chars(p, text + sizeof text, magnitude).ptr;
  raw(std::string_view(text, static_cast<size_t>(p - text)));
}

void JsonWriter::null() {
  before_value();
  raw("null");
}

}  // namespace asyncwatch
