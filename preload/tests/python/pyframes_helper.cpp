// Test-only shared library, loaded by the test scripts with ctypes.CDLL (which releases the GIL
// around every call): runs python_frames on the calling thread, as an intercepted CUDA call
// would, and hands the result back as text. Resolving is done here too, without the GIL.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstring>

#include "asyncwatch/python_lines.h"
#include "stacks/python_frames.h"

#define AW_HELPER extern "C" __attribute__((visibility("default")))

using namespace asyncwatch;
using python_frames::PythonFrame;
using python_frames::WalkEnd;

namespace {

constexpr int kMaxFrames = 4096;

// mode 0: capture, 1: capture_checked, 2 and 3: the same keeping the 8 outermost frames of a
// deeper stack (as the preload library asks).
uint32_t walk(int mode, PythonFrame* frames, uint32_t max, WalkEnd* end) {
  const uint32_t outer = mode >= 2 ? 8 : 0;
  return mode % 2 == 1 ? python_frames::capture_checked(frames, max, end, outer)
                       : python_frames::capture(frames, max, end, outer);
}

// Appends `s` (n bytes) to out; false when full.
bool put(char* out, int cap, int& used, const char* s, size_t n) {
  if (n > static_cast<size_t>(cap - used)) return false;
  std::memcpy(out + used, s, n);
  used += static_cast<int>(n);
  return true;
}

// Appends frame f, described in d (its buffers filled), as one record of aw_walk's format; false
// when out is full.
bool write_frame(const PythonFrame& f, const python_frames::CodeDescription& d, char* out, int cap, int& used) {
  const auto* table = reinterpret_cast<const uint8_t*>(d.line_table.data);
  python_lines::SourceLocation loc =
      python_lines::locate(d.line_table_format, table, d.line_table.size, d.first_line, f.instr);
  char numbers[96];
  int len = std::snprintf(numbers, sizeof numbers, "\x1f%d\x1f%d\x1f%d\x1f%d\x1e", loc.line, loc.column, d.first_line,
                          f.instr);
  return put(out, cap, used, d.filename.data, d.filename.size) && put(out, cap, used, "\x1f", 1) &&
         put(out, cap, used, d.qualname.data, d.qualname.size) &&
         put(out, cap, used, numbers, static_cast<size_t>(len));
}

}  // namespace

// Walks (mode: see walk()) and writes one record per frame, innermost first:
// filename 0x1f qualname 0x1f line 0x1f column 0x1f first_line 0x1f instr 0x1e.
// Returns the number of frames, or -1-i when frame i could not be described; *end: the WalkEnd.
AW_HELPER int aw_walk(char* out, int cap, int max_frames, int mode, int* end, int* used) {
  PythonFrame frames[kMaxFrames];  // on the stack: TLS of a dlopened library must stay small
  char filename[4096], qualname[1024];
  uint8_t table[1 << 16];
  if (max_frames > kMaxFrames) max_frames = kMaxFrames;
  WalkEnd e;
  uint32_t n = walk(mode, frames, static_cast<uint32_t>(max_frames), &e);
  *end = static_cast<int>(e);
  *used = 0;
  for (uint32_t i = 0; i < n; ++i) {
    python_frames::CodeDescription d;
    d.filename = {filename, sizeof filename};
    d.qualname = {qualname, sizeof qualname};
    d.line_table = {reinterpret_cast<char*>(table), sizeof table};
    if (!python_frames::describe_code(frames[i], d) || d.line_table.truncated) return -1 - static_cast<int>(i);
    if (d.filename.needed != d.filename.size || d.qualname.needed != d.qualname.size ||
        d.line_table.needed != d.line_table.size) {
      return -1 - static_cast<int>(i);  // `needed` must be what was written when it fitted
    }
    if (!write_frame(frames[i], d, out, cap, *used)) return -1 - static_cast<int>(i);
  }
  return static_cast<int>(n);
}

// Searches for the interpreter now (as the preload library would at trace open); returns the
// Availability.
AW_HELPER int aw_find_interpreter() { return static_cast<int>(python_frames::find_interpreter()); }

// "availability version_hex searches detail"
AW_HELPER int aw_status(char* out, int cap) {
  python_frames::Status s = python_frames::status();
  return std::snprintf(out, static_cast<size_t>(cap), "%d %u %llu %s", static_cast<int>(s.availability), s.version_hex,
                       static_cast<unsigned long long>(s.searches), s.detail);
}

// `iterations` walks in a row; returns the nanoseconds they took (CLOCK_MONOTONIC), and the frames
// of the last one in *frames_out.
AW_HELPER long long aw_bench(int iterations, int max_frames, int mode, int* frames_out) {
  PythonFrame frames[kMaxFrames];  // on the stack: TLS of a dlopened library must stay small
  if (max_frames > kMaxFrames) max_frames = kMaxFrames;
  timespec a, b;
  uint32_t n = 0;
  WalkEnd e;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < iterations; ++i) n = walk(mode, frames, static_cast<uint32_t>(max_frames), &e);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *frames_out = static_cast<int>(n);
  return (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
}

// Cost of resolving, off the hot path: one walk, then `iterations` times for each of its frames
// describe_code twice, as a trace writer would (sizes with empty buffers, then the copy into a
// buffer of that size), and then python_lines::locate of each frame's instruction in its table.
// Nanoseconds of all describe_code pairs in ns[0], of all locates in ns[1]; returns the frames,
// or -1 when a frame could not be described (single-threaded: the buffers are static).
AW_HELPER int aw_bench_describe(int iterations, int max_frames, long long* ns) {
  constexpr uint32_t kFrames = 64, kTable = 4096;
  static PythonFrame frames[kFrames];
  static python_frames::CodeDescription d[kFrames];
  static char filenames[kFrames][1024], qualnames[kFrames][256];
  static uint8_t tables[kFrames][kTable];
  WalkEnd e;
  uint32_t n = python_frames::capture(frames, max_frames < 64 ? static_cast<uint32_t>(max_frames) : kFrames, &e);
  auto now = [] {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
  };
  long long t0 = now();
  for (int it = 0; it < iterations; ++it) {
    for (uint32_t i = 0; i < n; ++i) {
      python_frames::CodeDescription sizes;
      if (!python_frames::describe_code(frames[i], sizes) || sizes.filename.needed > sizeof filenames[i] ||
          sizes.qualname.needed > sizeof qualnames[i] || sizes.line_table.needed > kTable) {
        return -1;
      }
      d[i].filename = {filenames[i], sizes.filename.needed};
      d[i].qualname = {qualnames[i], sizes.qualname.needed};
      d[i].line_table = {reinterpret_cast<char*>(tables[i]), sizes.line_table.needed};
      if (!python_frames::describe_code(frames[i], d[i])) return -1;
    }
  }
  long long t1 = now();
  int64_t sum = 0;  // used, so that the locates are not optimized away
  for (int it = 0; it < iterations; ++it) {
    for (uint32_t i = 0; i < n; ++i) {
      sum += python_lines::line_of(d[i].line_table_format, tables[i], d[i].line_table.size, d[i].first_line,
                                   frames[i].instr);
    }
  }
  long long t2 = now();
  ns[0] = t1 - t0;
  ns[1] = sum == 0 ? -1 : t2 - t1;
  return static_cast<int>(n);
}

// `iterations` walks; returns how many differed from the first (this thread's frames cannot
// change during the call), or -1 when the first found no frame.
AW_HELPER int aw_walk_repeat(int iterations, int max_frames) {
  PythonFrame first[kMaxFrames], again[kMaxFrames];
  if (max_frames > kMaxFrames) max_frames = kMaxFrames;
  WalkEnd e;
  uint32_t n = python_frames::capture(first, static_cast<uint32_t>(max_frames), &e);
  if (n == 0) return -1;
  int differ = 0;
  for (int i = 1; i < iterations; ++i) {
    uint32_t m = python_frames::capture(again, static_cast<uint32_t>(max_frames), &e);
    if (m != n || std::memcmp(first, again, n * sizeof(PythonFrame)) != 0) ++differ;
  }
  return differ;
}

// Walks on a new native thread (one that never ran Python); returns the frames found, *end its WalkEnd.
AW_HELPER int aw_walk_native_thread(int* end) {
  struct Result {
    uint32_t n;
    WalkEnd e;
  } r{};
  pthread_t t;
  if (pthread_create(
          &t, nullptr,
          [](void* arg) -> void* {
            auto* res = static_cast<Result*>(arg);
            PythonFrame frames[64];
            res->n = python_frames::capture(frames, 64, &res->e);
            return nullptr;
          },
          &r) != 0) {
    return -1;
  }
  pthread_join(t, nullptr);
  *end = static_cast<int>(r.e);
  return static_cast<int>(r.n);
}

namespace {
// Describes frames[0..n) with describe_code_checked (any thread) into aw_walk's record format.
int describe_checked(const PythonFrame* frames, uint32_t n, char* out, int cap, int* used) {
  static thread_local char filename[4096], qualname[1024];
  static thread_local uint8_t table[1 << 16];
  *used = 0;
  for (uint32_t i = 0; i < n; ++i) {
    python_frames::CodeDescription d;
    d.filename = {filename, sizeof filename};
    d.qualname = {qualname, sizeof qualname};
    d.line_table = {reinterpret_cast<char*>(table), sizeof table};
    if (!python_frames::describe_code_checked(frames[i], d) || d.line_table.truncated) return -1 - static_cast<int>(i);
    if (!write_frame(frames[i], d, out, cap, *used)) return -1 - static_cast<int>(i);
  }
  return static_cast<int>(n);
}

// How a native thread borrows: walks, or walks once keeping what it read and then confirms that
// walk (python_frames::confirm_borrowed), or only confirms the walk kept in g_memo.
enum BorrowMode { kWalk = 0, kWalkThenConfirm = 1, kConfirmKept = 2, kWalkAndKeep = 3 };
python_frames::BorrowMemo g_memo;

struct Borrowed {
  char* out;
  int cap, max_frames, iterations;
  int n, end, used;
  python_frames::Lender lender;
  long long ns;
  int mode;
};

void* borrow_on_native_thread(void* arg) {
  auto* b = static_cast<Borrowed*>(arg);
  PythonFrame frames[64];
  const uint32_t max = b->max_frames < 64 ? static_cast<uint32_t>(b->max_frames) : 64;
  WalkEnd e{};
  uint32_t n = 0;
  if (b->mode == kWalkThenConfirm || b->mode == kWalkAndKeep)
    n = python_frames::capture_borrowed(frames, max, &b->lender, &e, &g_memo);
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (b->mode == kWalk) {
    for (int i = 0; i < b->iterations; ++i) n = python_frames::capture_borrowed(frames, max, &b->lender, &e);
  } else if (b->mode != kWalkAndKeep) {
    for (int i = 0; i < b->iterations; ++i) n = python_frames::confirm_borrowed(&g_memo, frames, max, &b->lender, &e);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  b->ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
  b->end = static_cast<int>(e);
  b->used = 0;
  b->n = b->out ? describe_checked(frames, n, b->out, b->cap, &b->used) : static_cast<int>(n);
  return nullptr;
}
}  // namespace

// On a new native thread (no Python thread state, as XLA's copy threads): capture_borrowed, then
// describe_code_checked of each frame, in aw_walk's format. Returns the frames (or -1-i as
// aw_walk), -100 when no thread could be started; *lender_tid / *running: python_frames::Lender.
AW_HELPER int aw_walk_borrowed(char* out, int cap, int max_frames, int* end, int* used, unsigned* lender_tid,
                               int* running) {
  Borrowed b{out, cap, max_frames, 1, 0, 0, 0, {}, 0, kWalk};
  pthread_t t;
  if (pthread_create(&t, nullptr, borrow_on_native_thread, &b) != 0) return -100;
  pthread_join(t, nullptr);
  *end = b.end;
  *used = b.used;
  *lender_tid = b.lender.native_tid;
  *running = b.lender.running ? 1 : 0;
  return b.n;
}

// As aw_walk_borrowed, on the calling thread (one with Python frames of its own, in a ctypes call:
// GIL released): a thread never lends its own frames to itself.
AW_HELPER int aw_walk_borrowed_here(char* out, int cap, int max_frames, int* end, int* used, unsigned* lender_tid,
                                    int* running) {
  Borrowed b{out, cap, max_frames, 1, 0, 0, 0, {}, 0, kWalk};
  borrow_on_native_thread(&b);
  *end = b.end;
  *used = b.used;
  *lender_tid = b.lender.native_tid;
  *running = b.lender.running ? 1 : 0;
  return b.n;
}

// As aw_walk_borrowed, with the walk kept across calls: `mode` 3 walks and keeps what it read
// (g_memo), 2 only confirms the kept walk (0 frames when the memory it read has changed), 1 walks,
// keeps and confirms at once (the frames are the confirmation's).
AW_HELPER int aw_walk_borrowed_memo(int mode, char* out, int cap, int max_frames, int* end, int* used,
                                    unsigned* lender_tid, int* running) {
  Borrowed b{out, cap, max_frames, 1, 0, 0, 0, {}, 0, mode};
  pthread_t t;
  if (pthread_create(&t, nullptr, borrow_on_native_thread, &b) != 0) return -100;
  pthread_join(t, nullptr);
  *end = b.end;
  *used = b.used;
  *lender_tid = b.lender.native_tid;
  *running = b.lender.running ? 1 : 0;
  return b.n;
}

// `iterations` borrowed walks on a new native thread (`confirm`: one walk, then `iterations`
// confirmations of it); returns their nanoseconds, the frames of the last in *frames_out.
AW_HELPER long long aw_bench_borrowed(int iterations, int max_frames, int* frames_out, int confirm) {
  Borrowed b{nullptr, 0, max_frames, iterations, 0, 0, 0, {}, 0, confirm ? kWalkThenConfirm : kWalk};
  pthread_t t;
  if (pthread_create(&t, nullptr, borrow_on_native_thread, &b) != 0) return -1;
  pthread_join(t, nullptr);
  *frames_out = b.n;
  return b.ns;
}

namespace {
struct Async {
  Borrowed b;
  int delay_ms;
  pthread_t thread;
  char buf[1 << 16];
} g_async;
}  // namespace

// A native thread that waits `delay_ms` and then makes one borrowed walk, while the caller goes on
// (running Python: rule 3 of capture_borrowed); aw_borrow_async_join collects it as aw_walk_borrowed.
AW_HELPER int aw_borrow_async_start(int delay_ms, int max_frames) {
  g_async.b = Borrowed{g_async.buf, sizeof g_async.buf, max_frames, 1, 0, 0, 0, {}, 0, kWalk};
  g_async.delay_ms = delay_ms;
  return pthread_create(
      &g_async.thread, nullptr,
      [](void*) -> void* {
        timespec d{g_async.delay_ms / 1000, (g_async.delay_ms % 1000) * 1000000l};
        nanosleep(&d, nullptr);
        return borrow_on_native_thread(&g_async.b);
      },
      nullptr);
}

AW_HELPER int aw_borrow_async_join(char* out, int cap, int* end, int* used, unsigned* lender_tid, int* running) {
  pthread_join(g_async.thread, nullptr);
  *end = g_async.b.end;
  *used = g_async.b.used < cap ? g_async.b.used : cap;
  std::memcpy(out, g_async.buf, static_cast<size_t>(*used));
  *lender_tid = g_async.b.lender.native_tid;
  *running = g_async.b.lender.running ? 1 : 0;
  return g_async.b.n;
}

// A detached native thread that borrows and describes without pause until the process ends
// (shutdown_test.py: the interpreter finalizes and frees thread states meanwhile).
AW_HELPER int aw_borrow_forever() {
  pthread_t t;
  int rc = pthread_create(
      &t, nullptr,
      [](void*) -> void* {
        static char buf[1 << 16];
        for (;;) {
          Borrowed b{buf, sizeof buf, 64, 1, 0, 0, 0, {}, 0, kWalk};
          borrow_on_native_thread(&b);
        }
        return nullptr;
      },
      nullptr);
  if (rc == 0) pthread_detach(t);
  return rc;
}

// Decodes a raw line table: for instructions 0..count-1, four ints each (line, end line, column,
// end column; -1 unknown) into out. Returns 0, or -1 when the table is malformed.
AW_HELPER int aw_decode(int format, const unsigned char* table, int size, int first_line, int count, int* out) {
  auto f = static_cast<python_lines::LineTableFormat>(format);
  for (int i = 0; i < count * 4; ++i) out[i] = -1;
  bool ok = python_lines::for_each_range(f, table, static_cast<size_t>(size), first_line,
                                         [&](uint32_t start, uint32_t end, const python_lines::SourceLocation& loc) {
                                           for (uint32_t i = start; i < end && i < static_cast<uint32_t>(count); ++i) {
                                             out[4 * i] = loc.line;
                                             out[4 * i + 1] = loc.end_line;
                                             out[4 * i + 2] = loc.column;
                                             out[4 * i + 3] = loc.end_column;
                                           }
                                         });
  // locate() must agree with for_each_range (on every instruction of small code objects, on
  // about 500 of a large one: locate scans the table from the start).
  int step = count > 2000 ? count / 500 : 1;
  for (int i = 0; i < count; i += step) {
    python_lines::SourceLocation l = python_lines::locate(f, table, static_cast<size_t>(size), first_line, i);
    if (l.line != out[4 * i] || l.column != out[4 * i + 2] || l.end_line != out[4 * i + 1] ||
        l.end_column != out[4 * i + 3]) {
      return -2;
    }
  }
  return ok ? 0 : -1;
}

// Runs Python source `code` on a new native thread that enters the interpreter the way C++
// libraries' own threads do (PyGILState_Ensure: a thread state made for this thread), as
// PyTorch's autograd device threads run backward hooks. The interpreter's functions are looked up
// in the process (the helper does not link libpython). Returns PyRun_SimpleString's result, or
// -2 when the functions are not found.
AW_HELPER int aw_run_python_on_native_thread(const char* code) {
  struct Call {
    const char* code;
    int result;
  } call{code, -2};
  using Ensure = int (*)();
  using Release = void (*)(int);
  using Run = int (*)(const char*);
  static auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  static auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  static auto run = reinterpret_cast<Run>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
  if (!ensure || !release || !run) return -2;
  pthread_t t;
  if (pthread_create(
          &t, nullptr,
          [](void* arg) -> void* {
            auto* c = static_cast<Call*>(arg);
            int state = ensure();
            c->result = run(c->code);
            release(state);
            return nullptr;
          },
          &call) != 0) {
    return -3;
  }
  pthread_join(t, nullptr);
  return call.result;
}
