// Where CPython keeps what python_frames.cpp reads, per minor version: the one table of struct
// offsets, taken from each version's headers (include/python3.X/internal/, x86-64, release build,
// default GIL build). The test python.layout-3.X compiles tests/python/layout_probe.c against the
// installed headers and compares every field here with offsetof() (python_layout_check.cpp);
// docs/python-frames.md says which field is read for what, and where the 3.14 row was checked.
#pragma once

#include <cstdint>

#include "asyncwatch/python_lines.h"

namespace asyncwatch::python_layout {

inline constexpr uint16_t kAbsent = 0xffff;  // the field does not exist in this version

enum class FrameKind : uint8_t {
  kFrameObject,       // 3.10: PyThreadState.frame -> PyFrameObject (f_back, f_code, int f_lasti)
  kInterpreterFrame,  // 3.11+: _PyInterpreterFrame (previous, code, instruction pointer, owner)
};

struct Layout {
  uint8_t minor;  // 3.<minor>
  FrameKind frame_kind;
  python_lines::LineTableFormat line_table;

  // _PyRuntimeState (the exported symbol _PyRuntime)
  uint16_t runtime_initialized;        // int: Py_Initialize done
  uint16_t runtime_finalizing;         // PyThreadState*: the thread finalizing the runtime, or NULL
  uint16_t runtime_interpreters_main;  // PyInterpreterState*: the main interpreter
  uint16_t runtime_tss;                // Py_tss_t: PyGILState's thread-specific key (autoTSSkey)
  uint16_t tss_initialized;            // Py_tss_t._is_initialized (int)
  uint16_t tss_key;                    // Py_tss_t._key (pthread_key_t)

  // PyThreadState
  uint16_t tstate_interp;         // PyInterpreterState*
  uint16_t tstate_thread_id;      // unsigned long: pthread_self() of its thread
  uint16_t tstate_frame;          // 3.10 frame, 3.11/3.12 cframe (_PyCFrame*), 3.13 current_frame
  uint16_t cframe_current_frame;  // _PyCFrame.current_frame (3.11, 3.12), else kAbsent

  // The frame: PyFrameObject (3.10) or _PyInterpreterFrame (3.11+)
  uint16_t frame_back;          // f_back / previous
  uint16_t frame_code;          // f_code / f_code / f_executable (3.13: PyObject*, 3.14: _PyStackRef,
                                //   a tagged pointer: python_frames.cpp clears its low bits)
  uint16_t frame_lasti;         // 3.10: int f_lasti (code units), else kAbsent
  uint16_t frame_instr;         // 3.11/3.12 prev_instr, 3.13 instr_ptr (_Py_CODEUNIT*), else kAbsent
  uint16_t frame_owner;         // char owner (3.11+), else kAbsent
  uint16_t owned_by_generator;  // FRAME_OWNED_BY_GENERATOR (3.11+)
  uint16_t owned_by_cstack;     // the first owner value of frames that are not Python code (entry
                                //   shims): FRAME_OWNED_BY_CSTACK (3.12, 3.13), FRAME_OWNED_BY_INTERPRETER
                                //   (3.14, then FRAME_OWNED_BY_CSTACK = 4); 3.12+, else kAbsent

  // PyCodeObject (PyCode_Type's tp_basicsize is code_size in 3.10, code_adaptive in 3.11+: checked
  // at start-up)
  uint16_t code_size;
  uint16_t code_firstlineno;     // int
  uint16_t code_filename;        // str
  uint16_t code_name;            // str
  uint16_t code_qualname;        // str (3.11+), else kAbsent
  uint16_t code_linetable;       // bytes
  uint16_t code_bytecode;        // 3.10: co_code (bytes), else kAbsent
  uint16_t code_firsttraceable;  // int (3.11+): instructions before it make a frame incomplete
  uint16_t code_adaptive;        // 3.11+: the bytecode, inline (ob_size code units)

  // PyObject, PyVarObject, PyTypeObject, bytes, str
  uint16_t object_type;
  uint16_t object_size;
  uint16_t type_name;
  uint16_t type_basicsize;
  uint16_t type_itemsize;
  uint16_t bytes_data;
  uint16_t unicode_length;        // Py_ssize_t: code points
  uint16_t unicode_state;         // the bitfield word: kind, compact, ascii
  uint16_t unicode_ascii_data;    // sizeof(PyASCIIObject): the characters of a compact ASCII str
  uint16_t unicode_compact_data;  // sizeof(PyCompactUnicodeObject): those of another compact str
  uint16_t unicode_kind_shift;
  uint16_t unicode_compact_bit;
  uint16_t unicode_ascii_bit;

  // Other threads of the main interpreter (borrowed frames, docs/python-frames.md "Borrowed
  // frames"): the list of thread states, the main thread's id, and the GIL's holder.
  uint16_t runtime_main_thread;      // unsigned long: pthread id of the main thread
  uint16_t interp_threads_head;      // PyThreadState*: 3.10 tstate_head, 3.11+ threads.head (newest first)
  uint16_t tstate_next;              // PyThreadState*: the next (older) thread state
  uint16_t tstate_native_thread_id;  // unsigned long: the Linux thread id (3.11+), else kAbsent
  uint16_t runtime_gil;              // 3.10/3.11: _PyRuntime.ceval.gil (embedded), else kAbsent
  uint16_t interp_gil;               // 3.12+: PyInterpreterState.ceval.gil (a pointer), else kAbsent
  uint16_t gil_last_holder;          // _gil_runtime_state.last_holder (PyThreadState*)
  uint16_t gil_locked;               // _gil_runtime_state.locked (int)
};

// clang-format off
inline constexpr Layout kLayouts[] = {
  {10, FrameKind::kFrameObject, python_lines::LineTableFormat::kCpython310,
   12, 16, 40, 584, 0, 4,
   16, 176, 24, kAbsent,
   24, 32, 96, kAbsent, kAbsent, kAbsent, kAbsent,
   176, 40, 104, 112, kAbsent, 120, 48, kAbsent, kAbsent,
   8, 16, 24, 32, 40, 32, 16, 32, 48, 72, 2, 5, 6,
   72, 8, 8, kAbsent, 352, kAbsent, 8, 16},
  {11, FrameKind::kInterpreterFrame, python_lines::LineTableFormat::kCpython311,
   16, 24, 48, 592, 0, 4,
   16, 152, 56, 8,
   48, 32, kAbsent, 56, 69, 1, kAbsent,
   192, 72, 112, 120, 128, 136, kAbsent, 168, 184,
   8, 16, 24, 32, 40, 32, 16, 32, 48, 72, 2, 5, 6,
   80, 16, 8, 160, 360, kAbsent, 8, 16},
  {12, FrameKind::kInterpreterFrame, python_lines::LineTableFormat::kCpython311,
   16, 24, 48, 1544, 0, 4,
   16, 136, 56, 0,
   8, 0, kAbsent, 56, 70, 1, 3,
   200, 68, 112, 120, 128, 136, kAbsent, 176, 192,
   8, 16, 24, 32, 40, 32, 16, 32, 40, 56, 2, 5, 6,
   64, 72, 8, 144, kAbsent, 384, 8, 16},
  {13, FrameKind::kInterpreterFrame, python_lines::LineTableFormat::kCpython311,
   600, 608, 640, 2160, 0, 4,
   16, 152, 72, kAbsent,
   8, 0, kAbsent, 56, 70, 1, 3,
   208, 68, 112, 120, 128, 136, kAbsent, 184, 200,
   8, 16, 24, 32, 40, 32, 16, 32, 40, 56, 2, 5, 6,
   656, 7344, 8, 160, kAbsent, 16, 8, 16},
  {14, FrameKind::kInterpreterFrame, python_lines::LineTableFormat::kCpython311,
   776, 784, 816, 2336, 0, 4,
   16, 152, 72, kAbsent,
   8, 0, kAbsent, 56, 74, 1, 3,
   216, 68, 112, 120, 128, 136, kAbsent, 192, 208,
   8, 16, 24, 32, 40, 32, 16, 32, 40, 56, 2, 5, 6,
   832, 7344, 8, 160, kAbsent, 16, 8, 16},
};
// clang-format on

// The layout of 3.<minor>, or nullptr for a version not in the table.
constexpr const Layout* find(unsigned minor) {
  for (const Layout& l : kLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

// Every offset with the name layout_probe.c prints for it (kAbsent: the probe prints nothing).
template <class F>
void for_each_field(const Layout& l, F&& f) {
  f("version.minor", l.minor);
  f("runtime.initialized", l.runtime_initialized);
  f("runtime.finalizing", l.runtime_finalizing);
  f("runtime.interpreters_main", l.runtime_interpreters_main);
  f("runtime.tss", l.runtime_tss);
  f("tss.initialized", l.tss_initialized);
  f("tss.key", l.tss_key);
  f("tstate.interp", l.tstate_interp);
  f("tstate.thread_id", l.tstate_thread_id);
  f("tstate.frame", l.tstate_frame);
  f("cframe.current_frame", l.cframe_current_frame);
  f("frame.back", l.frame_back);
  f("frame.code", l.frame_code);
  f("frame.lasti", l.frame_lasti);
  f("frame.instr", l.frame_instr);
  f("frame.owner", l.frame_owner);
  f("frame.owned_by_generator", l.owned_by_generator);
  f("frame.owned_by_cstack", l.owned_by_cstack);
  f("code.size", l.code_size);
  f("code.firstlineno", l.code_firstlineno);
  f("code.filename", l.code_filename);
  f("code.name", l.code_name);
  f("code.qualname", l.code_qualname);
  f("code.linetable", l.code_linetable);
  f("code.code", l.code_bytecode);
  f("code.firsttraceable", l.code_firsttraceable);
  f("code.code_adaptive", l.code_adaptive);
  f("object.type", l.object_type);
  f("object.size", l.object_size);
  f("type.name", l.type_name);
  f("type.basicsize", l.type_basicsize);
  f("type.itemsize", l.type_itemsize);
  f("bytes.data", l.bytes_data);
  f("unicode.length", l.unicode_length);
  f("unicode.state", l.unicode_state);
  f("unicode.ascii_data", l.unicode_ascii_data);
  f("unicode.compact_data", l.unicode_compact_data);
  f("unicode.kind_shift", l.unicode_kind_shift);
  f("unicode.compact_bit", l.unicode_compact_bit);
  f("unicode.ascii_bit", l.unicode_ascii_bit);
  f("runtime.main_thread", l.runtime_main_thread);
  f("interp.threads_head", l.interp_threads_head);
  f("tstate.next", l.tstate_next);
  f("tstate.native_thread_id", l.tstate_native_thread_id);
  f("runtime.gil", l.runtime_gil);
  f("interp.gil", l.interp_gil);
  f("gil.last_holder", l.gil_last_holder);
  f("gil.locked", l.gil_locked);
}

}  // namespace asyncwatch::python_layout
