// Python frames of a trace as Frames: each (code object, instruction) of a stack's Python frames
// becomes the function, file and line the interpreter was at (the line tables are decoded once per
// code object), and they join the native frames at the place where the interpreter ran them.
#pragma once

#include "symbols/symbolizer.h"
#include "read/trace_reader.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

class PythonSymbols {
 public:
  // `executable`: the traced program (the interpreter when PythonInfo says "the executable").
  PythonSymbols(const TraceFile& trace, std::string executable);

  // The frame of one Python frame reference. Unknown code objects give "<unknown Python code>".
  Frame resolve(const trace::PythonFrameRef& ref);

  // The native frames of a stack (inline frames expanded) with its Python frames: they stand in
  // place of the interpreter's frames that ran them, i.e. before the first frame of the
  // interpreter's module (marked FrameOrigin::Interpreter, as are the later ones), or after the
  // last native frame when the interpreter has no frame in the stack. No Python frames: `native`.
  // `borrowed_from`: the index of the first of `python` borrowed from another thread (the stack's
  // lender; python.size() when none): those are marked borrowed and go after all of the stack's own
  // frames, native and Python (the lender waited for the whole thread's work: it is outer to it).
  std::vector<Frame> merge(std::vector<Frame> native, const std::vector<trace::PythonFrameRef>& python,
                           size_t borrowed_from);

  // True for native frames of the interpreter (by module path).
  bool is_interpreter_module(const std::string& module) const;

 private:
  struct Code {
    bool known = false;
    std::string filename, qualname;
    int32_t first_line = 0;
    std::vector<std::pair<uint32_t, int32_t>> starts;  // (first instruction, line), sorted
  };
  const Code& code(uint32_t id);
  const TraceFile& trace_;
  std::string interpreter_;  // module path of the interpreter, "" when unknown
  std::unordered_map<uint32_t, Code> codes_;
};

// A stack of the trace by id, as frames (native, inline expanded, and Python). nullopt: no such stack.
std::optional<std::vector<Frame>> stack_frames(const TraceFile& trace, Symbolizer& symbols, PythonSymbols& python,
                                               uint32_t stack_id);

}  // namespace asyncwatch
