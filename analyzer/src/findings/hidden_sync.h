// hidden-sync: the decision that an explicit synchronization was not written by the user. It needs
// the call site (known only once the trace has been read), so explicit-sync findings are turned into
// hidden-sync ones when their stacks are symbolized (analysis.cpp).
#pragma once

#include "symbols/call_site.h"
#include "findings/finding.h"

namespace asyncwatch::rules {

// True when `f` (an explicit-sync finding with its call site and stack) synchronized inside a
// framework or vendor library that the user's frame called: a library frame lies between the CUDA
// runtime's frames and the call site. Library frames that only forward a call the user spelled
// out (ctypes, libffi, the Python interpreter) do not count; a library Python frame does
// (e.g. torch/_tensor.py), unless it is a function whose job is to wait (its name has
// "synchronize" or "block_until_ready": torch.cuda.synchronize() is explicit). The verdict rests on
// what the trace records, never on the analyzing machine's files: Python frames (named in the
// trace) and the API the record names, not the names of native library frames (read from the
// modules where the report is made). `driver_call`: the record's API is a driver entry point; a
// driver synchronize called by native code directly under the user's Python line, with no library
// Python frame between (a binding's Stream.synchronize(): CuPy's, which reaches cuStreamSynchronize
// through the CUDA runtime linked into it), is the user's explicit wait.
// A synchronization made by a thread without Python for the line of another thread (borrowed frames,
// Finding::python_lender) is hidden, unless the lender was inside a waiting function (JAX's
// block_until_ready, whose wait XLA's threads make): that is the user's explicit wait.
// Without a stack or without a user call site: false.
bool is_hidden_sync(const Finding& f, const CallSitePolicy& policy, bool driver_call = false);

}  // namespace asyncwatch::rules
