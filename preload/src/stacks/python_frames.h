// The calling thread's Python frames, read from CPython's own structures without the GIL, without
// calling into the interpreter, without allocating and without locks (docs/python-frames.md).
//
// capture() is for the hot path: it returns raw ids, (code object address, instruction index),
// innermost first. describe_code() turns a code object into its file, qualified name, first line
// and raw line table, once per code object, while the code object is still alive (during the
// same intercepted call, on the same thread); asyncwatch/python_lines.h maps an instruction index
// to its line from those raw bytes, in the preload library or offline in the analyzer.
//
// In a process without a (supported) CPython everything returns "nothing" after one search of the
// loaded objects' exported symbols, done by the first call and never again (see
// note_objects_loaded). Works while the extension that called CUDA released the GIL: only this
// thread's own frames are read, and they do not change while it is inside a C call.
//
// Thread safety: every function may be called from any number of threads at once; the state is
// a few atomics written by the one search. The search (first capture, or find_interpreter) runs
// dl_iterate_phdr, which takes glibc's loader lock: make it at trace start, not from a signal
// handler; a capture on another thread meanwhile returns 0 frames (kNoPython) instead of
// waiting. After it, capture is one pthread_getspecific (lock-free in glibc) and loads (or
// process_vm_readv calls until the layout is proven): no lock, no allocation, errno kept.
#pragma once

#include <sys/uio.h>

#include <cstdint>

#include "asyncwatch/python_lines.h"

namespace asyncwatch::python_frames {

struct PythonFrame {
  uint64_t code;        // address of the PyCodeObject (alive while the frame is)
  int32_t instr;        // instruction index in code units; -1: the frame has not started (3.10)
  uint32_t code_check;  // fingerprint of the code object's identity: with `code`, the key under
                        // which a code object is described once (an address can be reused by
                        // another code object after the first one is freed)
};

// Why a walk stopped.
enum class WalkEnd : uint8_t {
  kNoPython,       // no supported interpreter in the process, or it is not initialized
  kNoThreadState,  // this thread has no usable Python thread state: a thread that never ran
                   // Python, a subinterpreter's thread, a thread other than the finalizing one
                   // while the runtime is finalized
  kComplete,       // the outermost frame was reached
  kDepthLimit,     // `max` frames were stored and more follow
  kInvalid,        // a pointer failed validation: the frames before it are stored
  kElided,         // deeper than `max` with `outer` asked: the innermost max - outer frames and
                   // the last `outer` read (the outermost, unless the walk stopped at an invalid
                   // frame), the ones between left out
};

// Stores up to `max` frames of the calling thread, innermost first; returns how many.
// Until one walk in the process has found frames, walks read through process_vm_readv (a read
// that fails instead of faulting: 60-330 us a walk); then plain loads (~10 ns a frame), every
// pointer still checked (range, alignment, the type of each code and frame object, the
// instruction inside its bytecode, depth and cycle caps). If a checked read fails, the layout
// is not this interpreter's: Python frames are turned off for the process (status() says why).
// `outer` (at most 16, less than `max`): a stack deeper than `max` keeps its `outer` outermost
// frames in the last slots (kElided) instead of stopping at `max` (kDepthLimit); the walk goes on
// for at most 1,024 frames (~10 ns a frame past the limit with plain loads).
uint32_t capture(PythonFrame* out, uint32_t max, WalkEnd* end = nullptr, uint32_t outer = 0) noexcept;

// The same walk with every read through process_vm_readv (tests and benchmarks: ~1-2 us a read).
uint32_t capture_checked(PythonFrame* out, uint32_t max, WalkEnd* end = nullptr, uint32_t outer = 0) noexcept;

// Where borrowed frames came from.
struct Lender {
  uint32_t native_tid = 0;  // the lender's Linux thread id (tstate->native_thread_id), 0 unknown (3.10)
  bool running = false;     // it held the GIL (ran bytecode) rather than waiting in a C call
};

// For a thread without a Python thread state (a framework's own native thread: XLA's copy and
// callback threads) in a process whose interpreter is initialized: the frames of another thread
// of the main interpreter, "borrowed" (docs/python-frames.md, "Borrowed frames"). Among the
// thread states of interp->threads that have a frame, the first rule that applies picks:
//   1. the main thread, if it is not holding the GIL (it waits in a C call: for this work, usually);
//   2. else the one other thread not holding the GIL (none if several: ambiguous);
//   3. else, when no thread with frames waits, the thread holding the GIL (running bytecode).
// Also for a thread whose own state has no frames (a native thread that attached one and runs no
// Python; the caller's own walk found none), and for one Python did not create that runs Python
// (its frames first, these after them: stack_capture.cpp); the calling thread is never its own lender. Every read goes through process_vm_readv (other threads free their states and frames under us);
// at most 64 thread states are looked at; nothing while the runtime finalizes. Returns 0 (and
// `end` kNoThreadState) when no thread qualifies, the calling thread has a state of its own, or
// there is no interpreter. Costs 1-2 reads a thread and about one read a frame (~2 us each).
uint32_t capture_borrowed(PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end = nullptr) noexcept;

// What one borrowed walk read (every region and its bytes) and what it found, kept by the thread
// that walked. A walk is a function of the bytes it reads and of a few values it loads directly
// (this thread's own state, the main interpreter, the main thread, _finalizing): when a later
// read of the same regions gives the same bytes, a new walk would find the same frames. Reading
// them again is one process_vm_readv instead of one a frame (docs/python-frames.md, "Borrowed
// frames": what it costs), so a thread that borrows often (autograd's engine threads while
// loss.backward() waits) confirms its last walk instead of walking again.
struct BorrowMemo {
  static constexpr uint32_t kMaxRegions = 128, kMaxBytes = 16 * 1024, kMaxFrames = 64;
  bool valid = false;  // the walk found frames and every region it read is here
  uint32_t max = 0, regions = 0, bytes = 0;
  uint64_t own_state = 0, main_interp = 0, main_thread = 0;  // the inputs not read through regions
  iovec remote[kMaxRegions];
  uint32_t n = 0;
  WalkEnd end = WalkEnd::kNoPython;
  Lender lender;
  // The GIL's region among them (gil_region < regions): compared for the holder the walk derived
  // from it, not byte for byte (its lock word flips each time the borrowing thread, which never
  // lends, takes or drops the GIL: autograd's engine thread running a compiled backward).
  uint32_t gil_region = kMaxRegions, gil_offset = 0;
  uint16_t gil_locked = 0, gil_last_holder = 0;  // field offsets in that region
  PythonFrame frames[kMaxFrames];
  alignas(8) uint8_t data[kMaxBytes];     // the bytes read, region after region
  alignas(8) uint8_t scratch[kMaxBytes];  // where confirm_borrowed reads them again
};

// capture_borrowed that also fills `memo` (left invalid when the walk found no frames, read more
// than the memo holds, or a read failed).
uint32_t capture_borrowed(PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end, BorrowMemo* memo) noexcept;

// The frames of `memo`'s walk when the memory it read is unchanged (one process_vm_readv and a
// compare), at most `max` of them (kDepthLimit when that cut them; a larger `max` than the walk's
// only when the walk did not stop at its own); else 0 and the memo is dropped (invalid). Same
// contract as capture_borrowed otherwise: any thread, no lock, no allocation, errno kept.
// With `reread` false, only the four values loaded directly are checked (the interpreter not
// finalizing, the same thread states): the frames as the last read found them, without reading
// them again (the caller bounds how old that read may be: stack_capture.cpp, kReuseNs).
uint32_t confirm_borrowed(BorrowMemo* memo, PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end,
                          bool reread = true) noexcept;

// A caller-provided buffer that describe_code fills. `needed` lets a caller size a trace record
// before copying: describe once with small (or zero-capacity) buffers, then again into the record.
struct Buffer {
  char* data = nullptr;
  uint32_t capacity = 0;
  uint32_t size = 0;       // bytes written
  uint32_t needed = 0;     // bytes the whole value takes (== size unless truncated)
  bool truncated = false;  // the value did not fit (text is cut at a character boundary)
};

struct CodeDescription {
  Buffer filename;            // co_filename, UTF-8 (undecodable bytes the interpreter kept as
                              // surrogate escapes come back as the original bytes, as os.fsencode does)
  Buffer qualname;            // co_qualname (3.11+), co_name in 3.10 (it has no qualified name)
  Buffer line_table;          // co_linetable, raw bytes
  int32_t first_line = 0;     // co_firstlineno
  uint32_t instructions = 0;  // length of the bytecode in code units
  python_lines::LineTableFormat line_table_format = python_lines::LineTableFormat::kUnknown;
};

// Describes the code object of a frame that capture() returned on this thread during the
// current call (the frame keeps it alive). False when it cannot be read, is no longer the
// code object that was captured (code_check differs), or no complete walk in the process has yet
// shown the layout to be right (describe_code reads with plain loads only).
bool describe_code(const PythonFrame& frame, CodeDescription& out) noexcept;

// describe_code for a borrowed frame: every read through process_vm_readv (the lending thread may
// free the code object meanwhile: the fingerprint check then fails, or a read does), any thread.
bool describe_code_checked(const PythonFrame& frame, CodeDescription& out) noexcept;

// Whether `address` (a thread's start routine) lies in the object that holds the interpreter (libpython,
// or the executable): a thread Python created. False without a ready interpreter. Runs
// dl_iterate_phdr (the loader's lock): once per thread, not per call.
bool in_interpreter(uint64_t address) noexcept;

enum class Availability : uint8_t {
  kNotSearched,  // no capture yet (or note_objects_loaded after a failed search)
  kNoPython,     // no loaded object exports _PyRuntime
  kUnsupported,  // a CPython that is not supported or did not pass the start-up checks
  kReady,
};

struct Status {
  Availability availability;
  uint32_t version_hex;  // PY_VERSION_HEX of the interpreter found (3.10: 0x030a0000), or 0
  const char* detail;    // why not ready, or the object that defines _PyRuntime; static storage
  uint64_t searches;     // how many times the loaded objects were searched
};
Status status() noexcept;

// Searches now if no search was made yet (e.g. at trace start, to record the version); capture()
// does the same on its first call.
Availability find_interpreter() noexcept;

// After dlopen: a process that had no Python may have one now. Makes the next capture search
// again if the last search found none; does nothing otherwise.
void note_objects_loaded() noexcept;

// In the child after fork (a pthread_atfork child handler): a search another thread of the parent
// was making when it forked will never finish in the child; the next capture searches again.
void reset_after_fork() noexcept;

}  // namespace asyncwatch::python_frames
