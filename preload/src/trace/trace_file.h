// The trace's file thread: the only code that touches the trace file's descriptor (docs/interception.md,
// "File descriptors"). It creates the file, maps and fills its header, grows and maps the 4 MiB
// segments (ahead of need), and truncates the file at the end. Application threads never make a
// file operation of ours: they ask this thread and wait for it on a futex, which cannot deadlock
// (the thread takes no lock, allocates nothing and runs no application code once started), also
// from a signal handler. Used by trace_writer.cpp only.
//
// The descriptor lives in the thread's own descriptor table (unshare(CLONE_FILES), the copies of
// the application's descriptors closed at once), so the application can neither see, close nor
// replace it, and it never occupies one of the application's descriptor numbers. Where unshare is
// not allowed (a container's seccomp profile), the descriptor is in the process's table, moved to a
// high number (F_DUPFD_CLOEXEC), never 0/1/2, and its identity (st_dev/st_ino) is checked before
// every use: if the application closed or replaced it, tracing stops and the descriptor is left alone.
#pragma once

#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "futex.h"

namespace asyncwatch::trace_file {

// The file grows in segments: segment 0 is small (most processes write a few KiB: a short run must
// not pay for allocating, pre-faulting and truncating megabytes) and faults in as it is written;
// the others are kSegmentBytes, mapped ahead and pre-faulted by the file thread.
constexpr uint64_t kFirstSegmentBytes = 256ull << 10;
constexpr uint64_t kSegmentBytes = 4ull << 20;
constexpr uint64_t kFirstSegmentBlocks = kFirstSegmentBytes / trace::kBlockSize;
constexpr uint64_t kBlocksPerSegment = kSegmentBytes / trace::kBlockSize;
constexpr uint64_t kMaxSegments = 16384;  // 64 GiB of trace
static_assert(kFirstSegmentBytes % trace::kBlockSize == 0 && kFirstSegmentBlocks >= 2);

constexpr uint64_t segment_bytes(uint64_t seg) { return seg == 0 ? kFirstSegmentBytes : kSegmentBytes; }
constexpr uint64_t segment_blocks(uint64_t seg) { return segment_bytes(seg) / trace::kBlockSize; }
// Index of the first block of segment `seg` (= blocks in the segments before it).
constexpr uint64_t segment_first_block(uint64_t seg) {
  return seg == 0 ? 0 : kFirstSegmentBlocks + (seg - 1) * kBlocksPerSegment;
}
constexpr uint64_t segment_of_block(uint64_t block) {
  return block < kFirstSegmentBlocks ? 0 : 1 + (block - kFirstSegmentBlocks) / kBlocksPerSegment;
}
static_assert(segment_of_block(segment_first_block(3)) == 3 && segment_of_block(segment_first_block(3) - 1) == 2);

// Starts the thread (its descriptor table made its own). With a table of its own it creates the
// trace file at once (header filled, segment 0 mapped) and calls trace_writer::file_ready with the
// header; otherwise it waits for request_open. `parent_pid`: the header's (0 unless a fork child).
// False when no thread could be started (error_text() says why).
bool start(uint64_t parent_pid) noexcept;
// Asks the thread for the trace file: created now if it was not made at the start; the thread then
// calls trace_writer::file_opened with the header, or nullptr: no trace (error_text() says why,
// nothing is left open). A header without segment 0 (a full disk) is passed too: the first
// claim then fails. Does not wait.
void request_open() noexcept;

// Segment `seg`, mapped: waits for the thread when it is not mapped yet. nullptr when it cannot be
// mapped; that is final (error_text() says why) and the thread has released the file.
char* segment(uint64_t seg) noexcept;
// Segment `seg` if it is mapped now, else nullptr (never waits).
char* mapped_segment(uint64_t seg) noexcept;
// Asks the thread to map (and populate) segments below `count` ahead of need; does not wait.
void map_ahead(uint64_t count) noexcept;
// Blocks mapped so far (segments mapped without a gap from 0, times blocks per segment).
uint64_t mapped_blocks() noexcept;
// Block `block` will not be written again (its thread moved on to a new block, or exited). The
// file thread takes retired blocks out of the process's memory: a segment whose blocks are all
// retired is unmapped (and its write-back to the file started), the retired blocks of a segment
// still in use are dropped from the mapping (MADV_DONTNEED: the data stays in the file). So the
// process's memory does not grow with its trace. Safe from a signal handler.
void retire_block(uint64_t block) noexcept;
// A flight-recorder ring block (flight_ring.h) that its thread let go: dropped from the process's
// memory (MADV_DONTNEED) at the thread's next wake-up, its segment left mapped (the block is written
// again when it is reused; so a segment holding a ring block is never unmapped: its ring blocks are
// never retired). Safe from a signal handler.
void drop_ring_block(uint64_t block) noexcept;
// Wakes the thread so that it looks at its requests and the recording deadline again.
void wake() noexcept;

// Ends the file: truncated to `bytes` (UINT64_MAX: not truncated) when the thread still holds it,
// descriptor released, thread gone. Waits, with `patience` (nullptr: for as long as it takes):
// false when it ran out first (the file stays as it is, its mapping too). Nothing when the thread
// is already gone.
bool close(uint64_t bytes, trace_sync::Patience* patience = nullptr) noexcept;
// At the process's end, when the blocks used (`bytes`, as for close) and mapped are within the first
// segment and the descriptor is the thread's own: the file is left at its length (at most the first segment's 256 KiB past the blocks used;
// readers go by the blocks' magic) and the thread is asked to release it without waiting for it:
// truncating took 0.1-0.3 ms (ext4, up to 13 ms on a busy disk) of every short process's exit.
// False (nothing done) otherwise: then close().
bool close_at_exit(uint64_t bytes) noexcept;
// At the process's end before the trace was published (trace_writer::file_ready): whether it is
// published now, the file thread having been naming it (waited for: a link and a store); else
// the file made ahead is never named and goes with the process, so that no trace is left that
// could not be closed (a signal handler's exit() during the first call). A naming not done when
// `patience` runs out (a file system that does not answer) is not waited for further: false, and
// the file thread may still name the file, unclosed, as if the process had crashed.
bool settle_unnamed(trace_sync::Patience* patience) noexcept;

// The program could not start a thread or process (EAGAIN: RLIMIT_NPROC, or the system's thread
// limit): the file thread ends to leave its slot to it. Waits (at most kFileWaitNs) until the
// kernel has released the thread; the file stays as it is, mapped: writers go on in the segments
// mapped so far, a claim past them stops the trace (error_text() says why), the end closes it
// without truncating. True when the thread is gone (the program may try again); false when
// there was none of this process's serving the trace.
bool give_back_thread() noexcept;

// Why the last open or mapping failed (one line), "" if none.
const char* error_text() noexcept;
// The trace's path ("" before a successful open).
const char* path() noexcept;
// Whether the descriptor is in the thread's own table (false: the process's, checked before use).
bool private_descriptor() noexcept;

// The command line for the header (argv joined by spaces), from the library's constructor.
void set_command_line(int argc, char** argv) noexcept;

// In a fork child: the parent's thread does not exist here; drop its mappings and state, and the
// child's copy of a descriptor the parent held in the process's table (the child's first call
// starts a thread of its own).
void forget_after_fork() noexcept;

}  // namespace asyncwatch::trace_file
