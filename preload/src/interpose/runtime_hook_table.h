// The one table of intercepted CUDA runtime entry points (runtime_hooks.cpp defines their wrappers,
// entry_stubs.cpp their exported stubs). Only the macro: the fallbacks are expanded in
// runtime_hooks.cpp, where their names are in scope.
#pragma once

// The rows X(symbol, api, record, per_thread, (parameters), (arguments), fallback-or-nullptr):
// generated from runtime_hooks.txt and the toolkit's cuda_runtime_api.h
// (preload/tools/gen_runtime_hooks.py), which also writes the runtime part of exports.map. A
// fallback (a lambda filling the record, or a Query) is evaluated in the wrapper's body, where
// `aw_per_thread` is the row's per_thread.
#include "runtime_hook_table.inc"

#define AW_RUNTIME_HOOKS(X) AW_RUNTIME_HOOK_ROWS(X)
