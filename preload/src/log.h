// The library's own messages, one line each on the standard error the process started with:
// "asyncwatch[PID]: warning: ...". Never called on the hot path: only at trace open, on the first
// failure and for invalid settings. Allocation-free and lock-free (a line is formatted on the stack
// and written with one write(2) system call, which is not a cancellation point), so a message can
// come from any thread, also from code a signal handler interrupted. Nothing is written when
// descriptor 2 was closed when the library loaded, or now refers to another file than then (a
// program started with `2>&-` that opened a file of its own as descriptor 2).
#pragma once

namespace asyncwatch::log {

// Remembers which file descriptor 2 is (the library's constructor, first thing; else the first message).
void capture_stderr() noexcept;
// Level names as ASYNCWATCH_LOG takes them: trace, debug, info, warn, error, critical, off.
void set_level(const char* level) noexcept;
// The one-line banner naming the trace file (not subject to the level, except "off").
void banner(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void info(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void warn(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void error(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace asyncwatch::log
