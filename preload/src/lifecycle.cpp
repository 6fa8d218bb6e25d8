// Process lifecycle: load (configuration), trace open (module map), fork (the child gets its own
// trace), exec (LD_PRELOAD and ASYNCWATCH_* survive into the new image; the trace is marked
// closed first because no destructor runs), and exit (clean close through the library
// destructor, exit(), _exit() and _Exit()).
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "classify/host_memory_classifier.h"
#include "common.h"
#include "config.h"
#include "interpose/call_context.h"
#include "interpose/real_functions.h"
#include "log.h"
#include "stacks/module_map.h"
#include "stacks/stack_capture.h"
#include "thread_exit.h"
#include "trace/trace_writer.h"

extern char** environ;

namespace asyncwatch::lifecycle {
namespace {

std::atomic<int> g_exit_status{-1};
// The environment entries a child must inherit to be traced: LD_PRELOAD as we were loaded and
// every ASYNCWATCH_* variable, captured at load time (the application may unset them later).
std::vector<std::string>* g_inherit = nullptr;
std::string* g_preload_value = nullptr;

void on_trace_opened() { module_map::write_new_modules(); }

// fork() from a multithreaded process: another thread may be inside the library holding one of
// its locks. The forking thread takes the stack-interning and classifier locks before the fork
// (in this order: a thread holding the interning lock may go on to the trace writer's lock, never
// to the classifier's) and releases them on both sides, so the child inherits them free and the
// data they guard whole. (Before, a child forked while a parent thread was registering a pinned
// buffer hung at its own first cuMemHostAlloc.) The trace writer's and the module map's state is
// the parent's trace: the child re-creates their locks and drops that state.
void atfork_prepare() {
  stacks::lock_for_fork();
  classify::lock_for_fork();
}

void atfork_parent() {
  classify::unlock_after_fork();
  stacks::unlock_after_fork();
}

void atfork_child() {
  classify::unlock_after_fork();
  stacks::unlock_after_fork();
  // Only the forking thread exists in the child; drop the parent's trace (its mapping would
  // write into the parent's file) and let the first call in the child open a new one.
  trace_writer::after_fork_child(static_cast<uint64_t>(getppid()));
  module_map::reset();
}

void warn_config(const std::string& msg) { log::warn(msg); }

void capture_environment() {
  g_inherit = new std::vector<std::string>;
  g_preload_value = new std::string;
  for (char** e = environ; e && *e; ++e) {
    if (!strncmp(*e, "ASYNCWATCH_", 11)) g_inherit->emplace_back(*e);
    if (!strncmp(*e, "LD_PRELOAD=", 11)) *g_preload_value = *e + 11;
  }
  if (g_preload_value->empty()) {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&capture_environment), &info) && info.dli_fname)
      *g_preload_value = info.dli_fname;
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

__attribute__((constructor(101))) void on_load() {
  ErrnoKeeper keep;
  module_map::init_own_range();
  Config c = parse_config([](const char* n) -> const char* { return getenv(n); }, &warn_config);
  set_config(c);
  log::init(c.log_level);
  capture_environment();
  trace_writer::set_opened_callback(&on_trace_opened);
  if (c.disabled) trace_writer::disable();
  pthread_atfork(&atfork_prepare, &atfork_parent, &atfork_child);
  thread_exit::add_hook(&stacks::release_thread);
  thread_exit::add_hook(&calls::release_thread);
}

__attribute__((destructor(101))) void on_unload() {
  trace_writer::close_clean(g_exit_status.load());
  stacks::CacheStats st = stacks::cache_stats();
  if (st.hits + st.unwinds)
    log::info("call-site cache: " + std::to_string(st.hits) + " hits, " + std::to_string(st.unwinds) +
              " full unwinds, " + std::to_string(st.mismatches) + " keys found ambiguous");
}

void set_exit_status(int s) { g_exit_status.store(s); }

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

extern "C" AW_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(const char*, char* const*, char* const*)>("execve");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  trace_writer::prepare_exec();
  int r = real(path, argv, e);
  ErrnoKeeper keep;
  trace_writer::exec_failed();
  return r;
}

extern "C" AW_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(const char*, char* const*, char* const*)>("execvpe");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  trace_writer::prepare_exec();
  int r = real(file, argv, e);
  ErrnoKeeper keep;
  trace_writer::exec_failed();
  return r;
}

extern "C" AW_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa,
                                     const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                                             const posix_spawnattr_t*, char* const*, char* const*)>("posix_spawn");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  return real(pid, path, fa, attr, argv, e);
}

extern "C" AW_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa,
                                      const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = lifecycle::next<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                                             const posix_spawnattr_t*, char* const*, char* const*)>("posix_spawnp");
  std::vector<std::string> storage;
  std::vector<char*> env;
  char** e = lifecycle::environment_for_child(envp, storage, env);
  return real(pid, file, fa, attr, argv, e);
}
