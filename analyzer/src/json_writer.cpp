#include "json_writer.h"

#include <nlohmann/json.hpp>

#include <charconv>

namespace asyncwatch {

namespace {
constexpr size_t kFlushAt = 1 << 16;

// Printable ASCII other than '"' and '\\' is written as it is by nlohmann's serializer too.
bool plain_ascii(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return false;
  }
  return true;
}
}  // namespace

JsonWriter::JsonWriter(std::FILE* out) : out_(out) {}

JsonWriter::~JsonWriter() { flush(); }

void JsonWriter::flush() {
  if (!out_ || buf_.empty()) return;
  std::fwrite(buf_.data(), 1, buf_.size(), out_);  // errors surface in ferror (OutputFile::commit)
  buf_.clear();
}

void JsonWriter::raw(std::string_view s) {
  buf_.append(s.data(), s.size());
  if (out_ && buf_.size() >= kFlushAt) flush();
}

void JsonWriter::newline_indent(size_t depth) {
  buf_ += '\n';
  buf_.append(2 * depth, ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Level& l = stack_.back();
  if (!l.empty) buf_ += ',';
  l.empty = false;
  newline_indent(stack_.size());
}

void JsonWriter::key(std::string_view k) {
  before_value();
  string(k);
  buf_ += ": ";
  after_key_ = true;
}

void JsonWriter::open(char c) {
  before_value();
  buf_ += c;
  stack_.push_back(Level{});
}

void JsonWriter::close(char c) {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline_indent(stack_.size());
  buf_ += c;
  if (out_ && buf_.size() >= kFlushAt) flush();
}

void JsonWriter::begin_object() { open('{'); }
void JsonWriter::end_object() { close('}'); }
void JsonWriter::begin_array() { open('['); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::string(std::string_view s) {
  if (plain_ascii(s)) {
    buf_ += '"';
    raw(s);
    buf_ += '"';
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
