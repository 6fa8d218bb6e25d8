// The trace file of this process: lazily created, mmap'ed MAP_SHARED in segments, handed out
// to threads in kBlockSize blocks (docs/trace-format.md). Everything here is off the hot path
// except claim_block's one compare-and-swap.
#pragma once

#include <cstdint>
#include <string>

namespace asyncwatch::trace_writer {

// Opens the trace on first use (called by the first record of the process, or of a forked
// child). Returns true while the trace accepts records. Never throws; on failure it warns once
// and tracing stays off for the rest of the process.
bool ensure_open() noexcept;
bool is_active() noexcept;

// A fresh block for the calling thread, or nullptr (tracing stopped, disk full, closed).
// `index_out` gets the block's index in the file.
char* claim_block(uint64_t* index_out) noexcept;

// Counts records that could not be written (FileHeader.records_lost, atomically in the mapping).
void count_lost(uint64_t n) noexcept;
// Counts one lost record when tracing stopped after an output failure (disk full, RLIMIT_FSIZE):
// every call the application makes from then on is counted, so a cut-off trace says so.
void count_lost_if_stopped() noexcept;

// The application paused (paused = true) or resumed recording (control API): kept in the
// header's pause fields while a trace is open. Calls are serialized by the caller.
void note_pause(bool paused, uint64_t now) noexcept;

// Bumped whenever thread-local block pointers become invalid (fork child, reopen).
uint32_t generation() noexcept;

// Clean close: end time, exit status, closed = kClosedCleanly, file truncated to the used size.
void close_clean(int exit_status) noexcept;
// Before execve: mark closed (the image is about to be replaced and no destructor will run);
// exec_failed() undoes it when execve returned.
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

}  // namespace asyncwatch::trace_writer
