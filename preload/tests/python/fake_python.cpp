// A fake CPython for python_frames_tests: exports the symbols python_frames looks for, filled at
// dlopen time according to $AW_FAKE_PYTHON, from garbage to a consistent 3.12 interpreter whose
// calling thread runs three Python frames. Built three times: with AW_FAKE_VERSIONLESS it exports
// neither Py_Version nor Py_Is (a CPython before 3.10); with AW_FAKE_MINOR=14 its consistent
// interpreter is a 3.14 (debug offsets, tagged f_executable, both kinds of entry frames).
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "stacks/python_debug_offsets.h"
#include "stacks/python_layout.h"

#define AW_FAKE_EXPORT __attribute__((visibility("default")))

extern "C" {
alignas(64) AW_FAKE_EXPORT unsigned char _PyRuntime[4096];
alignas(16) AW_FAKE_EXPORT unsigned char PyCode_Type[416];
alignas(16) AW_FAKE_EXPORT unsigned char PyType_Type[416];
alignas(16) AW_FAKE_EXPORT unsigned char PyUnicode_Type[416];
alignas(16) AW_FAKE_EXPORT unsigned char PyBytes_Type[416];
alignas(16) AW_FAKE_EXPORT unsigned char PyFrame_Type[416];
alignas(16) AW_FAKE_EXPORT unsigned char _Py_NoneStruct[16];
#ifndef AW_FAKE_VERSIONLESS
AW_FAKE_EXPORT unsigned long Py_Version;  // const in CPython; set by the constructor here
AW_FAKE_EXPORT int Py_Is(void* a, void* b) { return a == b; }
#endif
}

namespace {

using asyncwatch::python_layout::Layout;
#ifndef AW_FAKE_MINOR
#define AW_FAKE_MINOR 12
#endif
const Layout& L = *asyncwatch::python_layout::find(AW_FAKE_MINOR);
static_assert(AW_FAKE_MINOR == 12 || AW_FAKE_MINOR == 14, "make_runtime states debug offsets of 3.14 only");

template <class T>
void put(void* base, size_t offset, T value) {
  std::memcpy(static_cast<unsigned char*>(base) + offset, &value, sizeof value);
}
uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

void set_version(unsigned long v) {
#ifndef AW_FAKE_VERSIONLESS
  Py_Version = v;
#else
  (void)v;
#endif
}

void make_type(unsigned char* type, const char* name, int64_t basicsize, int64_t itemsize) {
  put(type, L.object_type, addr(PyType_Type));
  put(type, L.type_name, addr(name));
  put(type, L.type_basicsize, basicsize);
  put(type, L.type_itemsize, itemsize);
}

// Objects of the fake interpreter, one heap block each (as CPython allocates them).
void* object(size_t size) {
  void* p = std::aligned_alloc(16, (size + 15) / 16 * 16);
  std::memset(p, 0, size);
  return p;
}

// A compact str of `kind` 1, 2 or 4 holding `chars` (code points).
void* make_str(const uint32_t* chars, size_t n, unsigned kind) {
  bool ascii = kind == 1;
  for (size_t i = 0; i < n; ++i) ascii = ascii && chars[i] < 128;
  size_t data = ascii ? L.unicode_ascii_data : L.unicode_compact_data;
  auto* s = static_cast<unsigned char*>(object(data + (n + 1) * kind));
  put(s, L.object_type, addr(PyUnicode_Type));
  put(s, L.unicode_length, static_cast<int64_t>(n));
  uint32_t state =
      (kind << L.unicode_kind_shift) | (1u << L.unicode_compact_bit) | (ascii ? 1u << L.unicode_ascii_bit : 0u);
  put(s, L.unicode_state, state);
  for (size_t i = 0; i < n; ++i) {
    if (kind == 1) s[data + i] = static_cast<unsigned char>(chars[i]);
    if (kind == 2) put(s, data + 2 * i, static_cast<uint16_t>(chars[i]));
    if (kind == 4) put(s, data + 4 * i, chars[i]);
  }
  return s;
}

void* make_ascii(const char* text) {
  uint32_t chars[256];
  size_t n = std::strlen(text);
  for (size_t i = 0; i < n; ++i) chars[i] = static_cast<unsigned char>(text[i]);
  return make_str(chars, n, 1);
}

void* make_bytes(const void* data, size_t n) {
  auto* b = static_cast<unsigned char*>(object(L.bytes_data + n + 1));
  put(b, L.object_type, addr(PyBytes_Type));
  put(b, L.object_size, static_cast<int64_t>(n));
  std::memcpy(b + L.bytes_data, data, n);
  return b;
}

// A code object of `units` code units whose line table puts instruction i on line first + i.
void* make_code(void* filename, void* qualname, int32_t first, int64_t units) {
  auto* c = static_cast<unsigned char*>(object(L.code_size + 2 * units));
  put(c, L.object_type, addr(PyCode_Type));
  put(c, L.object_size, units);
  put(c, L.code_filename, addr(filename));
  put(c, L.code_name, addr(qualname));
  put(c, L.code_qualname, addr(qualname));
  put(c, L.code_firstlineno, first);
  put(c, L.code_firsttraceable, 0);
  // One "no column" entry per unit, each one line further (form 13, one unit, svarint +1 = 2).
  unsigned char table[512];
  size_t n = 0;
  for (int64_t i = 0; i < units && n + 2 <= sizeof table; ++i) {
    table[n++] = 0x80 | (13 << 3);
    table[n++] = i == 0 ? 0 : 2;
  }
  put(c, L.code_linetable, addr(make_bytes(table, n)));
  return c;
}

void* make_frame(void* code, void* back, int32_t instr, uint8_t owner) {
  auto* f = static_cast<unsigned char*>(object(80));
  // 3.14: a _PyStackRef, here with its "deferred" tag bit set.
  put(f, L.frame_code, addr(code) | (L.minor >= 14 ? 1u : 0u));
  put(f, L.frame_back, addr(back));
  put(f, L.frame_instr, addr(code) + L.code_adaptive + 2 * static_cast<int64_t>(instr));
  put(f, L.frame_owner, owner);
  return f;
}

// A page that is not mapped (mapped, then unmapped).
void* unmapped() {
  void* p = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(p, 4096);
  return p;
}

unsigned char* g_interp;
pthread_key_t g_key;

// The calling thread's state: this thread, the main interpreter, a cframe pointing at `frame`.
void* make_tstate(void* frame, uint64_t thread_id, uint64_t interp) {
  auto* ts = static_cast<unsigned char*>(object(256));
  put(ts, L.tstate_interp, interp);
  put(ts, L.tstate_thread_id, thread_id);
  if (L.cframe_current_frame == asyncwatch::python_layout::kAbsent) {  // 3.13+: no _PyCFrame
    put(ts, L.tstate_frame, addr(frame));
    return ts;
  }
  auto* cframe = static_cast<unsigned char*>(object(16));
  put(cframe, L.cframe_current_frame, addr(frame));
  put(ts, L.tstate_frame, addr(cframe));
  return ts;
}

void make_runtime(bool initialized) {
  g_interp = static_cast<unsigned char*>(object(64));
  put(_PyRuntime, L.runtime_initialized, initialized ? 1 : 0);
  put(_PyRuntime, L.runtime_interpreters_main, addr(g_interp));
  pthread_key_create(&g_key, nullptr);
  put(_PyRuntime, L.runtime_tss + L.tss_initialized, 1);
  put(_PyRuntime, L.runtime_tss + L.tss_key, static_cast<unsigned>(g_key));
  if (L.minor >= 14) {  // the debug offsets python_frames compares with the table
    asyncwatch::python_layout::DebugOffsets314 d{};
    std::memcpy(d.cookie, "xdebugpy", 8);
    d.version = 0x030e07f0;  // as set_version below
    d.runtime_state.finalizing = L.runtime_finalizing;
    d.interpreter_state.threads_head = L.interp_threads_head;
    d.interpreter_state.ceval_gil = L.interp_gil;
    d.interpreter_state.gil_runtime_state = 512;
    d.interpreter_state.gil_runtime_state_holder = 512 + L.gil_last_holder;
    d.interpreter_state.gil_runtime_state_locked = 512 + L.gil_locked;
    d.thread_state.next = L.tstate_next;
    d.thread_state.interp = L.tstate_interp;
    d.thread_state.current_frame = L.tstate_frame;
    d.thread_state.thread_id = L.tstate_thread_id;
    d.thread_state.native_thread_id = L.tstate_native_thread_id;
    d.interpreter_frame.previous = L.frame_back;
    d.interpreter_frame.executable = L.frame_code;
    d.interpreter_frame.instr_ptr = L.frame_instr;
    d.interpreter_frame.owner = L.frame_owner;
    d.code_object.size = L.code_size;
    d.code_object.filename = L.code_filename;
    d.code_object.name = L.code_name;
    d.code_object.qualname = L.code_qualname;
    d.code_object.linetable = L.code_linetable;
    d.code_object.firstlineno = L.code_firstlineno;
    d.code_object.co_code_adaptive = L.code_adaptive;
    d.pyobject.ob_type = L.object_type;
    d.type_object.tp_name = L.type_name;
    d.bytes_object.ob_sval = L.bytes_data;
    d.unicode_object.state = L.unicode_state;
    d.unicode_object.length = L.unicode_length;
    d.unicode_object.asciiobject_size = L.unicode_ascii_data;
    std::memcpy(_PyRuntime, &d, sizeof d);
  }
}

void make_types() {
  make_type(PyType_Type, "type", 0, 0);
  make_type(PyCode_Type, "code", L.code_adaptive, 2);
  make_type(PyUnicode_Type, "str", 0, 0);
  make_type(PyBytes_Type, "bytes", 0, 0);
  make_type(PyFrame_Type, "frame", 0, 0);
}

// main (line 10+2) -> middle (20+1) -> [a C-stack shim] -> inner (30+3), innermost first.
void* three_frames(void* filename) {
  void* inner = make_code(filename, make_ascii("inner"), 30, 8);
  void* middle = make_code(filename, make_ascii("Outer.middle"), 20, 8);
  void* outer = make_code(filename, make_ascii("<module>"), 10, 8);
  void* f_outer = make_frame(outer, nullptr, 2, 0);
  void* f_middle = make_frame(middle, f_outer, 1, 0);
  void* shim = make_frame(outer, f_middle, 0, static_cast<uint8_t>(L.owned_by_cstack));
  if (L.minor >= 14) {
    // 3.14 has two owners of frames without code (INTERPRETER, then CSTACK), and 3.13+ frames
    // whose f_executable is None.
    shim = make_frame(outer, shim, 0, static_cast<uint8_t>(L.owned_by_cstack + 1));
    shim = make_frame(_Py_NoneStruct, shim, 0, 0);
  }
  return make_frame(inner, shim, 3, 0);
}

__attribute__((constructor)) void fake_python_init() {
  const char* v = std::getenv("AW_FAKE_PYTHON");
  std::string_view variant = v ? v : "";
  const uint64_t self = static_cast<uint64_t>(pthread_self());
  set_version(AW_FAKE_MINOR == 14 ? 0x030e07f0 : 0x030c01f0);  // 3.14.7 or 3.12.1 final
  if (variant == "zero") return;
  if (variant == "garbage") {
    for (unsigned char* a : {_PyRuntime, PyCode_Type, PyType_Type, PyUnicode_Type, PyBytes_Type, PyFrame_Type}) {
      std::memset(a, 0xa5, a == _PyRuntime ? sizeof _PyRuntime : sizeof PyCode_Type);
    }
    return;
  }
  if (variant == "py39") return set_version(0x030912f0);
  if (variant == "py315") return set_version(0x030f00f0);
  if (variant == "alpha") return set_version(0x030c00a1);
  if (variant == "py313t" || variant == "py313-offsets" || variant == "py314t" || variant == "py314-offsets") {
    // 3.13+'s _PyRuntime starts with _Py_DebugOffsets: cookie, version, free_threaded, offsets.
    const uint32_t version = variant.substr(0, 5) == "py313" ? 0x030d00f0 : 0x030e00f0;
    set_version(version);
    std::memcpy(_PyRuntime, "xdebugpy", 8);
    put(_PyRuntime, 8, uint64_t{version});
    put(_PyRuntime, 16, uint64_t{variant.back() == 't' ? 1u : 0u});
    return;
  }
  make_types();
  if (variant == "wrong-code-size") {
    put(PyCode_Type, L.type_basicsize, static_cast<int64_t>(L.code_adaptive + 8));
    return;
  }
  if (variant == "uninitialized") return make_runtime(false);
  make_runtime(true);
  void* filename = make_ascii("/fake/train.py");
  if (variant == "no-thread-state") return;
  if (variant == "tss-unmapped") {
    pthread_setspecific(g_key, unmapped());
    return;
  }
  if (variant == "frame-unmapped") {
    pthread_setspecific(g_key, make_tstate(unmapped(), self, addr(g_interp)));
    return;
  }
  if (variant == "code-unmapped") {
    pthread_setspecific(g_key, make_tstate(make_frame(unmapped(), nullptr, 0, 0), self, addr(g_interp)));
    return;
  }
  if (variant == "wrong-thread") {
    pthread_setspecific(g_key, make_tstate(three_frames(filename), self + 64, addr(g_interp)));
    return;
  }
  if (variant == "other-interpreter") {
    pthread_setspecific(g_key, make_tstate(three_frames(filename), self, addr(g_interp) + 64));
    return;
  }
  if (variant == "shim-cycle") {
    void* code = make_code(filename, make_ascii("f"), 1, 4);
    void* a = make_frame(code, nullptr, 0, static_cast<uint8_t>(L.owned_by_cstack));
    void* b = make_frame(code, a, 0, static_cast<uint8_t>(L.owned_by_cstack));
    put(a, L.frame_back, addr(b));
    pthread_setspecific(g_key, make_tstate(b, self, addr(g_interp)));
    return;
  }
  if (variant == "frame-cycle") {
    void* code = make_code(filename, make_ascii("f"), 1, 4);
    void* a = make_frame(code, nullptr, 1, 0);
    void* b = make_frame(code, a, 2, 0);
    put(a, L.frame_back, addr(b));
    pthread_setspecific(g_key, make_tstate(b, self, addr(g_interp)));
    return;
  }
  if (variant == "instr-out-of-range") {
    void* code = make_code(filename, make_ascii("f"), 1, 4);
    pthread_setspecific(g_key, make_tstate(make_frame(code, nullptr, 9, 0), self, addr(g_interp)));
    return;
  }
  if (variant == "invalid-after-one") {  // a good innermost frame, then one outside its bytecode
    void* code = make_code(filename, make_ascii("f"), 1, 4);
    void* bad = make_frame(code, nullptr, 9, 0);
    pthread_setspecific(g_key, make_tstate(make_frame(code, bad, 1, 0), self, addr(g_interp)));
    return;
  }
  if (variant == "text-kinds") {
    // Latin-1, UCS-2 with a surrogate escape (byte 0xff) and a lone surrogate, UCS-4.
    const uint32_t latin1[] = {'/', 0xe9, '.', 'p', 'y'};
    const uint32_t ucs2[] = {0x65e5, 0x672c, 0xdcff, 0xd800};
    const uint32_t ucs4[] = {'f', 0x1f600};
    void* code = make_code(make_str(latin1, 5, 1), make_str(ucs4, 2, 4), 5, 4);
    void* code2 = make_code(make_str(ucs2, 4, 2), make_ascii("g"), 7, 4);
    void* outer = make_frame(code2, nullptr, 0, 0);
    pthread_setspecific(g_key, make_tstate(make_frame(code, outer, 0, 0), self, addr(g_interp)));
    return;
  }
  void* ts = make_tstate(three_frames(filename), self, addr(g_interp));
  pthread_setspecific(g_key, ts);
  if (variant == "finalizing-other") put(_PyRuntime, L.runtime_finalizing, addr(g_interp));
  if (variant == "finalizing-self") put(_PyRuntime, L.runtime_finalizing, addr(ts));
  // "valid": nothing more
}

}  // namespace
