#include "symbols/python_symbols.h"

#include <asyncwatch/python_lines.h>

#include <algorithm>

namespace asyncwatch {

namespace {
std::string base_name(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
}  // namespace

PythonSymbols::PythonSymbols(const TraceFile& trace, std::string executable) : trace_(trace) {
  const PythonInfo& info = trace.python();
  if (info.present) interpreter_ = info.detail == "the executable" ? std::move(executable) : info.detail;
}

bool PythonSymbols::is_interpreter_module(const std::string& module) const {
  if (module.empty()) return false;
  if (!interpreter_.empty()) return module == interpreter_;
  // No PythonInfo (should not happen with Python frames): by name.
  std::string base = base_name(module);
  return base.rfind("libpython", 0) == 0 || base.rfind("python", 0) == 0;
}

const PythonSymbols::Code& PythonSymbols::code(uint32_t id) {
  auto [it, inserted] = codes_.try_emplace(id);
  Code& c = it->second;
  if (!inserted) return c;
  auto info = id ? trace_.py_code(id) : std::nullopt;
  if (!info) return c;
  c.known = true;
  c.filename = std::move(info->filename);
  c.qualname = std::move(info->qualname);
  c.first_line = info->first_line;
  python_lines::for_each_range(info->format, info->line_table.data(), info->line_table.size(), info->first_line,
                               [&](uint32_t start, uint32_t, const python_lines::SourceLocation& loc) {
                                 c.starts.emplace_back(start, loc.line);
                               });
  return c;
}

Frame PythonSymbols::resolve(const trace::PythonFrameRef& ref) {
  const Code& c = code(ref.code_id);
  Frame f;
  f.origin = FrameOrigin::Python;
  if (!c.known) {
    f.function = "<unknown Python code>";
    return f;
  }
  f.function = c.qualname;
  f.file = c.filename;
  f.line = c.first_line;  // not started (-1), or beyond a truncated table: the function's first line
  if (ref.instr >= 0) {
    auto it =
        std::upper_bound(c.starts.begin(), c.starts.end(), std::make_pair(static_cast<uint32_t>(ref.instr), INT32_MAX));
    if (it != c.starts.begin() && std::prev(it)->second > 0) f.line = std::prev(it)->second;
  }
  // The offset tells instructions of one line apart nowhere in a report; it stays 0.
  return f;
}

std::vector<Frame> PythonSymbols::merge(std::vector<Frame> native, const std::vector<trace::PythonFrameRef>& python,
                                        size_t borrowed_from) {
  if (python.empty()) return native;
  borrowed_from = std::min(borrowed_from, python.size());
  size_t at = native.size();
  for (size_t i = 0; i < native.size(); ++i)
    if (is_interpreter_module(native[i].module)) {
      at = i;
      break;
    }
  for (size_t i = at; i < native.size(); ++i)
    if (is_interpreter_module(native[i].module)) native[i].origin = FrameOrigin::Interpreter;
  std::vector<Frame> out;
  out.reserve(native.size() + python.size());
  out.insert(out.end(), std::make_move_iterator(native.begin()),
             std::make_move_iterator(native.begin() + static_cast<std::ptrdiff_t>(at)));
  // A stack of its own frames and a lender's: the own Python frames in place, the borrowed ones
  // last. All borrowed (a thread without Python frames): where the own ones would be, as before.
  const bool mixed = borrowed_from > 0 && borrowed_from < python.size();
  const size_t in_place = mixed ? borrowed_from : python.size();
  for (size_t i = 0; i < in_place; ++i) {
    out.push_back(resolve(python[i]));
    out.back().borrowed = i >= borrowed_from;
  }
  out.insert(out.end(), std::make_move_iterator(native.begin() + static_cast<std::ptrdiff_t>(at)),
             std::make_move_iterator(native.end()));
  for (size_t i = in_place; i < python.size(); ++i) {
    out.push_back(resolve(python[i]));
    out.back().borrowed = true;
  }
  return out;
}

std::optional<std::vector<Frame>> stack_frames(const TraceFile& trace, Symbolizer& symbols, PythonSymbols& python,
                                               uint32_t stack_id) {
  auto addrs = trace.stack(stack_id);
  if (!addrs) return std::nullopt;
  std::vector<trace::PythonFrameRef> py = trace.python_frames(stack_id);
  const size_t borrowed_from = trace.python_lender(stack_id) ? trace.python_own(stack_id) : py.size();
  return python.merge(symbols.expand(*addrs), py, borrowed_from);
}

}  // namespace asyncwatch
