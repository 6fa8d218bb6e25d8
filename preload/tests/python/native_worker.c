/* Test-only stand-in for a framework's own native threads (XLA's copy and callback threads, which
 * have no Python thread state): one persistent worker thread that runs the calls it is given.
 * borrowed_app.py hands it CUDA runtime functions through ctypes (which releases the GIL while
 * aw_worker_call waits), as jax.device_put / np.asarray(jax_array) wait for XLA's threads. Built
 * into a site-packages directory so that its frames are library code to the analyzer, as
 * jaxlib's are. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#define AW_EXPORT __attribute__((visibility("default")))

typedef int (*call5)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_t worker;
static int started, stop, pending, done, result, repeat;
static call5 job;
static uint64_t args[5];

static void* run(void* unused) {
  (void)unused;
  pthread_mutex_lock(&mutex);
  for (;;) {
    while (!pending && !stop) pthread_cond_wait(&cond, &mutex);
    if (stop) break;
    pending = 0;
    call5 fn = job;
    uint64_t a[5] = {args[0], args[1], args[2], args[3], args[4]};
    int times = repeat;
    pthread_mutex_unlock(&mutex);
    int r = 0;
    for (int i = 0; i < times && r == 0; ++i) r = fn(a[0], a[1], a[2], a[3], a[4]);
    pthread_mutex_lock(&mutex);
    result = r;
    done = 1;
    pthread_cond_broadcast(&cond);
  }
  pthread_mutex_unlock(&mutex);
  return 0;
}

AW_EXPORT int aw_worker_start(void) {
  if (started) return 0;
  started = pthread_create(&worker, 0, run, 0) == 0;
  return started ? 0 : -1;
}

/* Runs fn(a0..a4) `times` times on the worker thread (until one fails) and waits for it, as
 * loss.backward() waits while autograd's engine thread launches a step's kernels; returns what fn
 * returned last. */
AW_EXPORT int aw_worker_call_repeat(void* fn, int times, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                                    uint64_t a4) {
  pthread_mutex_lock(&mutex);
  job = (call5)fn;
  repeat = times;
  args[0] = a0, args[1] = a1, args[2] = a2, args[3] = a3, args[4] = a4;
  done = 0;
  pending = 1;
  pthread_cond_broadcast(&cond);
  while (!done) pthread_cond_wait(&cond, &mutex);
  int r = result;
  pthread_mutex_unlock(&mutex);
  return r;
}

/* Runs fn(a0..a4) on the worker thread and waits for it; returns what fn returned. */
AW_EXPORT int aw_worker_call(void* fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  return aw_worker_call_repeat(fn, 1, a0, a1, a2, a3, a4);
}
/* PyTorch's autograd engine threads: each takes a Python thread state once and releases the GIL
 * (python_engine.cpp's thread_init, pybind11 gil_scoped_acquire + gil_scoped_release), then runs
 * C++ only: a thread with a state of its own and no frames. */
static int attach_python(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4;
  int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
  void* (*save)(void) = (void* (*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
  if (!ensure || !save) return -1;
  ensure();
  save();
  return 0;
}

/* Gives the worker thread a Python thread state of its own, GIL released (the caller waits with
 * the GIL released: ctypes). */
AW_EXPORT int aw_worker_attach_python(void) { return aw_worker_call((void*)attach_python, 0, 0, 0, 0, 0); }

/* Ends the worker thread (before the interpreter exits). */
AW_EXPORT void aw_worker_stop(void) {
  if (!started) return;
  pthread_mutex_lock(&mutex);
  stop = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&mutex);
  pthread_join(worker, 0);
  started = 0;
}
