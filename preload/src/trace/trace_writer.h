// The trace file of this process: opened on first use (after the application's first intercepted
// call returned), mapped MAP_SHARED in 4 MiB segments, handed out to threads in kBlockSize blocks
// (docs/trace-format.md). Every file operation is made by the trace's file thread
// (trace_file.h); nothing here takes a lock: states change by compare-and-swap, and a thread that
// must wait for the file thread (the open, a segment not mapped yet, the close) sleeps on a futex,
// which is safe from a signal handler too. Everything here is off the hot path except
// claim_block's compare-and-swap and the state and generation loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "asyncwatch/trace_format.h"

namespace asyncwatch::trace_writer {

// Opens the trace on first use (called by the first record of the process, or of a forked
// child). Returns true while the trace accepts records. Never throws; on failure it warns once
// and tracing stays off for the rest of the process.
bool ensure_open() noexcept;
bool is_active() noexcept;

// The hot path's one load (docs/performance.md): non-zero bits say why calls are not recorded in
// place right now. kNotActive: the trace is not open and active (not opened yet, stopped, closed,
// disabled); kPaused: the application paused recording (control API). 0: record.
// kDisabled: ASYNCWATCH_DISABLE=1 (for good): the wrappers call through touching nothing else.
enum RecordingBits : uint32_t { kNotActive = 1u << 0, kPaused = 1u << 1, kDisabled = 1u << 2 };
// The exported stubs (preload/src/interpose/entry_stubs.cpp) test kDisabled by its assembler name.
extern std::atomic<uint32_t> g_not_recording __asm__("aw_not_recording");
inline bool recording_now() noexcept { return g_not_recording.load(std::memory_order_relaxed) == 0; }
inline bool disabled_now() noexcept { return g_not_recording.load(std::memory_order_relaxed) & kDisabled; }
// The control API paused (true) or resumed recording.
void set_paused_bit(bool paused) noexcept;
// Active, or about to be: the file thread is starting or creating the file for a call already made
// (a record written now waits for it).
bool is_active_or_opening() noexcept;
// Whether a call made now should be recorded as far as the trace is concerned (when !is_active()):
// the file is not created yet (the record's write creates it, after the call). `may_start`: start
// the file thread when it is not running yet (the caller is marked as in the library's own code:
// a signal handler on this thread does not reach this meanwhile). When tracing stopped after an
// output failure (disk full, RLIMIT_FSIZE, descriptor taken by the application) the call is
// counted in records_lost here and false is returned, so that every call of the application is
// either in the trace or counted.
bool accepts_calls_slow(bool may_start) noexcept;
// Whether a call that passes through unrecorded now (a signal handler's, see interpose/thread_state.h) is
// to be counted in records_lost. No side effect.
bool lost_calls_counted() noexcept;

// A fresh block for the calling thread, or nullptr (tracing stopped, disk full, closed).
// `index_out` gets the block's index in the file.
char* claim_block(uint64_t* index_out) noexcept;
// The calling thread will write no more into block `index` of this trace (trace_file::retire_block:
// its memory is given back).
void retire_block(uint64_t index) noexcept;

// The unused rest of blocks of threads that exited, for threads that start writing (thread_buffer.cpp:
// a new thread's first block is the rest of an exited thread's, after a Handoff record, so that
// short-lived threads do not take a 64 KiB block each). Up to kReusableBlocks are held, each taken
// by one thread (an exchange: no lock, safe from a signal handler); one of an earlier trace or
// process (fork) is never handed out.
inline constexpr int kReusableBlocks = 64;
// Block `index` of this trace, its records ending at byte `used`, will not be written by its thread
// again and may be continued by another. False when not kept (no room among the held ones, or the
// trace is not active): the caller retires it.
bool offer_block(uint64_t index, uint32_t used) noexcept;
// A block offered by an exited thread, or nullptr: *index_out gets its index, *used_out the end of its records.
char* claim_offered_block(uint64_t* index_out, uint32_t* used_out) noexcept;

// The open trace's header in the mapping (nullptr before it exists or after a fork): for the fields
// updated atomically in place (flight_ring.cpp's).
trace::FileHeader* header() noexcept;

// Counts calls whose record could not be written (FileHeader.records_lost, atomically in the
// mapping; counted in memory until the header exists, then added to it).
void count_lost(uint64_t n) noexcept;

// Recording paused (paused = true) or resumed at `now` (the control API, a capture range):
// kept in the header's pause fields, also when the pause began before the trace was opened (a
// capture range's trace opens paused). Calls are serialized by the caller.
void note_pause(bool paused, uint64_t now) noexcept;
// The capture range (interpose/capture_range.h): its settings, for the header, and each time it
// opened (open = true) or closed, at `at`. Serialized by the caller, as note_pause.
void set_capture(trace::CaptureMode mode, uint64_t delay_ns, uint64_t duration_ns) noexcept;
void note_capture(bool open, uint64_t at) noexcept;
// Whether the trace is still to be opened (no file asked for yet, no failure): a capture range
// opens it at the first call made outside the range, so that a range that never opens still
// leaves a trace that says so.
bool not_open_yet() noexcept;
// The instant (CLOCK_MONOTONIC ns, 0: none) at which the file thread forces every call onto the
// slow path (sets kPaused), where the capture range's end by --duration is applied.
void set_recording_deadline(uint64_t ns) noexcept;
uint64_t recording_deadline() noexcept;
// The file thread at the deadline: kPaused set, the deadline cleared, and `cb` (set_deadline_callback)
// run, which must never wait for a lock (it may try one).
void deadline_passed() noexcept;
using DeadlineCallback = void (*)() noexcept;
void set_deadline_callback(DeadlineCallback cb) noexcept;

// Identifies the trace the thread-local blocks belong to: bumped whenever they become invalid
// (fork child, reopen). Never 0 in a process that is ours; 0 in a child created by a raw
// clone()/clone3() without fork handlers (its memory page holding the value is wiped on fork).
// The generation lives alone in a page marked MADV_WIPEONFORK (trace_writer.cpp); read inline,
// several times per call.
struct alignas(4096) GenerationPage {
  std::atomic<uint32_t> generation;
  char pad[4096 - sizeof(std::atomic<uint32_t>)];
};
extern GenerationPage g_generation_page;
inline uint32_t generation() noexcept { return g_generation_page.generation.load(std::memory_order_acquire); }
// False in such a child (and then tracing stops in it for good, touching nothing of the parent's
// trace); true otherwise. Initializes the process's generation on first use.
bool process_is_ours() noexcept;
// The library's constructor: sets up the generation page (MADV_WIPEONFORK).
void init_process() noexcept;

// Clean close: end time, exit status, closed = kClosedCleanly, file truncated to the used size.
void close_clean(int exit_status) noexcept;
// Before an exec: mark closed (the image is about to be replaced and no destructor will run);
// exec_failed() undoes it when the exec returned.
void prepare_exec() noexcept;
void exec_failed() noexcept;
// pthread_atfork child handler: forget the parent's trace; the child opens its own on first use.
void after_fork_child(uint64_t parent_pid) noexcept;
// Stop writing for good (ASYNCWATCH_DISABLE=1 or a fatal error).
void disable() noexcept;

std::string path();

// Hook for lifecycle.cpp: called right after a new trace file is opened, from the opening
// thread, to write the module map.
using OpenedCallback = void (*)();
void set_opened_callback(OpenedCallback cb) noexcept;

// A ConfigFlags bit that became true after the start (kConfigNvtx: NVTX injected): set in the open
// trace's header (atomically, in the mapping) and in every header opened later (fork children).
void add_config_flags(uint32_t flags) noexcept;

// The executable's path as the open trace's header has it (read by the file thread), nullptr
// without a header or when it was cut to the header's field.
const char* executable_path() noexcept;

// For trace_file.cpp: the file thread created the file (`h`, its header) ahead of the request; the
// first writer takes it without waiting.
void file_ready(trace::FileHeader* h) noexcept;
// For trace_file.cpp, at the request: the file (`h`, its header) is there, or it failed (nullptr).
void file_opened(trace::FileHeader* h) noexcept;

}  // namespace asyncwatch::trace_writer
