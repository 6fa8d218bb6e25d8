/* Prints, for the CPython whose headers it is compiled against, the offsets and sizes that
 * preload/src/stacks/python_layout.h states for that version, one "name value" per line.
 * python_layout_check runs it and compares (test python.layout-3.X). Needs the internal
 * headers (Py_BUILD_CORE), which every CPython install ships under include/python3.X/internal. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif

#define P(name, expr) printf("%s %zu\n", name, (size_t)(expr))

/* Bit position of a one-field mask in PyASCIIObject.state (bitfields have no offsetof). */
static unsigned state_bits(PyASCIIObject* o) {
  unsigned u;
  memcpy(&u, &o->state, sizeof u);
  return u;
}

int main(void) {
  P("version.minor", PY_MINOR_VERSION);
  P("runtime.initialized", offsetof(_PyRuntimeState, initialized));
  P("runtime.finalizing", offsetof(_PyRuntimeState, _finalizing));
  P("runtime.interpreters_main", offsetof(_PyRuntimeState, interpreters.main));
#if PY_VERSION_HEX < 0x030C0000
  P("runtime.tss", offsetof(_PyRuntimeState, gilstate.autoTSSkey));
#else
  P("runtime.tss", offsetof(_PyRuntimeState, autoTSSkey));
#endif
  P("tss.initialized", offsetof(Py_tss_t, _is_initialized));
  P("tss.key", offsetof(Py_tss_t, _key));
  /* Other threads' states (borrowed frames): the list, the main thread, the GIL's holder. */
  P("runtime.main_thread", offsetof(_PyRuntimeState, main_thread));
#if PY_VERSION_HEX < 0x030B0000
  P("interp.threads_head", offsetof(PyInterpreterState, tstate_head));
#else
  P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
  P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX < 0x030C0000
  P("runtime.gil", offsetof(_PyRuntimeState, ceval.gil));
#else
  P("interp.gil", offsetof(PyInterpreterState, ceval.gil));
#endif
  P("gil.last_holder", offsetof(struct _gil_runtime_state, last_holder));
  P("gil.locked", offsetof(struct _gil_runtime_state, locked));
  P("tstate.next", offsetof(PyThreadState, next));
  P("tstate.interp", offsetof(PyThreadState, interp));
  P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX < 0x030B0000
  P("tstate.frame", offsetof(PyThreadState, frame));
  P("frame.back", offsetof(PyFrameObject, f_back));
  P("frame.code", offsetof(PyFrameObject, f_code));
  P("frame.lasti", offsetof(PyFrameObject, f_lasti));
  P("code.code", offsetof(PyCodeObject, co_code));
#else
#if PY_VERSION_HEX < 0x030D0000
  P("tstate.frame", offsetof(PyThreadState, cframe));
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
  P("frame.code", offsetof(_PyInterpreterFrame, f_code));
  P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
  P("tstate.frame", offsetof(PyThreadState, current_frame));
  P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
  P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
  P("frame.back", offsetof(_PyInterpreterFrame, previous));
  P("frame.owner", offsetof(_PyInterpreterFrame, owner));
  P("frame.owned_by_generator", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030E0000
  /* The first owner of frames without Python code: 3.14 added FRAME_OWNED_BY_INTERPRETER (3)
   * before FRAME_OWNED_BY_CSTACK (4); _PyFrame_IsIncomplete tests owner >= it. */
  P("frame.owned_by_cstack", FRAME_OWNED_BY_INTERPRETER);
#elif PY_VERSION_HEX >= 0x030C0000
  P("frame.owned_by_cstack", FRAME_OWNED_BY_CSTACK);
#endif
  P("code.qualname", offsetof(PyCodeObject, co_qualname));
  P("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
  P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
  P("code.size", sizeof(PyCodeObject));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("object.type", offsetof(PyObject, ob_type));
  P("object.size", offsetof(PyVarObject, ob_size));
  P("type.name", offsetof(PyTypeObject, tp_name));
  P("type.basicsize", offsetof(PyTypeObject, tp_basicsize));
  P("type.itemsize", offsetof(PyTypeObject, tp_itemsize));
  P("bytes.data", offsetof(PyBytesObject, ob_sval));
  P("unicode.length", offsetof(PyASCIIObject, length));
  P("unicode.state", offsetof(PyASCIIObject, state));
  P("unicode.ascii_data", sizeof(PyASCIIObject));
  P("unicode.compact_data", sizeof(PyCompactUnicodeObject));
  {
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 1;
    P("unicode.kind_shift", __builtin_ctz(state_bits(&o)));
    memset(&o, 0, sizeof o);
    o.state.compact = 1;
    P("unicode.compact_bit", __builtin_ctz(state_bits(&o)));
    memset(&o, 0, sizeof o);
    o.state.ascii = 1;
    P("unicode.ascii_bit", __builtin_ctz(state_bits(&o)));
  }
  return 0;
}
