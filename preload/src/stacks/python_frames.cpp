#include "python_frames.h"

#include <link.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "common.h"
#include "dynamic_symbols.h"
#include "python_debug_offsets.h"
#include "python_layout.h"

namespace asyncwatch::python_frames {
namespace {

using python_layout::FrameKind;
using python_layout::kAbsent;
using python_layout::Layout;

// ---------------------------------------------------------------------------------------------
// Reading memory. A reader hands out a view of `size` bytes at an address: the address itself
// (plain loads) or a copy made by process_vm_readv, which fails with EFAULT instead of faulting.

struct DirectReader {
  const uint8_t* view(uint64_t addr, size_t) { return reinterpret_cast<const uint8_t*>(addr); }
  bool copy(uint64_t addr, void* to, size_t size) {
    std::memcpy(to, reinterpret_cast<const void*>(addr), size);
    return true;
  }
  void prefetch(uint64_t, size_t, uint64_t, size_t) {}
  bool failed() const { return false; }
};

struct CheckedReader {
  static constexpr size_t kMaxView = 256;
  pid_t pid = getpid();
  bool unreadable = false;
  unsigned next = 0;
  alignas(8) uint8_t buffers[2][kMaxView];  // two views alive at a time (a frame and its code)
  // Two regions read by one process_vm_readv ahead of their views (prefetch): each is handed out
  // once by the view of the same address and at most the same size.
  uint64_t ahead_addr[2] = {};
  size_t ahead_size[2] = {};
  alignas(8) uint8_t ahead[2][kMaxView];
  // A borrowed walk that keeps what it read (BorrowMemo); `log_lost`: a region failed or did not fit.
  BorrowMemo* log = nullptr;
  bool log_lost = false;

  void remember(uint64_t addr, const void* bytes, size_t size) {
    if (!log) return;
    BorrowMemo& m = *log;
    if (m.regions == BorrowMemo::kMaxRegions || size > BorrowMemo::kMaxBytes - m.bytes) {
      log_lost = true;
      return;
    }
    m.remote[m.regions++] = {reinterpret_cast<void*>(addr), size};
    std::memcpy(m.data + m.bytes, bytes, size);
    m.bytes += static_cast<uint32_t>(size);
  }

  const uint8_t* view(uint64_t addr, size_t size) {
    if (size > kMaxView) size = kMaxView;
    for (unsigned i = 0; i < 2; ++i) {
      if (ahead_size[i] && ahead_addr[i] == addr && size <= ahead_size[i]) {
        ahead_size[i] = 0;
        return ahead[i];
      }
    }
    next ^= 1;
    if (!copy(addr, buffers[next], size)) {
      unreadable = true;
      return nullptr;
    }
    return buffers[next];
  }
  bool copy(uint64_t addr, void* to, size_t size) {
    ErrnoKeeper keep_errno;
    iovec local{to, size};
    iovec remote{reinterpret_cast<void*>(addr), size};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(size)) return log_lost = true, false;
    remember(addr, to, size);
    return true;
  }
  // The walk's next two reads (a frame's code object, the frame before it) in one system call
  // instead of two. A region that cannot be read is not kept: its view reads again (and fails).
  void prefetch(uint64_t a, size_t a_size, uint64_t b, size_t b_size) {
    ErrnoKeeper keep_errno;
    a_size = a_size > kMaxView ? kMaxView : a_size;
    b_size = b_size > kMaxView ? kMaxView : b_size;
    iovec local[2] = {{ahead[0], a_size}, {ahead[1], b_size}};
    iovec remote[2] = {{reinterpret_cast<void*>(a), a_size}, {reinterpret_cast<void*>(b), b_size}};
    const ssize_t got = process_vm_readv(pid, local, 2, remote, 2, 0);
    ahead_addr[0] = a;
    ahead_addr[1] = b;
    ahead_size[0] = got >= static_cast<ssize_t>(a_size) ? a_size : 0;
    ahead_size[1] = got == static_cast<ssize_t>(a_size + b_size) ? b_size : 0;
    if (ahead_size[0]) remember(a, ahead[0], a_size);
    if (ahead_size[1]) remember(b, ahead[1], b_size);
    if (!ahead_size[0] || !ahead_size[1]) log_lost = true;
  }
  bool failed() const { return unreadable; }
};

template <class T>
T field(const uint8_t* view, uint16_t offset) {
  T value;
  std::memcpy(&value, view + offset, sizeof value);
  return value;
}

// User-space, 8-byte aligned, not in the first 64 KiB: what every pointer CPython stores to a
// thread state, a frame or an object is (the allocators align to 16).
bool plausible(uint64_t p) { return p >= 0x10000 && p < (uint64_t(1) << 56) && (p & 7) == 0; }

// ---------------------------------------------------------------------------------------------
// The interpreter found at the search, written once before g_state becomes kReady.

struct Interpreter {
  const Layout* layout = nullptr;
  uint64_t runtime = 0;       // &_PyRuntime
  uint64_t code_type = 0;     // &PyCode_Type
  uint64_t frame_type = 0;    // &PyFrame_Type (3.10 frames are objects)
  uint64_t unicode_type = 0;  // &PyUnicode_Type
  uint64_t bytes_type = 0;    // &PyBytes_Type
  uint64_t none = 0;          // &_Py_NoneStruct (3.13+: f_executable of a frame without code)
  uint32_t version_hex = 0;
  size_t layout_index = 0;  // in python_layout::kLayouts
};
Interpreter g_interpreter;

std::atomic<uint8_t> g_state{static_cast<uint8_t>(Availability::kNotSearched)};
constexpr uint8_t kSearching = 0xff;
std::atomic<uint64_t> g_searches{0};
std::atomic<const char*> g_detail{"not searched yet"};
char g_object_path[512];

constexpr uint32_t kMaxSkipped = 256;  // frames without Python code (shims, incomplete) per walk

uint32_t fingerprint(uint64_t filename, uint64_t name, uint64_t linetable, int32_t first_line) {
  uint64_t h = (filename ^ (name << 1) ^ (linetable << 2) ^ static_cast<uint32_t>(first_line)) * 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(h >> 32);
}

// ---------------------------------------------------------------------------------------------
// The walk: one definition, compiled for each reader and each layout of the table (the offsets
// become immediates: a table looked up at run time doubled the instructions per frame).

constexpr uint16_t view_size(std::initializer_list<uint16_t> offsets) {
  uint16_t size = 0;
  for (uint16_t o : offsets) {
    if (o != kAbsent && o + 8 > size) size = static_cast<uint16_t>(o + 8);
  }
  return size;
}

template <size_t kLayout>
struct Views {
  static constexpr const Layout& L = python_layout::kLayouts[kLayout];
  // How much of each structure a walk reads (the largest offset read + 8).
  static constexpr uint16_t kTstate =
      view_size({L.tstate_interp, L.tstate_thread_id, L.tstate_frame, L.tstate_next, L.tstate_native_thread_id});
  static constexpr uint16_t kFrame =
      view_size({L.object_type, L.frame_back, L.frame_code, L.frame_lasti, L.frame_instr, L.frame_owner});
  static constexpr uint16_t kCode = view_size({L.object_type, L.object_size, L.code_firstlineno, L.code_filename,
                                               L.code_name, L.code_linetable, L.code_firsttraceable});
  static_assert(kTstate <= CheckedReader::kMaxView && kFrame <= CheckedReader::kMaxView &&
                kCode <= CheckedReader::kMaxView);
};

// The innermost frame of the thread state viewed at `ts` (3.11/3.12: through its _PyCFrame).
// False when a pointer on the way is not plausible or unreadable.
template <class Reader, size_t kLayout>
bool first_frame(Reader& rd, const uint8_t* ts, uint64_t& frame) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  frame = field<uint64_t>(ts, L.tstate_frame);
  if constexpr (L.cframe_current_frame != kAbsent) {
    if (frame != 0) {
      if (!plausible(frame)) return false;
      const uint8_t* cframe = rd.view(frame, L.cframe_current_frame + 8u);
      if (!cframe) return false;
      frame = field<uint64_t>(cframe, L.cframe_current_frame);
    }
  }
  return true;
}

const uint64_t* finalizing_field(const Layout& L) {
  return reinterpret_cast<const uint64_t*>(g_interpreter.runtime + L.runtime_finalizing);  // in the object's data
}

constexpr uint32_t kMaxElidedWalk = 1024;  // frames read by a walk that keeps the outermost ones
constexpr uint32_t kMaxOuterFrames = 16;   // outermost frames such a walk keeps

// The frames from `frame` outwards, while the runtime's _finalizing stays `finalizing`. `outer`
// (< max): past `max` frames, keep walking and keep the last `outer` frames read in the last
// `outer` slots (a ring, put in order at the end: kElided), so that a deep stack (torch.compile's
// 100+ frames) still has its outermost frames, where the user's script is.
template <class Reader, size_t kLayout>
uint32_t walk_frames(Reader& rd, uint64_t frame, uint64_t finalizing, PythonFrame* out, uint32_t max, WalkEnd& end,
                     uint32_t outer = 0) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  constexpr bool kFrameObjects = L.frame_kind == FrameKind::kFrameObject;
  using V = Views<kLayout>;
  const Interpreter& in = g_interpreter;
  const uint64_t* fin = finalizing_field(L);
  if (outer >= max) outer = 0;
  if (outer > kMaxOuterFrames) outer = kMaxOuterFrames;
  const uint32_t inner = max - outer;
  uint32_t total = 0, skipped = 0;  // total: frames read (stored, or stored and overwritten)
  // The walk's end: the ring of outer frames rotated into order when frames were left out.
  auto done = [&](WalkEnd e) -> uint32_t {
    if (total <= max) return end = e, total;
    const uint32_t first = (total - inner) % outer;  // the ring's oldest slot
    PythonFrame ring[kMaxOuterFrames];
    for (uint32_t i = 0; i < outer; ++i) ring[i] = out[inner + (first + i) % outer];
    for (uint32_t i = 0; i < outer; ++i) out[inner + i] = ring[i];
    end = WalkEnd::kElided;
    return max;
  };
  uint32_t n = 0;  // the slot of the next frame
  while (frame != 0) {
    if (total == max && outer == 0) return end = WalkEnd::kDepthLimit, total;
    if (total == kMaxElidedWalk) return done(WalkEnd::kInvalid);
    n = total < max ? total : inner + (total - inner) % outer;
    // A runtime that started finalizing while we walk may free what we are about to read.
    if (!plausible(frame) || __atomic_load_n(fin, __ATOMIC_ACQUIRE) != finalizing) return done(WalkEnd::kInvalid);
    const uint8_t* f = rd.view(frame, V::kFrame);
    if (!f) return done(WalkEnd::kInvalid);
    uint64_t code = field<uint64_t>(f, L.frame_code);
    // 3.14's f_executable is a _PyStackRef: the object's address, its low bit set for a deferred
    // reference (Py_TAG_BITS of the default build, cleared as PyStackRef_AsPyObjectBorrow does).
    if constexpr (L.minor >= 14) code &= ~uint64_t{1};
    const uint64_t back = field<uint64_t>(f, L.frame_back);
    int32_t instr = 0;
    [[maybe_unused]] uint64_t instr_ptr = 0;
    [[maybe_unused]] bool generator = false;
    if constexpr (kFrameObjects) {
      if (field<uint64_t>(f, L.object_type) != in.frame_type) return done(WalkEnd::kInvalid);
      instr = field<int32_t>(f, L.frame_lasti);
      if (instr < -1 || instr >= (1 << 28)) return done(WalkEnd::kInvalid);
    } else {
      const auto owner = static_cast<uint8_t>(field<char>(f, L.frame_owner));
      bool no_code = false;
      if constexpr (L.owned_by_cstack != kAbsent) no_code = owner >= L.owned_by_cstack;  // an entry shim
      if constexpr (L.minor >= 13) no_code = no_code || code == in.none;                 // f_executable is None
      if (no_code) {
        if (++skipped > kMaxSkipped) return done(WalkEnd::kInvalid);
        frame = back;
        continue;
      }
      generator = owner == L.owned_by_generator;
      instr_ptr = field<uint64_t>(f, L.frame_instr);
    }
    if (!plausible(code)) return done(WalkEnd::kInvalid);
    if (plausible(back)) rd.prefetch(code, V::kCode, back, V::kFrame);
    const uint8_t* c = rd.view(code, V::kCode);
    if (!c || field<uint64_t>(c, L.object_type) != in.code_type) return done(WalkEnd::kInvalid);
    if constexpr (!kFrameObjects) {
      const int64_t units = field<int64_t>(c, L.object_size);
      const int64_t delta = static_cast<int64_t>(instr_ptr - (code + L.code_adaptive));
      // 3.11/3.12 point one unit before the bytecode in a frame that has not started.
      if (units <= 0 || units >= (int64_t(1) << 28) || (delta & 1) || delta < -2 || delta >= 2 * units) {
        return done(WalkEnd::kInvalid);
      }
      instr = static_cast<int32_t>(delta / 2);
      if (!generator && instr < field<int32_t>(c, L.code_firsttraceable)) {
        // Incomplete: still running its prologue (CPython leaves it out of tracebacks too).
        if (++skipped > kMaxSkipped) return done(WalkEnd::kInvalid);
        frame = back;
        continue;
      }
    }
    out[n].code = code;
    out[n].instr = instr;
    out[n].code_check = fingerprint(field<uint64_t>(c, L.code_filename), field<uint64_t>(c, L.code_name),
                                    field<uint64_t>(c, L.code_linetable), field<int32_t>(c, L.code_firstlineno));
    ++total;
    frame = back;
  }
  return done(WalkEnd::kComplete);
}

// The calling thread's own frames (`tstate` is its PyGILState state).
template <class Reader, size_t kLayout>
uint32_t walk(Reader& rd, uint64_t tstate, PythonFrame* out, uint32_t max, WalkEnd& end, uint32_t outer) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  auto* runtime = reinterpret_cast<const uint8_t*>(g_interpreter.runtime);  // in the object's data: mapped
  end = WalkEnd::kNoThreadState;

  // Not while another thread finalizes the runtime (it frees thread states: checked before this
  // one is read), and the thread state must be this thread's, of the main interpreter.
  const uint64_t finalizing = __atomic_load_n(finalizing_field(L), __ATOMIC_ACQUIRE);
  if (finalizing != 0 && finalizing != tstate) return 0;
  const uint8_t* ts = rd.view(tstate, Views<kLayout>::kTstate);
  if (!ts) return end = WalkEnd::kInvalid, 0;
  uint64_t main_interp = field<uint64_t>(runtime, L.runtime_interpreters_main);
  if (field<uint64_t>(ts, L.tstate_interp) != main_interp || main_interp == 0) return 0;
  if (field<uint64_t>(ts, L.tstate_thread_id) != static_cast<uint64_t>(pthread_self())) return 0;
  uint64_t frame = 0;
  if (!first_frame<Reader, kLayout>(rd, ts, frame)) return end = WalkEnd::kInvalid, 0;
  return walk_frames<Reader, kLayout>(rd, frame, finalizing, out, max, end, outer);
}

// The calling thread's state: PyGILState's thread-specific value, which CPython sets for every
// thread that runs Python (the main thread, threading's threads, PyGILState_Ensure) and which,
// unlike the "current thread state", stays set while the thread has released the GIL.
// 0 and `end` set when there is none.
template <size_t kLayout>
uint64_t thread_state(WalkEnd& end) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  auto* runtime = reinterpret_cast<const uint8_t*>(g_interpreter.runtime);
  end = WalkEnd::kNoPython;
  if (__atomic_load_n(reinterpret_cast<const int*>(runtime + L.runtime_initialized), __ATOMIC_ACQUIRE) == 0) {
    return 0;
  }
  if (field<int>(runtime, L.runtime_tss + L.tss_initialized) != 1) return 0;
  auto key = field<unsigned>(runtime, L.runtime_tss + L.tss_key);
  if (key >= PTHREAD_KEYS_MAX) return 0;
  end = WalkEnd::kNoThreadState;
  return reinterpret_cast<uint64_t>(pthread_getspecific(static_cast<pthread_key_t>(key)));
}

void set_unavailable(Availability a, const char* why) {
  g_detail.store(why, std::memory_order_relaxed);
  g_state.store(static_cast<uint8_t>(a), std::memory_order_release);
}

// Set by the first checked walk that found frames and no unreadable memory: the layout is then
// that of this interpreter, and later walks use plain loads.
std::atomic<bool> g_layout_proven{false};

template <size_t kLayout>
uint32_t capture_as(PythonFrame* out, uint32_t max, WalkEnd& e, bool checked_only, uint32_t outer) {
  uint64_t tstate = thread_state<kLayout>(e);
  if (tstate == 0) return 0;
  if (!plausible(tstate)) return e = WalkEnd::kInvalid, 0;
  if (AW_LIKELY(!checked_only && g_layout_proven.load(std::memory_order_relaxed))) {
    DirectReader rd;
    return walk<DirectReader, kLayout>(rd, tstate, out, max, e, outer);
  }
  // Until a walk has shown that the layout is right, read without risking a fault. If a pointer
  // the layout leads to is unreadable, plain loads could fault: Python frames are turned off.
  CheckedReader rd;
  uint32_t n = walk<CheckedReader, kLayout>(rd, tstate, out, max, e, outer);
  if (rd.failed()) {
    set_unavailable(Availability::kUnsupported,
                    "a pointer in CPython's thread state or frames was unreadable (layout mismatch?)");
    return 0;
  }
  if (n > 0 && (e == WalkEnd::kComplete || e == WalkEnd::kDepthLimit || e == WalkEnd::kElided)) {
    g_layout_proven.store(true, std::memory_order_relaxed);
  }
  return n;
}

template <size_t... I>
uint32_t capture_dispatch(std::index_sequence<I...>, PythonFrame* out, uint32_t max, WalkEnd& e, bool checked_only,
                          uint32_t outer) {
  uint32_t n = 0;
  const size_t layout = g_interpreter.layout_index;
  ((layout == I ? (n = capture_as<I>(out, max, e, checked_only, outer), true) : false) || ...);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Borrowed frames: a thread without a Python thread state (a framework's native thread) gets the
// frames of another thread of the main interpreter, chosen by the rule in python_frames.h. Other
// threads' states and frames change and are freed while we read them: every read goes through
// process_vm_readv, whatever the layout's proof, and an unreadable pointer only ends this walk.

constexpr uint32_t kMaxBorrowThreads = 64;  // thread states looked at per borrowed walk

struct Candidate {
  uint64_t tstate = 0, frame = 0, native_tid = 0;
  bool holds_gil = false;
};

// The inputs of a borrowed walk that it loads directly rather than through the reader.
struct BorrowInputs {
  uint64_t own = 0, finalizing = 0, main_interp = 0, main_thread = 0;
};
template <size_t kLayout>
BorrowInputs borrow_inputs(WalkEnd& e) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  auto* runtime = reinterpret_cast<const uint8_t*>(g_interpreter.runtime);
  BorrowInputs in;
  in.own = thread_state<kLayout>(e);
  if (e != WalkEnd::kNoThreadState) return in;
  in.finalizing = __atomic_load_n(finalizing_field(L), __ATOMIC_ACQUIRE);
  in.main_interp = field<uint64_t>(runtime, L.runtime_interpreters_main);
  in.main_thread = field<uint64_t>(runtime, L.runtime_main_thread);
  return in;
}

template <size_t kLayout>
uint32_t borrow_as(PythonFrame* out, uint32_t max, WalkEnd& e, Lender& lender, BorrowMemo* memo) {
  constexpr const Layout& L = python_layout::kLayouts[kLayout];
  using V = Views<kLayout>;
  // Only for a thread without any thread state, or with one of the main interpreter and no frames (a
  // native thread that attached a state once and runs no Python: PyTorch's autograd workers); one
  // with a state of a subinterpreter, or that the finalizing runtime no longer lets walk, is not
  // lent another's.
  const BorrowInputs inputs = borrow_inputs<kLayout>(e);
  if (e != WalkEnd::kNoThreadState) return 0;
  const uint64_t own = inputs.own, finalizing = inputs.finalizing, main_interp = inputs.main_interp;
  if (finalizing != 0) return 0;  // it frees thread states
  if (!plausible(main_interp)) return 0;
  CheckedReader rd;
  if (memo) {
    memo->valid = false;
    memo->regions = memo->bytes = 0;
    memo->gil_region = BorrowMemo::kMaxRegions;
    rd.log = memo;
  }
  if (own != 0) {
    uint64_t own_interp = 0;
    if (!plausible(own) || !rd.copy(own + L.tstate_interp, &own_interp, sizeof own_interp) || own_interp != main_interp)
      return 0;
  }
  // The GIL's holder: locked, and its last holder (which stays set after a release).
  uint64_t gil = 0, holder = 0;
  if constexpr (L.runtime_gil != kAbsent) {
    gil = g_interpreter.runtime + L.runtime_gil;
  } else {
    if (!rd.copy(main_interp + L.interp_gil, &gil, sizeof gil) || !plausible(gil)) gil = 0;
  }
  if (gil) {
    uint8_t g[view_size({L.gil_last_holder, L.gil_locked})];
    const uint32_t region = memo ? memo->regions : 0, offset = memo ? memo->bytes : 0;
    if (rd.copy(gil, g, sizeof g)) {
      if (field<int>(g, L.gil_locked) > 0) holder = field<uint64_t>(g, L.gil_last_holder);
      if (memo && !rd.log_lost) {
        memo->gil_region = region;
        memo->gil_offset = offset;
        memo->gil_locked = L.gil_locked;
        memo->gil_last_holder = L.gil_last_holder;
      }
    }
  }
  const uint64_t main_thread = inputs.main_thread;
  uint64_t t = 0;
  if (!rd.copy(main_interp + L.interp_threads_head, &t, sizeof t)) return 0;
  Candidate main, other, running;
  uint32_t waiting_others = 0;
  for (uint32_t k = 0; t != 0 && k < kMaxBorrowThreads; ++k) {
    if (!plausible(t)) break;
    if (t == own) {
      // The calling thread never lends to itself (it may have frames: a thread Python did not
      // create, running Python). Only its link is read: the rest of its state changes as it runs,
      // which would fail every confirmation of this walk.
      if (!rd.copy(t + L.tstate_next, &t, sizeof t)) break;
      continue;
    }
    const uint8_t* ts = rd.view(t, V::kTstate);
    if (!ts || field<uint64_t>(ts, L.tstate_interp) != main_interp) break;  // freed or reused meanwhile
    const uint64_t next = field<uint64_t>(ts, L.tstate_next);
    const uint64_t thread_id = field<uint64_t>(ts, L.tstate_thread_id);
    Candidate c;
    c.tstate = t;
    c.holds_gil = t == holder;
    if constexpr (L.tstate_native_thread_id != kAbsent) c.native_tid = field<uint64_t>(ts, L.tstate_native_thread_id);
    if (first_frame<CheckedReader, kLayout>(rd, ts, c.frame) && c.frame != 0) {
      if (thread_id == main_thread) {
        main = c;
      } else if (!c.holds_gil) {
        ++waiting_others;
        other = c;
      }
      if (c.holds_gil) running = c;
    }
    t = next;
  }
  const Candidate* pick = nullptr;
  if (main.tstate && !main.holds_gil) {
    pick = &main;  // the main thread, waiting in a C call
  } else if (waiting_others == 1) {
    pick = &other;  // the one other thread waiting in a C call
  } else if (waiting_others == 0 && running.tstate) {
    pick = &running;  // nobody waits: the thread running bytecode (it may have moved on a little)
  }
  e = WalkEnd::kNoThreadState;
  if (!pick) return 0;
  uint32_t n = walk_frames<CheckedReader, kLayout>(rd, pick->frame, finalizing, out, max, e);
  if (n == 0) return e = WalkEnd::kNoThreadState, 0;
  lender.native_tid = static_cast<uint32_t>(pick->native_tid);
  lender.running = pick->holds_gil;
  if (memo && !rd.log_lost && n <= BorrowMemo::kMaxFrames) {
    memo->max = max;
    memo->own_state = own;
    memo->main_interp = main_interp;
    memo->main_thread = main_thread;
    memo->n = n;
    memo->end = e;
    memo->lender = lender;
    std::memcpy(memo->frames, out, n * sizeof *out);
    memo->valid = true;
  }
  return n;
}

template <size_t... I>
uint32_t borrow_dispatch(std::index_sequence<I...>, PythonFrame* out, uint32_t max, WalkEnd& e, Lender& lender,
                         BorrowMemo* memo) {
  uint32_t n = 0;
  const size_t layout = g_interpreter.layout_index;
  ((layout == I ? (n = borrow_as<I>(out, max, e, lender, memo), true) : false) || ...);
  return n;
}

template <size_t... I>
BorrowInputs borrow_inputs_dispatch(std::index_sequence<I...>, WalkEnd& e) {
  BorrowInputs in;
  const size_t layout = g_interpreter.layout_index;
  ((layout == I ? (in = borrow_inputs<I>(e), true) : false) || ...);
  return in;
}

// ---------------------------------------------------------------------------------------------
// The search: the first object in load order that exports _PyRuntime, then checks that it is a
// CPython whose layout is in python_layout.h, read through checked reads only.

struct Found {
  bool any = false;
  dynamic_symbols::Symbol runtime{}, version{}, py_is{}, code_type{}, type_type{}, frame_type{}, unicode_type{},
      bytes_type{}, none{};
  bool has_version = false, has_py_is = false, has_frame_type = false, has_none = false;
  bool complete = false;  // all of the types found
};

bool visit(const dynamic_symbols::Object& object, void* arg) {
  auto* found = static_cast<Found*>(arg);
  dynamic_symbols::Symbol runtime;
  if (!object.find("_PyRuntime", &runtime) || !runtime.is_data) return false;
  found->any = true;
  found->runtime = runtime;
  found->has_version = object.find("Py_Version", &found->version);
  found->has_py_is = object.find("Py_Is", &found->py_is);
  found->has_frame_type = object.find("PyFrame_Type", &found->frame_type);
  found->has_none = object.find("_Py_NoneStruct", &found->none);
  found->complete = object.find("PyCode_Type", &found->code_type) && object.find("PyType_Type", &found->type_type) &&
                    object.find("PyUnicode_Type", &found->unicode_type) &&
                    object.find("PyBytes_Type", &found->bytes_type);
  const char* name = object.name();
  std::strncpy(g_object_path, *name ? name : "the executable", sizeof g_object_path - 1);
  return true;
}

// A type object: its type is `type_type`, its tp_name is `name` and (when given) its sizes.
bool check_type(CheckedReader& rd, const Layout& L, uint64_t type, uint64_t type_type, const char* name,
                int64_t basicsize, int64_t itemsize) {
  uint8_t t[64];
  if (!rd.copy(type, t, sizeof t)) return false;
  if (field<uint64_t>(t, L.object_type) != type_type) return false;
  if (basicsize >= 0 &&
      (field<int64_t>(t, L.type_basicsize) != basicsize || field<int64_t>(t, L.type_itemsize) != itemsize)) {
    return false;
  }
  char text[16] = {};
  size_t len = std::strlen(name) + 1;
  return rd.copy(field<uint64_t>(t, L.type_name), text, len) && std::memcmp(text, name, len) == 0;
}

// 3.13+'s _PyRuntime starts with _Py_DebugOffsets (for debuggers): the offsets it states must be
// those of python_layout.h, or this is a build the table does not describe.
template <class DebugOffsets>
const char* check_debug_offsets(CheckedReader& rd, const Layout& L, uint64_t runtime, uint32_t version) {
  DebugOffsets d;
  if (!rd.copy(runtime, &d, sizeof d)) return "_PyRuntime.debug_offsets is unreadable";
  if (std::memcmp(d.cookie, "xdebugpy", 8) != 0) return "_PyRuntime.debug_offsets has no cookie";
  if (d.version != version) return "_PyRuntime.debug_offsets names another version than Py_Version";
  if (d.free_threaded != 0) return "free-threaded CPython (3.13t, 3.14t) is not supported";
  const bool same =
      d.runtime_state.finalizing == L.runtime_finalizing && d.thread_state.interp == L.tstate_interp &&
      d.thread_state.current_frame == L.tstate_frame && d.thread_state.thread_id == L.tstate_thread_id &&
      d.interpreter_frame.previous == L.frame_back && d.interpreter_frame.executable == L.frame_code &&
      d.interpreter_frame.instr_ptr == L.frame_instr && d.interpreter_frame.owner == L.frame_owner &&
      d.code_object.size == L.code_size && d.code_object.filename == L.code_filename &&
      d.code_object.name == L.code_name && d.code_object.qualname == L.code_qualname &&
      d.code_object.linetable == L.code_linetable && d.code_object.firstlineno == L.code_firstlineno &&
      d.code_object.co_code_adaptive == L.code_adaptive && d.pyobject.ob_type == L.object_type &&
      d.type_object.tp_name == L.type_name && d.bytes_object.ob_sval == L.bytes_data &&
      d.unicode_object.state == L.unicode_state && d.unicode_object.length == L.unicode_length &&
      d.unicode_object.asciiobject_size == L.unicode_ascii_data &&
      // what borrowed frames read
      d.interpreter_state.threads_head == L.interp_threads_head && d.interpreter_state.ceval_gil == L.interp_gil &&
      d.thread_state.next == L.tstate_next && d.thread_state.native_thread_id == L.tstate_native_thread_id &&
      d.interpreter_state.gil_runtime_state_holder - d.interpreter_state.gil_runtime_state == L.gil_last_holder &&
      d.interpreter_state.gil_runtime_state_locked - d.interpreter_state.gil_runtime_state == L.gil_locked;
  return same ? nullptr : "_PyRuntime.debug_offsets differ from the known layout of this version";
}

// Fills g_interpreter; returns the resulting availability and sets g_detail.
Availability search() {
  ErrnoKeeper keep_errno;
  Found found;
  dynamic_symbols::for_each_object(visit, &found);
  if (!found.any) {
    g_detail.store("no loaded object exports _PyRuntime", std::memory_order_relaxed);
    return Availability::kNoPython;
  }
  auto fail = [](const char* why) {
    g_detail.store(why, std::memory_order_relaxed);
    return Availability::kUnsupported;
  };
  CheckedReader rd;
  uint32_t version = 0;
  if (found.has_version) {
    uint64_t v = 0;
    if (!found.version.is_data || !rd.copy(found.version.address, &v, sizeof v))
      return fail("Py_Version is unreadable");
    version = static_cast<uint32_t>(v);
  } else if (found.has_py_is) {
    version = 0x030a0000;  // Py_Version is new in 3.11 and Py_Is in 3.10
  } else {
    return fail("CPython before 3.10 (no Py_Version, no Py_Is) is not supported");
  }
  if ((version >> 24) != 3) return fail("not CPython 3");
  const Layout* L = python_layout::find((version >> 16) & 0xff);
  if (!L) return fail("this CPython version is not supported (3.10 to 3.14 are)");
  if (found.has_version && ((version >> 4) & 0xf) < 0xc) {
    return fail("an alpha or beta release of CPython: its layout may differ from the final one");
  }
  if (!found.complete || (L->frame_kind == FrameKind::kFrameObject && !found.has_frame_type)) {
    return fail("a CPython type object is not exported");
  }
  const uint16_t runtime_needed =
      view_size({L->runtime_initialized, L->runtime_finalizing, L->runtime_interpreters_main, L->runtime_tss});
  if (found.runtime.size < runtime_needed) return fail("_PyRuntime is smaller than the layout says");
  {
    uint8_t probe[8];
    if (!rd.copy(found.runtime.address, probe, 1) ||
        !rd.copy(found.runtime.address + runtime_needed - sizeof probe, probe, sizeof probe)) {
      return fail("_PyRuntime is unreadable");
    }
  }
  // 3.13+ states its own offsets (and whether it is a free-threaded build): compare first.
  if (L->minor >= 13) {
    const char* why = L->minor == 13
                          ? check_debug_offsets<python_layout::DebugOffsets313>(rd, *L, found.runtime.address, version)
                          : check_debug_offsets<python_layout::DebugOffsets314>(rd, *L, found.runtime.address, version);
    if (why) return fail(why);
    if (!found.has_none) return fail("_Py_NoneStruct is not exported");
  }
  const uint64_t type_type = found.type_type.address;
  // 3.11+ code objects hold their bytecode inline: tp_basicsize ends where it starts.
  const bool inline_code = L->frame_kind == FrameKind::kInterpreterFrame;
  if (!check_type(rd, *L, found.code_type.address, type_type, "code", inline_code ? L->code_adaptive : L->code_size,
                  inline_code ? 2 : 0)) {
    return fail("PyCode_Type does not match the layout of this version (a debug or unusual build?)");
  }
  if (!check_type(rd, *L, found.unicode_type.address, type_type, "str", -1, 0) ||
      !check_type(rd, *L, found.bytes_type.address, type_type, "bytes", -1, 0) ||
      (L->frame_kind == FrameKind::kFrameObject &&
       !check_type(rd, *L, found.frame_type.address, type_type, "frame", -1, 0))) {
    return fail("PyUnicode_Type, PyBytes_Type or PyFrame_Type does not match the layout");
  }
  Interpreter& in = g_interpreter;
  in.layout = L;
  in.runtime = found.runtime.address;
  in.code_type = found.code_type.address;
  in.frame_type = found.has_frame_type ? found.frame_type.address : 0;
  in.unicode_type = found.unicode_type.address;
  in.bytes_type = found.bytes_type.address;
  in.none = L->minor >= 13 ? found.none.address : 0;
  in.version_hex = version;
  in.layout_index = static_cast<size_t>(L - python_layout::kLayouts);
  g_detail.store(g_object_path, std::memory_order_relaxed);
  return Availability::kReady;
}

bool ready() {
  uint8_t s = g_state.load(std::memory_order_acquire);
  if (AW_LIKELY(s == static_cast<uint8_t>(Availability::kReady))) return true;
  if (s != static_cast<uint8_t>(Availability::kNotSearched)) return false;
  // One thread searches; the others find nothing until it is done.
  if (!g_state.compare_exchange_strong(s, kSearching, std::memory_order_acq_rel)) return false;
  g_searches.fetch_add(1, std::memory_order_relaxed);
  g_state.store(static_cast<uint8_t>(search()), std::memory_order_release);
  return g_state.load(std::memory_order_acquire) == static_cast<uint8_t>(Availability::kReady);
}

// ---------------------------------------------------------------------------------------------
// Text out of str objects: compact strings only (every str CPython makes for code objects).

// Code point `c` as UTF-8 in u; returns its length.
uint32_t encode_utf8(uint32_t c, uint8_t u[4]) {
  if (c >= 0xdc80 && c <= 0xdcff) {  // surrogateescape: the byte it stands for
    u[0] = static_cast<uint8_t>(c - 0xdc00);
    return 1;
  }
  if (c < 0x80) {
    u[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    u[0] = static_cast<uint8_t>(0xc0 | (c >> 6));
    u[1] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    return 2;
  }
  if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) c = 0xfffd;  // a lone surrogate
  if (c < 0x10000) {
    u[0] = static_cast<uint8_t>(0xe0 | (c >> 12));
    u[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
    u[2] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    return 3;
  }
  u[0] = static_cast<uint8_t>(0xf0 | (c >> 18));
  u[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3f));
  u[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
  u[3] = static_cast<uint8_t>(0x80 | (c & 0x3f));
  return 4;
}

constexpr int64_t kMaxText = int64_t(1) << 20;  // a longer file or function name is not real

// The str at `str` as UTF-8 into b. Reads through `rd` (plain loads, or process_vm_readv for a
// borrowed frame's code object, which another thread may free meanwhile).
template <class Reader>
bool copy_str(Reader& rd, uint64_t str, Buffer& b) {
  const Interpreter& in = g_interpreter;
  const Layout& L = *in.layout;
  b.size = b.needed = 0;
  b.truncated = false;
  if (!plausible(str)) return false;
  const uint8_t* s = rd.view(str, view_size({L.object_type, L.unicode_length, L.unicode_state}));
  if (!s || field<uint64_t>(s, L.object_type) != in.unicode_type) return false;
  int64_t length = field<int64_t>(s, L.unicode_length);
  uint32_t state = field<uint32_t>(s, L.unicode_state);
  unsigned kind = (state >> L.unicode_kind_shift) & 7;
  bool compact = (state >> L.unicode_compact_bit) & 1, ascii = (state >> L.unicode_ascii_bit) & 1;
  if (length < 0 || length > kMaxText || !compact || (kind != 1 && kind != 2 && kind != 4)) return false;
  const uint64_t chars = str + (ascii ? L.unicode_ascii_data : L.unicode_compact_data);
  if (ascii && kind == 1) {  // the common case: the bytes are the UTF-8
    const uint32_t capacity = b.data ? b.capacity : 0;
    b.needed = static_cast<uint32_t>(length);
    b.size = b.needed < capacity ? b.needed : capacity;
    b.truncated = b.size < b.needed;
    return b.size == 0 || rd.copy(chars, b.data, b.size);
  }
  uint32_t needed = 0;  // at most 4 * kMaxText
  alignas(4) uint8_t chunk[256];
  constexpr int64_t kPerChunk = 64;  // code points of up to 4 bytes
  for (int64_t base = 0; base < length; base += kPerChunk) {
    const int64_t count = length - base < kPerChunk ? length - base : kPerChunk;
    if (!rd.copy(chars + static_cast<uint64_t>(base) * kind, chunk, static_cast<size_t>(count) * kind)) return false;
    for (int64_t i = 0; i < count; ++i) {
      uint32_t c;
      if (kind == 1) {
        c = chunk[i];
      } else if (kind == 2) {
        uint16_t u;
        std::memcpy(&u, chunk + 2 * i, 2);
        c = u;
      } else {
        std::memcpy(&c, chunk + 4 * i, 4);
      }
      uint8_t u[4];
      const uint32_t n = encode_utf8(c, u);
      needed += n;
      if (b.truncated) continue;  // counting only: the text stops at the last whole character
      if (!b.data || b.capacity - b.size < n) {
        b.truncated = true;
        continue;
      }
      std::memcpy(b.data + b.size, u, n);
      b.size += n;
    }
  }
  b.needed = needed;
  return true;
}

template <class Reader>
bool copy_bytes(Reader& rd, uint64_t bytes, Buffer& b, uint32_t* length_out) {
  const Interpreter& in = g_interpreter;
  const Layout& L = *in.layout;
  b.size = b.needed = 0;
  b.truncated = false;
  if (!plausible(bytes)) return false;
  const uint8_t* o = rd.view(bytes, view_size({L.object_type, L.object_size}));
  if (!o || field<uint64_t>(o, L.object_type) != in.bytes_type) return false;
  int64_t length = field<int64_t>(o, L.object_size);
  if (length < 0 || length > (int64_t(1) << 28)) return false;
  if (length_out) *length_out = static_cast<uint32_t>(length);
  b.needed = static_cast<uint32_t>(length);
  const uint32_t capacity = b.data ? b.capacity : 0;
  uint32_t n = length > capacity ? capacity : static_cast<uint32_t>(length);
  if (n && !rd.copy(bytes + L.bytes_data, b.data, n)) return false;
  b.size = n;
  b.truncated = n < length;
  return true;
}

template <class Reader>
bool describe(Reader& rd, const PythonFrame& frame, CodeDescription& out) {
  const Interpreter& in = g_interpreter;
  const Layout& L = *in.layout;
  if (!plausible(frame.code)) return false;
  // The code object's fields, up to the largest offset read (code_size covers them all).
  const uint8_t* c = rd.view(frame.code, L.code_size);
  if (!c || field<uint64_t>(c, L.object_type) != in.code_type) return false;
  uint64_t filename = field<uint64_t>(c, L.code_filename), name = field<uint64_t>(c, L.code_name);
  uint64_t linetable = field<uint64_t>(c, L.code_linetable);
  int32_t first_line = field<int32_t>(c, L.code_firstlineno);
  if (fingerprint(filename, name, linetable, first_line) != frame.code_check) return false;
  out.first_line = first_line;
  out.line_table_format = L.line_table;
  uint64_t qualname = L.code_qualname != kAbsent ? field<uint64_t>(c, L.code_qualname) : name;
  if (L.frame_kind == FrameKind::kInterpreterFrame) {
    out.instructions = static_cast<uint32_t>(field<int64_t>(c, L.object_size));
  } else {
    Buffer none;
    uint32_t bytes = 0;
    if (!copy_bytes(rd, field<uint64_t>(c, L.code_bytecode), none, &bytes)) return false;
    out.instructions = bytes / 2;
  }
  return copy_str(rd, filename, out.filename) && copy_str(rd, qualname, out.qualname) &&
         copy_bytes(rd, linetable, out.line_table, nullptr);
}

}  // namespace

uint32_t capture(PythonFrame* out, uint32_t max, WalkEnd* end, uint32_t outer) noexcept {
  WalkEnd ignored;
  WalkEnd& e = end ? *end : ignored;
  e = WalkEnd::kNoPython;
  if (AW_UNLIKELY(!ready())) return 0;
  return capture_dispatch(std::make_index_sequence<std::size(python_layout::kLayouts)>(), out, max, e, false, outer);
}

uint32_t capture_checked(PythonFrame* out, uint32_t max, WalkEnd* end, uint32_t outer) noexcept {
  WalkEnd ignored;
  WalkEnd& e = end ? *end : ignored;
  e = WalkEnd::kNoPython;
  if (!ready()) return 0;
  return capture_dispatch(std::make_index_sequence<std::size(python_layout::kLayouts)>(), out, max, e, true, outer);
}

uint32_t capture_borrowed(PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end) noexcept {
  return capture_borrowed(out, max, lender, end, nullptr);
}

uint32_t capture_borrowed(PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end, BorrowMemo* memo) noexcept {
  WalkEnd ignored;
  WalkEnd& e = end ? *end : ignored;
  Lender ignored_lender;
  Lender& l = lender ? *lender : ignored_lender;
  l = Lender{};
  e = WalkEnd::kNoPython;
  if (!ready()) return 0;
  return borrow_dispatch(std::make_index_sequence<std::size(python_layout::kLayouts)>(), out, max, e, l, memo);
}

// The GIL's holder in the memo's GIL region of `bytes` (its data or scratch), 0 for none and for the
// thread that borrows (borrow_as skips its own state).
static uint64_t gil_holder(const BorrowMemo& m, const uint8_t* bytes) noexcept {
  const uint8_t* g = bytes + m.gil_offset;
  if (field<int>(g, m.gil_locked) <= 0) return 0;
  const uint64_t holder = field<uint64_t>(g, m.gil_last_holder);
  return holder == m.own_state ? 0 : holder;
}

uint32_t confirm_borrowed(BorrowMemo* memo, PythonFrame* out, uint32_t max, Lender* lender, WalkEnd* end,
                          bool reread) noexcept {
  // A walk that stopped at its limit tells nothing of the frames past it; else a walk with a
  // smaller limit would have read a prefix of the same regions and stored a prefix of its frames.
  if (!memo || !memo->valid || max == 0 || (max > memo->max && memo->end == WalkEnd::kDepthLimit) || !ready()) return 0;
  BorrowMemo& m = *memo;
  m.valid = false;  // until confirmed
  WalkEnd e;
  const BorrowInputs in = borrow_inputs_dispatch(std::make_index_sequence<std::size(python_layout::kLayouts)>(), e);
  if (e != WalkEnd::kNoThreadState || in.finalizing != 0 || in.own != m.own_state || in.main_interp != m.main_interp ||
      in.main_thread != m.main_thread)
    return 0;
  if (reread) {
    ErrnoKeeper keep_errno;
    iovec local{m.scratch, m.bytes};
    if (process_vm_readv(getpid(), &local, 1, m.remote, m.regions, 0) != static_cast<ssize_t>(m.bytes)) return 0;
    if (m.gil_region < m.regions) {
      // The walk read the GIL for its holder, and only asked of each other thread whether it is
      // that holder: a holder that is the calling thread (never a lender) or none gives the same
      // walk, so the region is compared for that, then taken as read.
      if (gil_holder(m, m.scratch) != gil_holder(m, m.data)) return 0;
      std::memcpy(m.scratch + m.gil_offset, m.data + m.gil_offset, m.remote[m.gil_region].iov_len);
    }
    if (std::memcmp(m.scratch, m.data, m.bytes) != 0) return 0;
  }
  m.valid = true;
  const uint32_t n = m.n < max ? m.n : max;
  std::memcpy(out, m.frames, n * sizeof *out);
  if (lender) *lender = m.lender;
  if (end) *end = n < m.n ? WalkEnd::kDepthLimit : m.end;
  return n;
}

bool describe_code(const PythonFrame& frame, CodeDescription& out) noexcept {
  if (g_state.load(std::memory_order_acquire) != static_cast<uint8_t>(Availability::kReady)) return false;
  // Plain loads of the strings and bytes a code object points at: only once a complete checked
  // walk has shown the layout to be this interpreter's (a walk that stopped at an invalid
  // pointer before that proves nothing).
  if (!g_layout_proven.load(std::memory_order_relaxed)) return false;
  DirectReader rd;
  return describe(rd, frame, out);
}

bool describe_code_checked(const PythonFrame& frame, CodeDescription& out) noexcept {
  if (g_state.load(std::memory_order_acquire) != static_cast<uint8_t>(Availability::kReady)) return false;
  CheckedReader rd;
  return describe(rd, frame, out);
}

bool in_interpreter(uint64_t address) noexcept {
  if (g_state.load(std::memory_order_acquire) != static_cast<uint8_t>(Availability::kReady) || address == 0)
    return false;
  struct Arg {
    uint64_t runtime, address;
    bool found;
  } arg{g_interpreter.runtime, address, false};
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* p) -> int {
        auto* a = static_cast<Arg*>(p);
        bool has_runtime = false, has_address = false;
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const auto& ph = i->dlpi_phdr[k];
          if (ph.p_type != PT_LOAD) continue;
          const uint64_t lo = i->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          has_runtime |= a->runtime >= lo && a->runtime < hi;
          has_address |= a->address >= lo && a->address < hi;
        }
        if (!has_runtime) return 0;
        a->found = has_address;
        return 1;  // the interpreter's object: the answer either way
      },
      &arg);
  return arg.found;
}

Status status() noexcept {
  uint8_t s = g_state.load(std::memory_order_acquire);
  Status st{};
  st.availability = s == kSearching ? Availability::kNotSearched : static_cast<Availability>(s);
  st.version_hex = st.availability == Availability::kReady ? g_interpreter.version_hex : 0;
  st.detail = g_detail.load(std::memory_order_relaxed);
  st.searches = g_searches.load(std::memory_order_relaxed);
  return st;
}

Availability find_interpreter() noexcept {
  ready();
  return status().availability;
}

void note_objects_loaded() noexcept {
  uint8_t expected = static_cast<uint8_t>(Availability::kNoPython);
  g_state.compare_exchange_strong(expected, static_cast<uint8_t>(Availability::kNotSearched),
                                  std::memory_order_acq_rel);
}

void reset_after_fork() noexcept {
  uint8_t expected = kSearching;
  g_state.compare_exchange_strong(expected, static_cast<uint8_t>(Availability::kNotSearched),
                                  std::memory_order_acq_rel);
}

}  // namespace asyncwatch::python_frames
