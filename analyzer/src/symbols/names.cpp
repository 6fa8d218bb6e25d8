#include "symbols/names.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace asyncwatch {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void trim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  s.erase(0, i);
}

// "operator()", "operator<", "operator<<=", "operator->", ...: the characters after "operator"
// that belong to the operator's name, so that they are not taken for brackets.
size_t operator_suffix_length(const std::string& s, size_t after) {
  static const char* const ops[] = {"()", "[]", "<<=", ">>=", "<=>", "->*",   "<<",      ">>",
                                    "<=", ">=", "->",  "<",   ">",   "new[]", "delete[]"};
  for (const char* op : ops) {
    size_t n = std::strlen(op);
    if (s.compare(after, n, op) == 0) return n;
  }
  return 0;
}

// Marks the characters that are part of an "operator..." name (so bracket matching skips them).
std::string operator_mask(const std::string& s) {
  std::string mask(s.size(), ' ');
  for (size_t p = s.find("operator"); p != std::string::npos; p = s.find("operator", p + 1)) {
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(s[p - 1])) || s[p - 1] == '_')) continue;
    size_t after = p + 8;
    if (after < s.size() && s[after] == ' ') ++after;
    size_t n = operator_suffix_length(s, after);
    for (size_t i = after; i < after + n; ++i) mask[i] = 'o';
  }
  return mask;
}

bool opens(char c) { return c == '(' || c == '<' || c == '{' || c == '['; }
bool closes(char c) { return c == ')' || c == '>' || c == '}' || c == ']'; }

// Index of the bracket that opens the group closing at `close` (scanning backwards), npos if none.
size_t matching_open(const std::string& s, const std::string& mask, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (mask[i] != ' ') continue;
    if (closes(s[i]))
      ++depth;
    else if (opens(s[i]) && --depth == 0)
      return i;
  }
  return std::string::npos;
}

}  // namespace

std::string name_without_signature(const std::string& demangled) {
  std::string s = demangled;
  // GCC's clone suffixes: " [clone .cold]", " [clone .constprop.0]"
  for (size_t c; (c = s.rfind(" [clone ")) != std::string::npos && ends_with(s, "]");) s.resize(c);
  trim(s);
  // cv- and ref-qualifiers of member functions
  for (bool again = true; again;) {
    again = false;
    for (const char* q : {" const", " volatile", " &&", " &", " noexcept"})
      if (ends_with(s, q)) {
        s.resize(s.size() - std::strlen(q));
        again = true;
      }
  }
  std::string mask = operator_mask(s);
  // The argument list: the last top-level "(...)" (not part of an operator name).
  if (!s.empty() && s.back() == ')' && mask.back() == ' ') {
    size_t open = matching_open(s, mask, s.size() - 1);
    if (open != std::string::npos && open > 0) {
      s.resize(open);
      mask.resize(open);
    }
  }
  trim(s);
  mask.resize(s.size());
  // The return type: everything up to the last space outside any brackets.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (mask[i] != ' ') continue;
    if (opens(s[i]))
      ++depth;
    else if (closes(s[i]))
      --depth;
    else if (s[i] == ' ' && depth == 0)
      start = i + 1;
  }
  // "operator new" / "operator delete" / conversion operators carry a space of their own.
  size_t op = s.rfind("operator ");
  if (op != std::string::npos && op < start) {
    size_t back = op;
    while (back > 0 && s[back - 1] != ' ') --back;
    start = std::min(start, back);
  }
  return s.substr(start);
}

std::string qualified_name(const std::string& demangled) {
  std::string s = name_without_signature(demangled);
  std::string mask = operator_mask(s);
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (mask[i] == ' ' && c == '<') {
      ++depth;
      continue;
    }
    if (mask[i] == ' ' && c == '>' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) out += c;
  }
  return out;
}

std::string shorten_middle(const std::string& name, size_t max) {
  static const char kEllipsis[] = "...";
  const size_t ell = sizeof kEllipsis - 1;
  if (name.size() <= max) return name;
  if (max <= ell) return std::string(kEllipsis, max);
  size_t keep = max - ell;
  size_t head = (keep + 1) / 2;
  size_t tail = keep - head;
  // Cut between tokens when one is near ("ns::f<a, b, ...c>", not "ns::f<a, b, c...d>"), and
  // never inside a UTF-8 sequence (continuation bytes are 10xxxxxx).
  auto separator = [&](size_t i) { return std::strchr(" ,<>():", name[i]) != nullptr; };
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(name[i]) & 0xC0) == 0x80; };
  constexpr size_t kWindow = 24;
  for (size_t h = head; h > 0 && head - h < kWindow && h > head / 2; --h)
    if (separator(h - 1)) {
      head = h;
      break;
    }
  while (head > 0 && head < name.size() && continuation(head)) --head;
  size_t tail_start = name.size() - tail;
  for (size_t t = tail_start; t < name.size() && t - tail_start < kWindow && t < name.size() - tail / 2; ++t)
    if (separator(t)) {
      tail_start = t;
      break;
    }
  while (tail_start < name.size() && continuation(tail_start)) ++tail_start;
  return name.substr(0, head) + kEllipsis + name.substr(tail_start);
}

}  // namespace asyncwatch
