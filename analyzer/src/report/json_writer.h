// A streaming JSON writer: the text is written as it is produced (buffered, to a FILE*), never
// built as a document, so a report's memory does not grow with its size. The output is byte
// for byte what nlohmann::json::dump(2, ' ', false, error_handler_t::replace) writes for the
// same document (2-space indentation, "key": value, [] and {} when empty; bytes that are not
// valid UTF-8 become U+FFFD), so the JSON and SARIF reports kept their exact form.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace asyncwatch {

class JsonWriter {
 public:
  // With `out` null the text is kept in memory (text()): for tests and small documents.
  explicit JsonWriter(std::FILE* out = nullptr);
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  ~JsonWriter();

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view k);

  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(bool b);
  void value(double d);
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  void value(T v) {
    if constexpr (std::is_signed_v<T>)
      integer(static_cast<int64_t>(v) < 0, unsigned_abs(static_cast<int64_t>(v)));
    else
      integer(false, static_cast<uint64_t>(v));
  }
  void null();

  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  void null_field(std::string_view k) {
    key(k);
    null();
  }
  // `s` as a string, or null when it is empty.
  void text_or_null(std::string_view k, const std::string& s) {
    key(k);
    if (s.empty())
      null();
    else
      value(s);
  }

  // {...} / "k": {...} with the fields `body` writes; "k": [...] with `each(item)` per item.
  template <class F>
  void object(F&& body) {
    begin_object();
    body();
    end_object();
  }
  template <class F>
  void object(std::string_view k, F&& body) {
    key(k);
    object(body);
  }
  template <class Range, class F>
  void array(std::string_view k, const Range& items, F&& each) {
    key(k);
    begin_array();
    for (const auto& item : items) each(item);
    end_array();
  }

  // Writes out what is buffered (done by the destructor too).
  void flush();
  const std::string& text() const {
    text_.assign(buf_.data(), size_);
    return text_;
  }

 private:
  static uint64_t unsigned_abs(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }
  void integer(bool negative, uint64_t magnitude);
  void before_value();
  void open(char c);
  void close(char c);
  void newline_indent(size_t depth);
  void raw(std::string_view s);
  void string(std::string_view s);
  // The buffer: bytes [0, size_) of buf_ are the text not yet written out. Appends are inline
  // (one capacity test); std::string's were out-of-line calls, most of a report's JSON time.
  char* room(size_t n) {
    if (__builtin_expect(buf_.size() - size_ < n, 0)) grow(n);
    return buf_.data() + size_;
  }
  void grow(size_t n);
  void put(char c) { *room(1) = c, ++size_; }
  void put(const char* s, size_t n) {
    char* p = room(n);
    if (n) std::memcpy(p, s, n);
    size_ += n;
  }
  void maybe_flush();

  std::FILE* out_;
  std::vector<char> buf_;  // its size is the capacity
  size_t size_ = 0;
  mutable std::string text_;  // text()'s
  struct Level {
    bool empty = true;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace asyncwatch
