// The prefix of _Py_DebugOffsets that python_frames.cpp compares with python_layout.h: the
// struct CPython 3.13+ puts first in _PyRuntime for debuggers (cookie "xdebugpy", the version,
// whether it is free-threaded, then offsets). Each version has its own: 3.14 added fields inside
// the groups. Also used by the fake CPython of the tests to state a consistent interpreter.
#pragma once

#include <cstdint>

namespace asyncwatch::python_layout {

// As in CPython 3.13's Include/internal/pycore_runtime.h.
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version, free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil, gil_runtime_state,
        gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
        co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
};

// 3.14's _Py_DebugOffsets: 3.13's with fields added inside its groups (Include/internal/
// pycore_debug_offsets.h of v3.14.0), up to the groups compared.
struct DebugOffsets314 {
  char cookie[8];
  uint64_t version, free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder,
        code_object_generation, tlbc_generation;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames, localspluskinds,
        co_code_adaptive, co_tlbc;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    uint64_t size, used, table, mask;
  } set_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
};

// offsetof(_Py_DebugOffsets, gc) in 3.14.7's headers: the groups compared end there.
static_assert(sizeof(DebugOffsets314) == 648);

}  // namespace asyncwatch::python_layout
