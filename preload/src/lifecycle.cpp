// Process lifecycle: load (configuration), trace open (module map), fork (the child gets its own
// trace), exec (LD_PRELOAD and ASYNCWATCH_* survive into the new image; the trace is marked
// closed first because no destructor runs: execve, execv, execvp, execvpe, execl, execlp,
// execle, fexecve, execveat), and exit (clean close through the library destructor, exit(),
// _exit() and _Exit()).
#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include <cerrno>
#include <cstdarg>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "classify/host_memory_classifier.h"
#include "common.h"
#include "config.h"
#include "interpose/call_context.h"
#include "interpose/capture_range.h"
#include "interpose/signal_hooks.h"
#include "interpose/real_functions.h"
#include "loaded_object.h"
#include "log.h"
#include "stacks/module_map.h"
#include "stacks/stack_capture.h"
#include "thread_exit.h"
#include "gpu_times/gpu_times.h"
#include "nvtx/nvtx_injection.h"
#include "process_slots.h"
#include "trace/thread_buffer.h"
#include "trace/trace_file.h"
#include "trace/trace_writer.h"

extern char** environ;

namespace asyncwatch::lifecycle {
namespace {

// The status given to exit/_exit/_Exit, with the pid of the process that gave it: a vfork()ed
// child's _exit writes here too (it shares our memory), and must not become the parent's status.
std::atomic<uint64_t> g_exit_status{0};

void set_exit_status(int s) noexcept {
  g_exit_status.store(static_cast<uint32_t>(s) | static_cast<uint64_t>(static_cast<uint32_t>(getpid())) << 32);
}
int exit_status() noexcept {
  uint64_t v = g_exit_status.load();
  if (static_cast<pid_t>(v >> 32) != getpid()) return -1;  // unknown (main returned), or another process's
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}
// The environment entries a child must inherit to be traced: LD_PRELOAD as we were loaded and
// every ASYNCWATCH_* variable, captured at load time (the application may unset them later).
std::vector<std::string>* g_inherit = nullptr;
std::string* g_preload_value = nullptr;

// The module map, unless the file was asked for by a reentrant call (a signal handler's: the map's
// lists allocate); then the first stack captured later finds no known module and writes it.
// A program that returns from main reaches libc's own exit, not the exit() below: an on_exit
// handler gets its status. Registered when the trace opens, not in the constructor: exit handlers
// run in reverse order, and the dynamic linker's finalizer (which runs our destructor) is
// registered by __libc_start_main after preloaded constructors ran but before main. Once per
// address space (a fork child inherits it; it reads its own pid). Not from a reentrant call (a
// signal handler's): on_exit takes libc's lock and allocates.
std::atomic<bool> g_on_exit_registered{false};

void on_trace_opened() {
  if (calls::thread_state().reentrant) return;
  module_map::write_new_modules();
  stacks::python_trace_opened();
  if (!g_on_exit_registered.exchange(true)) on_exit([](int status, void*) { set_exit_status(status); }, nullptr);
}

// fork() from a multithreaded process: another thread may be inside the library holding one of
// its locks. The forking thread takes the stack-interning and classifier locks before the fork
// (in this order: a thread holding the interning lock may go on to the trace writer's lock, never
// to the classifier's) and releases them on both sides, so the child inherits them free and the
// data they guard whole. (Before, a child forked while a parent thread was registering a pinned
// buffer hung at its own first cuMemHostAlloc.) The trace writer's and the module map's state is
// the parent's trace: the child re-creates their locks and drops that state.
// Between the handlers the forking thread holds those locks: it is marked as in the library's own
// code, so a signal handler's CUDA call there passes through instead of waiting for them.
AW_TLS uint32_t tl_phase_before_fork;

void atfork_prepare() {
  calls::ThreadCallState& st = calls::thread_state();
  tl_phase_before_fork = st.phase;
  st.phase |= calls::kPhaseLibrary;
  calls::signal_fence();
  stacks::lock_for_fork();
  classify::lock_for_fork();
}

void atfork_parent() {
  classify::unlock_after_fork();
  stacks::unlock_after_fork();
  calls::set_phase(calls::thread_state(), tl_phase_before_fork);
}

void atfork_child() {
  classify::unlock_after_fork();
  stacks::unlock_after_fork();
  // Only the forking thread exists in the child; drop the parent's trace (its mapping would
  // write into the parent's file) and let the first call in the child open a new one.
  trace_writer::after_fork_child(static_cast<uint64_t>(getppid()));
  module_map::reset();
  stacks::python_after_fork_child();
  signals::forget_deferred();  // the parent's: the child has no pending signals
  calls::set_phase(calls::thread_state(), tl_phase_before_fork);
}

// Per-thread state released at thread exit (thread_exit.h), as the library's own code.
void release_thread() noexcept {
  calls::LibraryScope scope;
  stacks::release_thread();
  calls::release_thread();
  gpu_times::release_thread();
  thread_buffer::release_thread();  // last: the others may still write a record
}

// The personality routine of our static libstdc++ reads the register sizes of our static copy of
// the unwinder, a table that copy fills on its first use. A thread cancelled inside a CUDA function
// is unwound by libgcc_s (glibc's pthread_cancel loads it), which calls our personality routine for
// frames of ours with cleanups; with the table still empty, _Unwind_SetGR aborts the process. One
// (empty) backtrace of ours at load fills it.
void prime_unwinder() noexcept {
  _Unwind_Backtrace([](_Unwind_Context*, void*) { return _URC_END_OF_STACK; }, nullptr);
}

void warn_config(const std::string& msg) { log::warn("%s", msg.c_str()); }

void capture_environment() {
  g_inherit = new std::vector<std::string>;
  g_preload_value = new std::string;
  for (char** e = environ; e && *e; ++e) {
    if (!strncmp(*e, "ASYNCWATCH_", 11)) g_inherit->emplace_back(*e);
    if (!strncmp(*e, "LD_PRELOAD=", 11)) *g_preload_value = *e + 11;
  }
  if (g_preload_value->empty()) {
    const link_map* self = loaded_object(reinterpret_cast<const void*>(&capture_environment));
    if (self && self->l_name && *self->l_name) *g_preload_value = self->l_name;
  }
}

bool has_name(char* const* envp, const std::string& entry) {
  size_t eq = entry.find('=');
  for (char* const* e = envp; e && *e; ++e)
    if (!strncmp(*e, entry.c_str(), eq + 1)) return true;
  return false;
}

// Whether envp lacks something the child needs to be traced. Allocation-free: execve may run in
// a vfork()ed child (Python's subprocess), where touching the heap could deadlock the parent.
bool needs_fixing(char* const* envp) {
  if (!g_inherit || !envp || config().disabled) return false;
  bool preload_ok = false;
  for (char* const* e = envp; *e; ++e)
    if (!strncmp(*e, "LD_PRELOAD=", 11) && g_preload_value && strstr(*e + 11, g_preload_value->c_str()))
      preload_ok = true;
  if (!preload_ok && g_preload_value && !g_preload_value->empty()) return true;
  for (const std::string& v : *g_inherit)
    if (!has_name(envp, v)) return true;
  return false;
}

// envp plus whatever is missing for the child to be traced; `storage` owns the new strings.
char** environment_for_child(char* const* envp, std::vector<std::string>& storage, std::vector<char*>& out) {
  if (!needs_fixing(envp)) return const_cast<char**>(envp);
  for (char* const* e = envp; *e; ++e) {
    if (!strncmp(*e, "LD_PRELOAD=", 11)) {
      std::string value = *e + 11;
      if (value.find(*g_preload_value) == std::string::npos)
        storage.push_back("LD_PRELOAD=" + *g_preload_value + (value.empty() ? "" : ":" + value));
      else
        storage.emplace_back(*e);
      continue;
    }
    storage.emplace_back(*e);
  }
  if (!has_name(envp, "LD_PRELOAD=") && !g_preload_value->empty()) storage.push_back("LD_PRELOAD=" + *g_preload_value);
  for (const std::string& v : *g_inherit)
    if (!has_name(envp, v)) storage.push_back(v);
  for (std::string& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out.data();
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(real::dlsym_fn()(RTLD_NEXT, name));
}

}  // namespace

// glibc passes the program's arguments to ELF constructors: the command line for the trace header,
// without reading /proc (no descriptor of ours in the application's table).
__attribute__((constructor(101))) void on_load(int argc, char** argv, char**) {
  ErrnoKeeper keep;
  log::capture_stderr();
  module_map::init_own_range();
  trace_writer::init_process();
  signals::init();
  prime_unwinder();
  trace_file::set_command_line(argc, argv);
  stacks::set_main_stack_top(argv);
  Config c = parse_config([](const char* n) -> const char* { return getenv(n); }, &warn_config);
  set_config(c);
  log::set_level(c.log_level.c_str());
  capture_environment();
  trace_writer::set_opened_callback(&on_trace_opened);
  if (c.disabled) {
    trace_writer::disable();
  } else {
    nvtx::set_injection_path();
    capture::init(c);
  }
  pthread_atfork(&atfork_prepare, &atfork_parent, &atfork_child);
  thread_exit::add_hook(&release_thread);
}

__attribute__((destructor(101))) void on_unload() {
  trace_writer::close_clean(exit_status());
  stacks::CacheStats st = stacks::cache_stats();
  if (st.hits + st.unwinds)
    log::info("call-site cache: %llu hits, %llu full unwinds, %llu keys found ambiguous",
              static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.unwinds),
              static_cast<unsigned long long>(st.mismatches));
  if (st.borrowed + st.borrow_confirmed + st.borrow_reused + st.borrow_limited)
    log::info(
        "borrowed Python frames: %llu walks, %llu reused after a re-read, %llu reused unread (a waiting "
        "lender's, read < 200 us before), %llu refused by the rate limit",
        static_cast<unsigned long long>(st.borrowed), static_cast<unsigned long long>(st.borrow_confirmed),
        static_cast<unsigned long long>(st.borrow_reused), static_cast<unsigned long long>(st.borrow_limited));
}

// Before any exec: the environment the new image needs to be traced, and the trace marked closed.
// `run(envp)` is the real exec; it returns only when the exec failed.
template <class Exec>
int exec_with(char* const* envp, Exec&& run) {
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = environment_for_child(envp, storage, env);
  trace_writer::prepare_exec();
  int r = run(e);
  ErrnoKeeper keep;
  trace_writer::exec_failed();
  return r;
}

// argv of execl/execlp/execle: arg0, the variadic arguments up to the terminating null pointer, on
// the stack (no heap: an exec may run in a vfork()ed child). *envp_out gets execle's environment.
#define AW_COLLECT_ARGS(arg0, argv_out, envp_out)                    \
  do {                                                               \
    va_list ap;                                                      \
    va_start(ap, arg0);                                              \
    size_t n = 1;                                                    \
    while (va_arg(ap, char*)) ++n;                                   \
    va_end(ap);                                                      \
    argv_out = static_cast<char**>(alloca((n + 1) * sizeof(char*))); \
    va_start(ap, arg0);                                              \
    argv_out[0] = const_cast<char*>(arg0);                           \
    for (size_t i = 1; i <= n; ++i) argv_out[i] = va_arg(ap, char*); \
    if (envp_out) *envp_out = va_arg(ap, char**);                    \
    va_end(ap);                                                      \
  } while (0)

}  // namespace asyncwatch::lifecycle

using namespace asyncwatch;

extern "C" AW_EXPORT void exit(int status) {
  lifecycle::set_exit_status(status);
  static auto real_exit = lifecycle::next<void (*)(int)>("exit");
  real_exit(status);
  __builtin_unreachable();
}

extern "C" AW_EXPORT void _exit(int status) {
  lifecycle::set_exit_status(status);
  trace_writer::close_clean(status);
  static auto real = lifecycle::next<void (*)(int)>("_exit");
  real(status);
  __builtin_unreachable();
}

extern "C" AW_EXPORT void _Exit(int status) {
  lifecycle::set_exit_status(status);
  trace_writer::close_clean(status);
  static auto real = lifecycle::next<void (*)(int)>("_Exit");
  real(status);
  __builtin_unreachable();
}

using ExecveFn = int (*)(const char*, char* const*, char* const*);

extern "C" AW_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<ExecveFn>("execve");
  return lifecycle::exec_with(envp, [&](char** e) { return real(path, argv, e); });
}

extern "C" AW_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<ExecveFn>("execvpe");
  return lifecycle::exec_with(envp, [&](char** e) { return real(file, argv, e); });
}

// The forms without an environment use the process's; glibc implements them without going
// through execve's symbol, so each is interposed.
extern "C" AW_EXPORT int execv(const char* path, char* const argv[]) {
  static auto real = lifecycle::next<ExecveFn>("execve");
  return lifecycle::exec_with(environ, [&](char** e) { return real(path, argv, e); });
}

extern "C" AW_EXPORT int execvp(const char* file, char* const argv[]) {
  static auto real = lifecycle::next<ExecveFn>("execvpe");
  return lifecycle::exec_with(environ, [&](char** e) { return real(file, argv, e); });
}

extern "C" AW_EXPORT int execl(const char* path, const char* arg, ...) {
  char** argv;
  char*** no_env = nullptr;
  AW_COLLECT_ARGS(arg, argv, no_env);
  static auto real = lifecycle::next<ExecveFn>("execve");
  return lifecycle::exec_with(environ, [&](char** e) { return real(path, argv, e); });
}

extern "C" AW_EXPORT int execlp(const char* file, const char* arg, ...) {
  char** argv;
  char*** no_env = nullptr;
  AW_COLLECT_ARGS(arg, argv, no_env);
  static auto real = lifecycle::next<ExecveFn>("execvpe");
  return lifecycle::exec_with(environ, [&](char** e) { return real(file, argv, e); });
}

extern "C" AW_EXPORT int execle(const char* path, const char* arg, ...) {
  char** argv;
  char** envp = nullptr;
  char*** env_out = &envp;
  AW_COLLECT_ARGS(arg, argv, env_out);
  static auto real = lifecycle::next<ExecveFn>("execve");
  return lifecycle::exec_with(envp, [&](char** e) { return real(path, argv, e); });
}

extern "C" AW_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(int, char* const*, char* const*)>("fexecve");
  return lifecycle::exec_with(envp, [&](char** e) { return real(fd, argv, e); });
}

// glibc >= 2.34 has the wrapper; older ones reach the system call directly.
extern "C" AW_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  using Fn = int (*)(int, const char*, char* const*, char* const*, int);
  static auto real = lifecycle::next<Fn>("execveat");
  return lifecycle::exec_with(envp, [&](char** e) {
    return real ? real(dirfd, path, argv, e, flags)
                : static_cast<int>(syscall(SYS_execveat, dirfd, path, argv, e, flags));
  });
}

extern "C" AW_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa,
                                     const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                                             const posix_spawnattr_t*, char* const*, char* const*)>("posix_spawn");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  int rc = real(pid, path, fa, attr, argv, e);
  if (rc == EAGAIN && process_slots::give_back()) rc = real(pid, path, fa, attr, argv, e);
  return rc;
}

extern "C" AW_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa,
                                      const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                                             const posix_spawnattr_t*, char* const*, char* const*)>("posix_spawnp");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  int rc = real(pid, file, fa, attr, argv, e);
  if (rc == EAGAIN && process_slots::give_back()) rc = real(pid, file, fa, attr, argv, e);
  return rc;
}
