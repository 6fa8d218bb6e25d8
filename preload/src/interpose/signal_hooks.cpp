// sigaction, signal, bsd_signal, sysv_signal, __sysv_signal and sigset: the application's handler
// is kept in a table and the kernel gets our trampoline in its place, with the application's mask
// and flags unchanged; every query returns the application's own handler, so the program sees
// exactly what it installed. The trampoline marks the thread (call_context.h, kPhaseHandler) for
// the handler's duration when it interrupted the application, then calls the handler with the
// arguments the kernel passed. Handlers installed before the library loaded, through the raw system
// call, or by a sanitizer runtime (which answers the program's sigaction itself) are not wrapped;
// their CUDA calls are classified as before (call_context.h).
#include "signal_hooks.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "common.h"
#include "real_functions.h"

#if !defined(__x86_64__)
#error "the plain-handler trampoline relies on the x86-64 signal frame (uc in %rdx for every handler)"
#endif

using namespace asyncwatch;

namespace asyncwatch::signals {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using InfoHandler = void (*)(int, siginfo_t*, void*);

enum Real { kSigaction, kSignal, kBsdSignal, kSysvSignal, kSysvSignalInternal, kSigset, kRealCount };
constexpr const char* kRealNames[kRealCount] = {"sigaction",   "signal",        "bsd_signal",
                                                "sysv_signal", "__sysv_signal", "sigset"};
std::atomic<void*> g_real[kRealCount];  // not guarded statics: sigaction may be called from a handler

// Between handler types (the kernel's handler slot is one union): through void (*)(), which
// -Wcast-function-type accepts as the generic function pointer.
template <class To, class From>
To fn_cast(From f) noexcept {
  return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}

void* real_of(Real f) noexcept {
  void* p = g_real[f].load(std::memory_order_acquire);
  if (AW_UNLIKELY(!p)) {
    p = real::dlsym_fn()(RTLD_NEXT, kRealNames[f]);
    g_real[f].store(p, std::memory_order_release);
  }
  return p;
}

// Whether handlers are wrapped at all: only when the program's sigaction and signal are ours. A
// runtime loaded before us that interposes them as well (a sanitizer's, libjsig) answers the
// program's queries itself, from the kernel, and would see our trampoline; then every function
// here passes straight through. Decided in the constructor; false before it.
std::atomic<bool> g_wrapping{false};

// The application's handler per signal: SA_SIGINFO ones and plain ones apart, because the kernel
// holds the trampoline of the matching kind.
std::atomic<InfoHandler> g_info[_NSIG];
std::atomic<sighandler_t> g_plain[_NSIG];

// Marks the thread for the handler's duration (when it interrupted the application, or another
// handler); restores it after. `frame`/`ret`: the trampoline's frame address and return address.
class HandlerMark {
 public:
  HandlerMark(void* ucv, uintptr_t frame, uintptr_t ret) noexcept : st_(calls::thread_state()) {
    phase_ = st_.phase;
    marked_ = phase_ == calls::kPhaseApplication || phase_ == calls::kPhaseHandler;
    if (!marked_) return;  // the library's own code or a real function was interrupted: thread_state.h decides
    frame_ = st_.handler_frame;
    ret_ = st_.handler_return;
    lo_ = st_.handler_alt_lo;
    hi_ = st_.handler_alt_hi;
    // uc_stack is the thread's alternate stack as the kernel saw it; the handler runs on it when
    // the trampoline's frame lies inside.
    const stack_t& ss = static_cast<const ucontext_t*>(ucv)->uc_stack;
    uintptr_t alo = reinterpret_cast<uintptr_t>(ss.ss_sp), ahi = alo + ss.ss_size;
    bool alt = !(ss.ss_flags & SS_DISABLE) && frame >= alo && frame < ahi;
    st_.handler_frame = frame;
    st_.handler_return = ret;
    st_.handler_alt_lo = alt ? alo : 0;
    st_.handler_alt_hi = alt ? ahi : 0;
    calls::signal_fence();
    st_.phase = calls::kPhaseHandler;
    calls::signal_fence();
  }
  ~HandlerMark() {
    if (!marked_) return;
    calls::signal_fence();
    st_.phase = phase_;
    calls::signal_fence();
    st_.handler_frame = frame_;
    st_.handler_return = ret_;
    st_.handler_alt_lo = lo_;
    st_.handler_alt_hi = hi_;
  }
  HandlerMark(const HandlerMark&) = delete;
  HandlerMark& operator=(const HandlerMark&) = delete;

 private:
  calls::ThreadCallState& st_;
  uint32_t phase_;
  bool marked_;
  uintptr_t frame_ = 0, ret_ = 0, lo_ = 0, hi_ = 0;
};

void trampoline_info(int sig, siginfo_t* si, void* uc);
void trampoline_plain(int sig, siginfo_t* si, void* uc);

// Signals deferred on this thread (bit sig - 1): each was queued again to the thread and stays
// blocked until it leaves the library's own code.
AW_TLS uint64_t tl_deferred_mask;

// A fault of the instruction itself: must run now (returning would re-execute the instruction).
bool synchronous(int sig, const siginfo_t* si, bool has_info) noexcept {
  bool fault_signal =
      sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
  // Without SA_SIGINFO the kernel leaves siginfo unset: such a signal is taken as a fault.
  return fault_signal && (!has_info || si->si_code > 0);
}

// The thread is in the library's own code: `sig` is queued again to the thread, with its siginfo
// (rt_tgsigqueueinfo may carry any si_code within the caller's own process), and kept blocked
// after the trampoline returns (added to the mask the kernel restores from `uc`); set_phase
// unblocks it once the thread is out, and the kernel delivers it then. Meanwhile further instances
// queue (real-time) or merge (standard signals) exactly as for any blocked signal. Not deferred:
// faults, a handler the kernel already reset (SA_RESETHAND: the signal sent again would take the
// default action), a signal that cannot be queued again (RLIMIT_SIGPENDING).
bool defer(int sig, const siginfo_t* si, bool has_info, void* ucv) noexcept {
  if (!calls::in_library(calls::thread_state().phase) || synchronous(sig, si, has_info)) return false;
  int saved_errno = errno;
  auto fn = reinterpret_cast<SigactionFn>(g_real[kSigaction].load(std::memory_order_acquire));
  struct sigaction cur;
  bool ours = fn && fn(sig, nullptr, &cur) == 0 &&
              (cur.sa_handler == fn_cast<sighandler_t>(&trampoline_plain) ||
               cur.sa_handler == fn_cast<sighandler_t>(&trampoline_info));
  bool deferred = false;
  if (ours) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &one, &before);  // SA_NODEFER: not blocked in the handler already
    long pid = getpid(), tid = syscall(SYS_gettid);
    deferred = (has_info ? syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, si) : syscall(SYS_tgkill, pid, tid, sig)) == 0;
    if (deferred) {
      sigaddset(&static_cast<ucontext_t*>(ucv)->uc_sigmask, sig);
      tl_deferred_mask |= 1ull << (sig - 1);
      calls::signal_fence();
      calls::tl_locals.signals_deferred = 1;
    } else {
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
    }
  }
  errno = saved_errno;
  return deferred;
}

// Not noexcept: a handler may leave by an exception (-fnon-call-exceptions) or siglongjmp.
__attribute__((noinline)) void trampoline_info(int sig, siginfo_t* si, void* uc) {
  if (defer(sig, si, true, uc)) return;
  HandlerMark mark(uc, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)),
                   reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  if (InfoHandler h = g_info[sig].load(std::memory_order_acquire)) h(sig, si, uc);
}

// Installed as sa_handler (no SA_SIGINFO): on x86-64 the kernel passes siginfo and ucontext in
// %rsi/%rdx to every handler, so uc is valid here too; the application's handler gets `sig` only.
__attribute__((noinline)) void trampoline_plain(int sig, siginfo_t* si, void* uc) {
  if (defer(sig, si, false, uc)) return;
  HandlerMark mark(uc, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)),
                   reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  sighandler_t h = g_plain[sig].load(std::memory_order_acquire);
  if (h != SIG_DFL && h != SIG_IGN && h != SIG_ERR) h(sig);
}

sighandler_t plain_trampoline() noexcept { return fn_cast<sighandler_t>(&trampoline_plain); }

bool is_function(sighandler_t h) noexcept { return h != SIG_DFL && h != SIG_IGN && h != SIG_ERR && h != SIG_HOLD; }

// What the kernel reported (`h`, our trampoline or not) as the application knows it: its handler
// as it was before this call (`info`/`plain`).
sighandler_t as_application_sees(sighandler_t h, InfoHandler info, sighandler_t plain) noexcept {
  if (h == plain_trampoline()) return plain;
  if (h == fn_cast<sighandler_t>(&trampoline_info)) return fn_cast<sighandler_t>(info);
  return h;
}

// signal, bsd_signal, sysv_signal, __sysv_signal, sigset: each has its own semantics in glibc (BSD
// or System V flags, SIG_HOLD); the real function is called with the plain trampoline in place of
// the application's function, so the semantics stay glibc's.
sighandler_t install_plain(Real which, int sig, sighandler_t h) noexcept {
  auto fn = reinterpret_cast<SignalFn>(real_of(which));
  if (!fn) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  if (sig <= 0 || sig >= _NSIG || !g_wrapping.load(std::memory_order_acquire)) return fn(sig, h);
  InfoHandler prev_info = g_info[sig].load(std::memory_order_acquire);
  sighandler_t prev_plain = g_plain[sig].load(std::memory_order_acquire);
  bool wrap = is_function(h) && h != plain_trampoline();
  if (wrap) g_plain[sig].store(h, std::memory_order_release);
  sighandler_t old = fn(sig, wrap ? plain_trampoline() : h);
  if (old == SIG_ERR) {
    if (wrap) g_plain[sig].store(prev_plain, std::memory_order_release);
    return old;
  }
  return as_application_sees(old, prev_info, prev_plain);
}

}  // namespace

bool handler_running(const calls::ThreadCallState& st, const void* frame) noexcept {
  uintptr_t f = reinterpret_cast<uintptr_t>(frame);
  if (st.handler_alt_hi && (f < st.handler_alt_lo || f >= st.handler_alt_hi)) return false;  // off its stack
  if (f >= st.handler_frame) return false;  // above the trampoline: it returned, or was jumped out of
  // Below it on the same stack: the trampoline's return address is still where it was, unless a
  // siglongjmp left the handler and later calls went deeper than it.
  return *reinterpret_cast<const uintptr_t*>(st.handler_frame + sizeof(void*)) == st.handler_return;
}

void handler_left(calls::ThreadCallState& st) noexcept {
  st.phase = calls::kPhaseApplication;
  calls::signal_fence();
  st.handler_frame = st.handler_return = st.handler_alt_lo = st.handler_alt_hi = 0;
}

void forget_deferred() noexcept {
  // The child inherited the parent thread's mask with the deferred signals blocked, but none of
  // its pending signals: unblocked.
  calls::deliver_deferred_signals();
}

void init() noexcept {
  for (int f = 0; f < kRealCount; ++f) real_of(static_cast<Real>(f));
  // By address range: `&::sigaction` here would itself be bound to the first definition.
  auto lookup = real::dlsym_fn();
  bool first = real::is_own(lookup(RTLD_DEFAULT, "sigaction")) && real::is_own(lookup(RTLD_DEFAULT, "signal"));
  g_wrapping.store(first, std::memory_order_release);
}

}  // namespace asyncwatch::signals

namespace asyncwatch::calls {

// The thread has left the library's own code (phase even): the signals deferred meanwhile are
// unblocked, and the kernel delivers them (to the trampoline, which now runs the handler) on the
// way out of the system call. Cleared first: a signal arriving meanwhile runs at once.
void deliver_deferred_signals() noexcept {
  int saved_errno = errno;
  tl_locals.signals_deferred = 0;
  signal_fence();
  uint64_t mask = signals::tl_deferred_mask;
  signals::tl_deferred_mask = 0;
  signal_fence();
  sigset_t set;
  sigemptyset(&set);
  for (int sig = 1; sig < _NSIG; ++sig)
    if (mask & (1ull << (sig - 1))) sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  errno = saved_errno;
}

}  // namespace asyncwatch::calls

using namespace asyncwatch::signals;

extern "C" AW_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* oact) noexcept {
  auto fn = reinterpret_cast<SigactionFn>(real_of(kSigaction));
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  if (sig <= 0 || sig >= _NSIG || !g_wrapping.load(std::memory_order_acquire)) return fn(sig, act, oact);
  InfoHandler prev_info = g_info[sig].load(std::memory_order_acquire);
  sighandler_t prev_plain = g_plain[sig].load(std::memory_order_acquire);
  struct sigaction mine;
  const struct sigaction* use = act;
  bool info = act && (act->sa_flags & SA_SIGINFO);
  if (act && is_function(act->sa_handler) && act->sa_handler != plain_trampoline() &&
      act->sa_sigaction != &trampoline_info) {
    mine = *act;
    if (info) {
      g_info[sig].store(act->sa_sigaction, std::memory_order_release);
      mine.sa_sigaction = &trampoline_info;
    } else {
      g_plain[sig].store(act->sa_handler, std::memory_order_release);
      mine.sa_handler = plain_trampoline();
    }
    use = &mine;
  }
  int r = fn(sig, use, oact);
  if (r != 0) {
    if (use == &mine) {
      g_info[sig].store(prev_info, std::memory_order_release);
      g_plain[sig].store(prev_plain, std::memory_order_release);
    }
    return r;
  }
  if (oact) oact->sa_handler = as_application_sees(oact->sa_handler, prev_info, prev_plain);
  return r;
}

extern "C" AW_EXPORT sighandler_t signal(int sig, sighandler_t h) noexcept { return install_plain(kSignal, sig, h); }
extern "C" AW_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) noexcept {
  return install_plain(kBsdSignal, sig, h);
}
extern "C" AW_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) noexcept {
  return install_plain(kSysvSignal, sig, h);
}
extern "C" AW_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h) noexcept {
  return install_plain(kSysvSignalInternal, sig, h);
}
extern "C" AW_EXPORT sighandler_t sigset(int sig, sighandler_t h) noexcept { return install_plain(kSigset, sig, h); }
