#include "thread_exit.h"

#include <pthread.h>

#include <atomic>

#include "common.h"

namespace asyncwatch::thread_exit {
namespace {

constexpr int kMaxHooks = 4;
std::atomic<Hook> g_hooks[kMaxHooks];
std::atomic<int> g_nhooks{0};
pthread_key_t g_key;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
bool g_key_ok = false;
AW_TLS bool tl_watched;

void on_thread_exit(void*) {
  ErrnoKeeper keep;
  // A hook's owner may allocate again later in this thread's exit (another key's destructor
  // making CUDA calls): it then registers again and glibc runs this once more.
  tl_watched = false;
  int n = g_nhooks.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (Hook h = g_hooks[i].load(std::memory_order_acquire)) h();
}

void make_key() { g_key_ok = pthread_key_create(&g_key, &on_thread_exit) == 0; }

}  // namespace

void add_hook(Hook h) noexcept {
  // The key now, at load: watch_this_thread may then run in a signal handler (a thread's first
  // record), where it only sets the thread's value.
  pthread_once(&g_once, &make_key);
  int i = g_nhooks.load();
  if (i >= kMaxHooks) return;
  g_hooks[i].store(h, std::memory_order_release);
  g_nhooks.store(i + 1, std::memory_order_release);
}

void watch_this_thread() noexcept {
  if (AW_LIKELY(tl_watched)) return;
  pthread_once(&g_once, &make_key);
  // Any non-null value: the destructor runs only for threads whose value is set.
  if (g_key_ok && pthread_setspecific(g_key, reinterpret_cast<void*>(1)) == 0) tl_watched = true;
}

}  // namespace asyncwatch::thread_exit
