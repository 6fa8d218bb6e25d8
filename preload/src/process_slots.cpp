// The program's threads and processes come before the library's own thread: when the program
// cannot start one (EAGAIN: RLIMIT_NPROC, or the system's thread limit) while the trace's file
// thread holds a slot, that thread ends (trace_file::give_back_thread) and the program's call is
// made again. Tracing goes on in the part of the file already mapped; the trace says what
// happened (kConfigFileThreadYielded, a note in the report) and stderr gets one warning.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "common.h"
#include "interpose/real_functions.h"
#include "log.h"
#include "process_slots.h"
#include "stacks/thread_starts.h"
#include "trace/trace_file.h"
#include "trace/trace_writer.h"

namespace asyncwatch::process_slots {
namespace {

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(real::dlsym_fn()(RTLD_NEXT, name));
}

}  // namespace

bool give_back() noexcept {
  ErrnoKeeper keep;
  if (!trace_file::give_back_thread()) return false;
  trace_writer::add_config_flags(trace::kConfigFileThreadYielded);
  static std::atomic<pid_t> warned{0};  // once per process (threads that failed together all retry)
  if (warned.exchange(getpid()) != getpid())
    log::warn(
        "the program could not start a thread or process (EAGAIN: RLIMIT_NPROC?): asyncwatch's file thread ended to "
        "leave it its slot; the trace ends where its file was mapped");
  return true;
}

}  // namespace asyncwatch::process_slots

using namespace asyncwatch;
using asyncwatch::process_slots::next;

extern "C" AW_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  static auto real = next<int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*)>("pthread_create");
  int rc = real(thread, attr, fn, arg);
  if (rc == EAGAIN && process_slots::give_back()) rc = real(thread, attr, fn, arg);
  if (rc == 0) thread_starts::note_created(*thread, fn);  // who created it: stacks/thread_starts.h
  return rc;
}

extern "C" AW_EXPORT pid_t fork() {
  static auto real = next<pid_t (*)()>("fork");
  pid_t pid = real();
  if (pid < 0 && errno == EAGAIN && process_slots::give_back()) pid = real();
  return pid;
}
