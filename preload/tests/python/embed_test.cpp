// An interpreter linked statically into the program (libpython3.X.a), as some embedding
// applications do. Built twice: with the interpreter's symbols in the dynamic symbol table
// (--export-dynamic, as python3 itself is linked) python_frames must find the frames of the
// script below; without them (a "stripped" Python: nothing to find) it must find nothing, say so,
// and change nothing. Usage: aw_embed_{exported,stripped}; exit 0 when the expectation holds.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdio>

#include "asyncwatch/python_lines.h"
#include "stacks/python_frames.h"

using namespace asyncwatch;

namespace {

// awtest.walk(): releases the GIL, walks, resolves the innermost frame;
// returns (frames, end, innermost line, innermost qualname, availability).
PyObject* walk(PyObject*, PyObject*) {
  python_frames::PythonFrame frames[64];
  python_frames::WalkEnd end;
  uint32_t n;
  int line = -1;
  char qualname[256] = "";
  Py_BEGIN_ALLOW_THREADS n = python_frames::capture(frames, 64, &end);
  if (n > 0) {
    char file[1024];
    static uint8_t table[1 << 16];
    python_frames::CodeDescription d;
    d.filename = {file, sizeof file};
    d.qualname = {qualname, sizeof qualname - 1};
    d.line_table = {reinterpret_cast<char*>(table), sizeof table};
    if (python_frames::describe_code(frames[0], d)) {
      qualname[d.qualname.size] = 0;
      line = python_lines::line_of(d.line_table_format, table, d.line_table.size, d.first_line, frames[0].instr);
    }
  }
  Py_END_ALLOW_THREADS return Py_BuildValue("(IiisiK)", n, static_cast<int>(end), line, qualname,
                                            static_cast<int>(python_frames::status().availability),
                                            static_cast<unsigned long long>(python_frames::status().searches));
}

PyMethodDef methods[] = {{"walk", walk, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};
PyModuleDef module = {PyModuleDef_HEAD_INIT, "awtest", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};
PyObject* init_awtest() { return PyModule_Create(&module); }

#ifdef AW_EXPECT_FRAMES
const char* kScript =
    "import awtest, sys\n"
    "def inner(): return awtest.walk()\n"  // line 2
    "def outer(): return inner()\n"
    "n, end, line, name, availability, searches = outer()\n"
    "ok = n == 3 and end == 2 and line == 2 and name == 'inner' and availability == 3\n"
    "print('exported symbols:', 'ok' if ok else 'FAIL', (n, end, line, name, availability, searches))\n"
    "sys.exit(0 if ok else 1)\n";
#else
const char* kScript =
    "import awtest, sys\n"
    "def inner(): return awtest.walk()\n"
    "results = [inner() for _ in range(3)]\n"
    "n, end, line, name, availability, searches = results[-1]\n"
    "ok = all(r[0] == 0 for r in results) and end == 0 and availability == 1 and searches == 1\n"
    "print('no exported symbols:', 'ok' if ok else 'FAIL', results)\n"
    "sys.exit(0 if ok else 1)\n";
#endif

}  // namespace

int main() {
  PyImport_AppendInittab("awtest", init_awtest);
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  PyStatus s = PyConfig_SetBytesString(&config, &config.home, AW_PYTHON_HOME);
  if (!PyStatus_Exception(s)) s = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(s)) {
    std::fprintf(stderr, "cannot initialize Python: %s\n", s.err_msg ? s.err_msg : "?");
    return 2;
  }
  int rc = PyRun_SimpleString(kScript);  // sys.exit() ends the process with its status
  Py_FinalizeEx();
  return rc == 0 ? 0 : 1;
}
