#include "stack_capture.h"

#include <boost/stacktrace/safe_dump_to.hpp>

#include <immintrin.h>
#include <link.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "config.h"
#include "cpu_features.h"
#include "module_map.h"
#include "python_frames.h"
#include "thread_exit.h"
#include "thread_starts.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::stacks {
namespace {

using namespace asyncwatch::trace;

constexpr uint32_t kCacheSize = 256;  // per-thread direct-mapped cache: hash -> id
struct CacheEntry {
  uint64_t hash;
  uint32_t id;
  uint32_t generation;
};
AW_TLS CacheEntry* tl_cache;

struct PyCodeKey {
  uint64_t code;
  uint32_t check;
  bool operator==(const PyCodeKey& o) const { return code == o.code && check == o.check; }
};
struct PyCodeKeyHash {
  size_t operator()(const PyCodeKey& k) const {
    return std::hash<uint64_t>()(k.code * 0x9e3779b97f4a7c15ull ^ k.check);
  }
};

struct Global {
  std::mutex mutex;
  uint32_t generation = 0;
  uint32_t next_id = 1;
  std::unordered_map<uint64_t, std::vector<std::pair<std::vector<uint64_t>, uint32_t>>> by_hash;
  // Python: native stack id -> its frames (a stack with Python frames repeats them); interned
  // code objects; stacks with Python frames keyed by [native id, (code id, instr)...].
  std::unordered_map<uint32_t, std::vector<uint64_t>> native_frames;
  std::unordered_map<PyCodeKey, uint32_t, PyCodeKeyHash> code_ids;
  uint32_t next_code_id = 1;
  std::unordered_map<uint64_t, std::vector<std::pair<std::vector<uint64_t>, uint32_t>>> py_by_hash;
};
Global& global() {
  static Global* g = new Global;  // leaked: used during exit
  return *g;
}

uint64_t hash_frames(const uint64_t* f, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint32_t i = 0; i < n; ++i) {
    h ^= f[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

// Python frames are recorded when the configuration allows it and stacks are recorded at all.
bool python_enabled() noexcept {
  const Config& c = config_fast();
  return c.python_frames && c.stacks != StackPolicy::None;
}

// Ids restart in every trace (a fork child writes its own): everything interned is the old trace's.
void reset_if_new_trace(uint32_t gen) {
  Global& g = global();
  if (g.generation == gen) return;
  g.by_hash.clear();
  g.native_frames.clear();
  g.code_ids.clear();
  g.py_by_hash.clear();
  g.next_id = 1;
  g.next_code_id = 1;
  g.generation = gen;
}

uint32_t intern_slow(const uint64_t* frames, uint32_t depth, uint64_t h, uint32_t gen) {
  bool new_module = false;
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(global().mutex);
    reset_if_new_trace(gen);
    auto& bucket = global().by_hash[h];
    for (auto& [fr, fid] : bucket) {
      if (fr.size() == depth && std::equal(fr.begin(), fr.end(), frames)) return fid;
    }
    id = global().next_id++;
    bucket.emplace_back(std::vector<uint64_t>(frames, frames + depth), id);
    if (python_enabled()) global().native_frames.emplace(id, std::vector<uint64_t>(frames, frames + depth));
    StackRecord r{};
    r.h.type = static_cast<uint16_t>(RecordType::Stack);
    r.stack_id = id;
    r.depth = static_cast<uint16_t>(depth);
    thread_buffer::write2(&r, sizeof r, frames, depth * 8);
  }
  // A frame outside every known object: a library was dlopen'ed since the map was written.
  for (uint32_t i = 0; i < depth && !new_module; ++i) new_module = !module_map::covered(frames[i]);
  if (new_module) module_map::write_new_modules();
  return id;
}

}  // namespace

void lock_for_fork() noexcept { global().mutex.lock(); }
void unlock_after_fork() noexcept { global().mutex.unlock(); }

uint32_t intern(const uint64_t* frames, uint32_t depth) noexcept {
  if (depth == 0) return 0;
  uint32_t gen = trace_writer::generation();
  uint64_t h = hash_frames(frames, depth);
  if (!tl_cache) {
    tl_cache = static_cast<CacheEntry*>(calloc(kCacheSize, sizeof(CacheEntry)));
    if (!tl_cache) return 0;
    thread_exit::watch_this_thread();
  }
  CacheEntry& e = tl_cache[h % kCacheSize];
  if (e.hash == h && e.generation == gen) return e.id;
  uint32_t id;
  try {
    id = intern_slow(frames, depth, h, gen);
  } catch (...) {
    return 0;
  }
  e = CacheEntry{h, id, gen};
  return id;
}

namespace {

// Where, on the stack, each kept frame's return address lives: the verification data of the
// call-site cache. 32 frames cover a runtime's own frames and the application's first callers;
// a stack that differs only deeper than that would be taken for the cached one.
constexpr uint32_t kVerifySlots = 32;
struct Unwound {
  uint64_t frames[kMaxStackDepth];
  uint32_t depth = 0;
  uint32_t nslots = 0;                 // frames[0..nslots) have their slot found
  uint32_t slot_offset[kVerifySlots];  // where frames[k]'s return address is: distance below the stack top
};

// Return addresses and CFAs of the current stack, through the unwinder Boost.Stacktrace also
// uses (its collector does not expose CFAs).
struct RawFrames {
  uint64_t ip[kMaxStackDepth + 16];
  uint64_t cfa[kMaxStackDepth + 16];
  uint32_t n = 0;
};
_Unwind_Reason_Code collect_cb(_Unwind_Context* ctx, void* arg) {
  auto* r = static_cast<RawFrames*>(arg);
  if (r->n >= kMaxStackDepth + 16) return _URC_END_OF_STACK;
  r->ip[r->n] = static_cast<uint64_t>(_Unwind_GetIP(ctx));
  r->cfa[r->n] = static_cast<uint64_t>(_Unwind_GetCFA(ctx));
  ++r->n;
  return _URC_NO_REASON;
}

// Frames of the CUDA library between our innermost frame and the application's call (a driver
// wrapper that captures before its real call, inside a runtime call: interpose/stack_policy.h) are looked
// through up to this many.
constexpr std::size_t kMaxFramesToCaller = 24;

void unwind(Unwound* u, uint64_t top, uint64_t caller_ra) noexcept {
  // Boost.Stacktrace's public, async-signal-safe collector: the return addresses from this
  // function outwards, a null one after the last (counted in `n` by some Boost versions, not by
  // others: the walks below stop at it either way). Its out-of-line step is one frame more to
  // unwind than the internal collector it calls: 39,073 -> 40,460 instructions per unwound stack
  // (callgrind, simulator, 64 B pageable copies under ASYNCWATCH_STACKS=all); the call-site cache
  // answers most captures without unwinding (a pageable copy: 3,830 -> 3,838 a call).
  const void* raw[kMaxStackDepth + 17];
  const std::size_t n = std::min<std::size_t>(boost::stacktrace::safe_dump_to(0, raw, sizeof raw), std::size(raw));
  std::size_t i = 0;
  // Drop our own frames (this function, the wrapper); the first frame left is the caller of
  // the intercepted function: the application, the runtime, or a framework.
  while (i < n && module_map::is_own_address(reinterpret_cast<uint64_t>(raw[i]))) ++i;
  // Taken inside a runtime call (by the driver wrapper the runtime called), the frames up to the
  // outermost wrapper's caller are the runtime's and ours: the stack starts at that caller, as
  // one taken by the runtime wrapper itself does (the same stack, whichever layer took it).
  if (caller_ra && i < n && reinterpret_cast<uint64_t>(raw[i]) != caller_ra) {
    for (std::size_t k = i + 1; k < n && k <= i + kMaxFramesToCaller; ++k)
      if (reinterpret_cast<uint64_t>(raw[k]) == caller_ra) {
        i = k;
        break;
      }
  }
  for (; i < n && u->depth < kMaxStackDepth; ++i) {
    if (!raw[i]) break;
    u->frames[u->depth++] = reinterpret_cast<uint64_t>(raw[i]);
  }
  if (top <= 1 || u->depth == 0) return;
  RawFrames rf;
  _Unwind_Backtrace(collect_cb, &rf);
  // Align the two walks on the first kept frame, then record the slots of the next frames.
  uint32_t j = 1;
  while (j < rf.n && rf.ip[j] != u->frames[0]) ++j;
  // libgcc's _Unwind_Backtrace calls back before it steps the context to the frame's own CFA:
  // in the callback for frame i, _Unwind_GetCFA answers the CFA of frame i-1, i.e. the stack
  // pointer just above the return address into frame i. So ip[i] is stored at cfa[i] - 8.
  for (uint32_t k = 0; k < u->depth && j + k < rf.n && u->nslots < kVerifySlots; ++k) {
    if (rf.ip[j + k] != u->frames[k]) break;
    uint64_t slot = rf.cfa[j + k] - 8;
    if (slot >= top || top - slot > UINT32_MAX) break;
    // Only trust the slot if it really holds the return address (it does under the ABI).
    if (*reinterpret_cast<const uint64_t*>(slot) != u->frames[k]) break;
    u->slot_offset[u->nslots++] = static_cast<uint32_t>(top - slot);
  }
}

uint32_t unwind_and_intern() noexcept {
  Unwound u;
  unwind(&u, 1, 0);
  return intern(u.frames, u.depth);
}

// Per-thread call-site cache: kSiteSets sets of kSiteWays entries. Ways matter: call sites
// behind one runtime entry point share a key, and a direct-mapped cache would evict one with the
// other on every alternation.
constexpr uint32_t kSiteSets = 16;
constexpr uint32_t kSiteWays = 4;
constexpr uint32_t kVerifyEvery = 256;
struct SiteEntry {
  uint64_t ra;
  uint64_t key;
  uint32_t stack_id;
  uint32_t generation;
  uint32_t hits;
  uint32_t nslots;
  uint32_t slot_offset[kVerifySlots];
  uint64_t slot_value[kVerifySlots];
};
AW_TLS SiteEntry* tl_sites;
// The cache in pages of its own, not calloc'd: 26 KB zeroed at each thread's first call site were
// six page faults on the main thread's start-up path, for sets mostly never used. Fresh anonymous
// pages are zero, and each is faulted in when a set on it is first used.
constexpr size_t kSitesBytes = kSiteSets * kSiteWays * sizeof(SiteEntry);
SiteEntry* map_sites() noexcept {
  void* p = mmap(nullptr, kSitesBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<SiteEntry*>(p);
}
AW_TLS uint32_t tl_victim;  // round-robin replacement within a set
AW_TLS uint64_t tl_stack_top;
std::atomic<uint64_t> g_main_stack_top{0};  // set_main_stack_top
AW_TLS uint32_t tl_hits;                    // flushed into g_hits every kHitFlush hits: no shared write per call
constexpr uint32_t kHitFlush = 1024;
std::atomic<uint64_t> g_hits{0}, g_unwinds{0}, g_mismatches{0};

uint64_t stack_top() noexcept {
  if (AW_LIKELY(tl_stack_top)) return tl_stack_top;
  uint64_t top = 1;  // unknown: depth becomes the frame address itself (still per-thread stable)
  // The main thread: glibc's pthread_getattr_np reads all of /proc/self/maps for it (0.1-0.3 ms
  // at the first call site, on the start-up path). The process's argv is below the top and above
  // every frame of the process, which is all the key and the slot offsets need.
  // (A fork child's only thread has pid == tid too, maybe on a thread's stack: checked by distance.)
  const uint64_t end = g_main_stack_top.load(std::memory_order_relaxed);
  if (end && getpid() == static_cast<pid_t>(syscall(SYS_gettid))) {
    const uint64_t here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
    rlimit rl{};
    uint64_t max = 1ull << 30;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur < max) max = rl.rlim_cur;
    if (here < end && end - here < max) return tl_stack_top = end;
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) top = reinterpret_cast<uint64_t>(addr) + size;
    pthread_attr_destroy(&attr);
  }
  tl_stack_top = top;
  return top;
}

// Executable ranges used to pick return-address-looking words off the stack for the cache key.
struct TextRange {
  uint64_t low, high;
};
std::atomic<uint64_t> g_exe_low{0}, g_exe_high{0};
AW_TLS TextRange tl_caller_text;

TextRange text_of(uint64_t addr, bool main_exe) noexcept {
  struct Arg {
    uint64_t addr;
    bool main_exe;
    TextRange r;
  } arg{addr, main_exe, {0, 0}};
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* a) -> int {
        auto* g = static_cast<Arg*>(a);
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const auto& ph = i->dlpi_phdr[k];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          uint64_t lo = i->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          if (g->main_exe || (g->addr >= lo && g->addr < hi)) {
            g->r = {lo, hi};
            return 1;
          }
        }
        return g->main_exe ? 1 : 0;  // the first object is the executable
      },
      &arg);
  return arg.r;
}

// The scan of site_key: hashes, in stack order, the first four words that lie in [elo, elo+elen)
// or [clo, clo+clen). Usually the whole 512 bytes are read (few such words), so the loop body is
// the cost: one unsigned compare per range, and the "four found" test only on a hit.
AW_NO_SANITIZE_ADDRESS uint64_t scan_scalar(const uint64_t* w, const uint64_t* end, uint64_t elo, uint64_t elen,
                                            uint64_t clo, uint64_t clen, uint64_t h, int found) noexcept {
  for (; w < end; ++w) {
    uint64_t v = *w;
    if (AW_UNLIKELY(((v - elo) < elen) | ((v - clo) < clen))) {
      h = (h ^ v) * 0x100000001b3ull;
      if (++found == 4) break;
    }
  }
  return h;
}

// The same, four words per step with AVX2 (the same hits in the same order, so the same key);
// chosen at run time.
__attribute__((target("avx2"))) AW_NO_SANITIZE_ADDRESS uint64_t scan_avx2(const uint64_t* w, const uint64_t* end,
                                                                          uint64_t elo, uint64_t elen, uint64_t clo,
                                                                          uint64_t clen, uint64_t h) noexcept {
  const __m256i sign = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
  const __m256i vel = _mm256_set1_epi64x(static_cast<long long>(elo));
  const __m256i vcl = _mm256_set1_epi64x(static_cast<long long>(clo));
  // unsigned a < b  <=>  signed (b ^ sign) > (a ^ sign)
  const __m256i ven = _mm256_xor_si256(_mm256_set1_epi64x(static_cast<long long>(elen)), sign);
  const __m256i vcn = _mm256_xor_si256(_mm256_set1_epi64x(static_cast<long long>(clen)), sign);
  int found = 0;
  for (; w + 4 <= end; w += 4) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    __m256i de = _mm256_xor_si256(_mm256_sub_epi64(v, vel), sign);
    __m256i dc = _mm256_xor_si256(_mm256_sub_epi64(v, vcl), sign);
    __m256i m = _mm256_or_si256(_mm256_cmpgt_epi64(ven, de), _mm256_cmpgt_epi64(vcn, dc));
    if (AW_UNLIKELY(!_mm256_testz_si256(m, m))) {
      for (int i = 0; i < 4; ++i) {
        uint64_t x = w[i];
        if (((x - elo) < elen) | ((x - clo) < clen)) {
          h = (h ^ x) * 0x100000001b3ull;
          if (++found == 4) return h;
        }
      }
    }
  }
  return scan_scalar(w, end, elo, elen, clo, clen, h, found);
}
// Not __builtin_cpu_supports: that links libgcc's CPU model detection, whose constructor runs a
// dozen cpuid leaves at every start (cpu_features.h says what one costs in a VM).
bool detect_avx2() noexcept { return cpu_features::get().avx2; }
const bool g_have_avx2 = detect_avx2();

// The key of a call site: the immediate caller, the stack depth, and the first four words within
// 512 bytes above the caller's frame that point into the executable's or the caller's code: the
// return addresses of the next frames up. Without them, a call made from inside a statically linked
// runtime (always the same return address) could not tell its own callers apart.
uint64_t site_key(uint64_t ra, uint64_t frame, uint64_t top) noexcept {
  if (AW_UNLIKELY(!g_exe_high.load(std::memory_order_relaxed))) {
    TextRange r = text_of(0, true);
    g_exe_low.store(r.low);
    g_exe_high.store(r.high ? r.high : 1);
  }
  if (AW_UNLIKELY(ra < tl_caller_text.low || ra >= tl_caller_text.high)) tl_caller_text = text_of(ra, false);
  uint64_t elo = g_exe_low.load(std::memory_order_relaxed), ehi = g_exe_high.load(std::memory_order_relaxed);
  uint64_t clo = tl_caller_text.low, chi = tl_caller_text.high;
  // One unsigned compare per range ((v - lo) < len), and the "four found" test only on a hit:
  // the scan usually runs its whole 512 bytes, so the loop body is what this costs.
  const uint64_t elen = ehi - elo, clen = chi - clo;
  uint64_t h = ra * 0x9e3779b97f4a7c15ull ^ (top - frame);
  const uint64_t* w = reinterpret_cast<const uint64_t*>(frame & ~7ull);
  const uint64_t* end = reinterpret_cast<const uint64_t*>(std::min<uint64_t>(top, (frame & ~7ull) + 512));
  // Four such words are the return addresses of (about) the next four frames up: enough to tell
  // call chains apart in practice.
  if (g_have_avx2) return scan_avx2(w, end, elo, elen, clo, clen, h);
  return scan_scalar(w, end, elo, elen, clo, clen, h, 0);
  return h;
}

}  // namespace

bool called_from_program(const void* ra) noexcept {
  if (AW_UNLIKELY(!g_exe_high.load(std::memory_order_relaxed))) {
    TextRange r = text_of(0, true);
    g_exe_low.store(r.low);
    g_exe_high.store(r.high ? r.high : 1);
  }
  const uint64_t a = reinterpret_cast<uint64_t>(ra);
  return a >= g_exe_low.load(std::memory_order_relaxed) && a < g_exe_high.load(std::memory_order_relaxed);
}

namespace {

// A hit needs the cached return addresses at the same places on the stack: the key alone can
// collide (a statically linked runtime calls the driver from one place for every application
// call site), a mismatch is another call chain.
AW_NO_SANITIZE_ADDRESS bool verified(const SiteEntry& e, uint64_t top, uint64_t frame) noexcept {
  if (e.nslots == 0) return false;
  for (uint32_t i = 0; i < e.nslots; ++i) {
    uint64_t slot = top - e.slot_offset[i];
    if (slot < frame || *reinterpret_cast<const uint64_t*>(slot) != e.slot_value[i]) return false;
  }
  return true;
}

}  // namespace

namespace {
uint32_t capture_native_call_site(const void* caller_ra, const void* caller_frame) noexcept {
  if (!caller_ra) {
    g_unwinds.fetch_add(1, std::memory_order_relaxed);
    return unwind_and_intern();
  }
  if (!tl_sites) {
    tl_sites = map_sites();
    thread_exit::watch_this_thread();
  }
  uint64_t top = stack_top();
  uint64_t ra = reinterpret_cast<uint64_t>(caller_ra);
  uint64_t frame = reinterpret_cast<uint64_t>(caller_frame);
  uint64_t key = top > 1 ? site_key(ra, frame, top) : frame;
  uint32_t gen = trace_writer::generation();
  SiteEntry* set = tl_sites ? &tl_sites[((ra ^ (key * 0x9e3779b97f4a7c15ull)) >> 7) % kSiteSets * kSiteWays] : nullptr;
  for (uint32_t w = 0; set && w < kSiteWays; ++w) {
    SiteEntry& e = set[w];
    if (e.ra != ra || e.key != key || e.generation != gen || !e.stack_id || !verified(e, top, frame)) continue;
    if (AW_LIKELY((++e.hits % kVerifyEvery) != 0)) {
      if (AW_UNLIKELY(++tl_hits == kHitFlush)) {
        g_hits.fetch_add(kHitFlush, std::memory_order_relaxed);
        tl_hits = 0;
      }
      return e.stack_id;
    }
    // The periodic full check: counts a verified hit that the full unwind contradicts.
    g_unwinds.fetch_add(1, std::memory_order_relaxed);
    Unwound u;
    unwind(&u, 1, ra);
    uint32_t id = intern(u.frames, u.depth);
    if (id != e.stack_id) g_mismatches.fetch_add(1, std::memory_order_relaxed);
    return id;
  }
  g_unwinds.fetch_add(1, std::memory_order_relaxed);
  Unwound u;
  unwind(&u, top, ra);
  uint32_t id = intern(u.frames, u.depth);
  if (set && id && u.nslots) {
    SiteEntry* victim = nullptr;
    for (uint32_t w = 0; w < kSiteWays && !victim; ++w) {
      if (!set[w].stack_id || set[w].generation != gen) victim = &set[w];
    }
    if (!victim) victim = &set[tl_victim++ % kSiteWays];
    victim->ra = ra;
    victim->key = key;
    victim->stack_id = id;
    victim->generation = gen;
    victim->hits = 0;
    victim->nslots = u.nslots;
    std::copy(u.slot_offset, u.slot_offset + u.nslots, victim->slot_offset);
    std::copy(u.frames, u.frames + u.nslots, victim->slot_value);
  }
  return id;
}
}  // namespace

namespace {

// ---- Python frames (docs/python-frames.md, "Recording it in the trace") ----------------------
// The per-thread cache of stacks with Python frames: hash of (native id, frames) -> stack id.
constexpr uint32_t kPyCacheSize = 256;
AW_TLS CacheEntry* tl_py_cache;
constexpr uint32_t kMaxFilename = 1024, kMaxQualname = 512, kMaxLineTable = 32 * 1024;

// Describes the code object of `f` into a PyCode record of its own (called with the interning lock
// held, on the thread that captured `f`, during the call: the frame keeps the code object alive).
// Returns its id, 0 when it could not be described or written.
// `borrowed`: the frame is another thread's (its code object may be freed meanwhile: checked reads).
uint32_t write_code_record(const python_frames::PythonFrame& f, uint32_t id, bool borrowed) noexcept {
  auto describe = borrowed ? python_frames::describe_code_checked : python_frames::describe_code;
  python_frames::CodeDescription d;  // empty buffers: sizes only
  if (!describe(f, d)) return 0;
  const uint32_t fn = std::min(d.filename.needed, kMaxFilename), qn = std::min(d.qualname.needed, kMaxQualname);
  const uint32_t lt = std::min(d.line_table.needed, kMaxLineTable);
  const uint32_t size = record_size_aligned(static_cast<uint32_t>(sizeof(PyCodeRecord)) + fn + qn + lt);
  char* p = thread_buffer::reserve(size);
  if (!p) return 0;
  char* tail = p + sizeof(PyCodeRecord);
  python_frames::CodeDescription c;
  c.filename = {tail, fn, 0, 0, false};
  c.qualname = {tail + fn, qn, 0, 0, false};
  c.line_table = {tail + fn + qn, lt, 0, 0, false};
  if (!describe(f, c)) {
    // Not wanted after all: the reservation becomes padding (zero after its header).
    memset(p + sizeof(RecordHeader), 0, size - sizeof(RecordHeader));
    thread_buffer::commit(p, RecordType::Padding, size);
    return 0;
  }
  PyCodeRecord r{};
  r.code_id = id;
  r.first_line = c.first_line;
  r.instructions = c.instructions;
  r.filename_len = static_cast<uint16_t>(c.filename.size);
  r.qualname_len = static_cast<uint16_t>(c.qualname.size);
  r.line_table_len = c.line_table.size;
  r.line_table_format = static_cast<uint8_t>(c.line_table_format);
  if (c.filename.truncated || c.qualname.truncated) r.flags |= kPyCodeNameTruncated;
  if (c.line_table.truncated) r.flags |= kPyCodeLineTableTruncated;
  // Shorter than reserved (a value shrank between the calls, which it cannot while the frame
  // lives, or a cut at a character boundary): the rest stays zero, the record keeps its size.
  const uint32_t used = record_size_aligned(static_cast<uint32_t>(sizeof(PyCodeRecord)) + r.filename_len +
                                            r.qualname_len + r.line_table_len);
  if (used != size) {
    // Move the tail together so the record is exactly its payload, and pad the rest.
    memmove(tail + r.filename_len, tail + fn, r.qualname_len);
    memmove(tail + r.filename_len + r.qualname_len, tail + fn + qn, r.line_table_len);
    memset(p + used, 0, size - used);
  }
  r.h.type = static_cast<uint16_t>(RecordType::PyCode);
  r.h.size = static_cast<uint16_t>(used);
  memcpy(p + sizeof(RecordHeader), reinterpret_cast<const char*>(&r) + sizeof(RecordHeader),
         sizeof r - sizeof(RecordHeader));
  if (used != size) {
    // The space after the record: a padding record of its own (readers skip it).
    RecordHeader ph{static_cast<uint16_t>(RecordType::Padding), static_cast<uint16_t>(size - used)};
    if (size - used >= sizeof(PaddingRecord)) memcpy(p + used, &ph, sizeof ph);
  }
  thread_buffer::commit(p, RecordType::PyCode, used);
  return id;
}

// `own`: with a lender, how many of the frames (the first) are the thread's own (StackRecord.python_own).
uint64_t hash_python(uint32_t native_id, const python_frames::PythonFrame* py, uint32_t n, uint8_t end, uint32_t lender,
                     uint32_t own) noexcept {
  uint64_t h = (0x84222325cbf29ce4ull ^ (uint64_t{n} << 40) ^ (uint64_t{end} << 56) ^ (uint64_t{lender} << 8) ^
                (uint64_t{own} << 32)) +
               native_id;
  for (uint32_t i = 0; i < n; ++i) {
    h = (h ^ py[i].code) * 0x100000001b3ull;
    h = (h ^ ((uint64_t{py[i].code_check} << 32) | static_cast<uint32_t>(py[i].instr))) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

uint32_t intern_python_slow(uint32_t native_id, const python_frames::PythonFrame* py, uint32_t n, uint8_t end,
                            uint32_t lender, uint32_t own, uint64_t h, uint32_t gen) {
  std::lock_guard<std::mutex> lock(global().mutex);
  Global& g = global();
  reset_if_new_trace(gen);
  std::vector<uint64_t> key;
  key.reserve(2 + n);
  key.push_back(native_id);
  key.push_back(end | (uint64_t{lender} << 8) | (uint64_t{own} << 32));
  PythonFrameRef refs[kMaxPythonDepth];
  for (uint32_t i = 0; i < n; ++i) {
    PyCodeKey k{py[i].code, py[i].code_check};
    auto it = g.code_ids.find(k);
    uint32_t code_id = 0;
    if (it != g.code_ids.end()) {
      code_id = it->second;
    } else {
      code_id = write_code_record(py[i], g.next_code_id, lender != 0 && i >= own);
      if (code_id) {
        ++g.next_code_id;
        g.code_ids.emplace(k, code_id);
      }
    }
    refs[i] = PythonFrameRef{code_id, py[i].instr};
    key.push_back((uint64_t{code_id} << 32) | static_cast<uint32_t>(py[i].instr));
  }
  auto& bucket = g.py_by_hash[h];
  for (auto& [k, id] : bucket)
    if (k == key) return id;
  const std::vector<uint64_t>* native = nullptr;
  if (native_id) {
    auto nit = g.native_frames.find(native_id);
    if (nit == g.native_frames.end()) return native_id;  // interned before Python was on: keep it native
    native = &nit->second;
  }
  const uint32_t depth = native ? static_cast<uint32_t>(native->size()) : 0;
  uint64_t buf[kMaxStackDepth + kMaxPythonDepth];
  if (depth) memcpy(buf, native->data(), depth * 8);
  memcpy(buf + depth, refs, n * sizeof(PythonFrameRef));
  uint32_t id = g.next_id++;
  StackRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::Stack);
  r.stack_id = id;
  r.depth = static_cast<uint16_t>(depth);
  r.python_depth = static_cast<uint8_t>(n);
  r.python_own = static_cast<uint8_t>(own);
  r.python_end = end;
  set_python_lender(r, lender);
  thread_buffer::write2(&r, sizeof r, buf, (depth + n) * 8);
  bucket.emplace_back(std::move(key), id);
  return id;
}

// Borrowed walks (a thread without Python: docs/python-frames.md, "Borrowed frames") cost ~2 us
// a read; each thread may make kBorrowBurst of them at once and one per kBorrowIntervalNs on
// average. Before it walks again, a thread confirms its last walk when the memory that walk read
// is unchanged (python_frames::confirm_borrowed: one read of everything instead of one a frame),
// under a budget of its own (kConfirmBurst, kConfirmIntervalNs: the same share of the thread's
// time as the walks' at the confirmation's cost). A call beyond the confirmations' budget, within
// kReuseNs of the last read (walk or confirmation) that found the lender waiting in a C call, takes
// that read's frames again unread: a thread that calls faster than one confirmation per
// kConfirmIntervalNs while a line waits for its work keeps the line (autograd's engine thread in
// nanoGPT's compiled backward on the H100: half of its calls were over budget). A stacked call
// beyond that gets no Python frames rather than older ones.
constexpr uint64_t kBorrowIntervalNs = 1000'000;
constexpr uint64_t kBorrowBurst = 64;
constexpr uint64_t kConfirmIntervalNs = 200'000;
constexpr uint64_t kConfirmBurst = 320;
constexpr uint64_t kReuseNs = kConfirmIntervalNs;  // a confirmation in budget at least this often
AW_TLS uint64_t tl_borrow_tat, tl_confirm_tat, tl_borrow_read_ns;
AW_TLS python_frames::BorrowMemo* tl_borrow_memo;  // mapped at the thread's first borrowed walk
std::atomic<uint64_t> g_borrowed{0}, g_borrow_confirmed{0}, g_borrow_reused{0}, g_borrow_limited{0};

// A generic cell rate: `tat` is when the budget is whole again; false when the call is over budget.
bool within_rate(uint64_t& tat, uint64_t now, uint64_t burst, uint64_t interval_ns) noexcept {
  const uint64_t t = tat > now ? tat : now;
  if (t - now > (burst - 1) * interval_ns) return false;
  tat = t + interval_ns;
  return true;
}

uint32_t borrow_frames(python_frames::PythonFrame* py, uint32_t max, python_frames::WalkEnd* walk_end,
                       uint32_t* lender) noexcept {
  const uint64_t now = now_ns();
  python_frames::Lender l;
  uint32_t n = 0;
  bool unread = false;  // taken again without a read: tl_borrow_read_ns stays
  python_frames::BorrowMemo* const memo = tl_borrow_memo;
  if (memo && memo->valid) {
    if (within_rate(tl_confirm_tat, now, kConfirmBurst, kConfirmIntervalNs)) {
      n = python_frames::confirm_borrowed(memo, py, max, &l, walk_end);
      if (n) g_borrow_confirmed.fetch_add(1, std::memory_order_relaxed);
    } else if (!memo->lender.running && now - tl_borrow_read_ns < kReuseNs) {
      n = python_frames::confirm_borrowed(memo, py, max, &l, walk_end, /*reread=*/false);
      if (n) g_borrow_reused.fetch_add(1, std::memory_order_relaxed);
      unread = n != 0;
    }
  }
  if (!n) {
    if (!within_rate(tl_borrow_tat, now, kBorrowBurst, kBorrowIntervalNs)) {
      g_borrow_limited.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    if (!tl_borrow_memo) {
      void* p =
          mmap(nullptr, sizeof(python_frames::BorrowMemo), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        tl_borrow_memo = new (p) python_frames::BorrowMemo;
        thread_exit::watch_this_thread();
      }
    }
    n = python_frames::capture_borrowed(py, max, &l, walk_end, tl_borrow_memo);
    if (n) g_borrowed.fetch_add(1, std::memory_order_relaxed);
  }
  if (n) {
    if (!unread) tl_borrow_read_ns = now;
    *lender = python_lender_encode(l.native_tid, l.running);
  }
  return n;
}

// Whether the calling thread was created by native code, not by Python (docs/python-frames.md,
// "Borrowed frames"): its start routine, as the interposed pthread_create saw it, lies outside the
// interpreter's object. Decided once per thread, and only for threads that run Python (the caller
// found own frames). The main thread (tid == pid) is Python's. A thread whose start routine is not
// in the table is taken as Python's: asked again at its next few calls (its creator stores the
// entry just after the thread started), then for good (the main thread, threads made otherwise).
enum : uint8_t { kOriginUnknown, kOriginPython, kOriginNative };
constexpr uint8_t kOriginLookups = 8;
AW_TLS uint8_t tl_thread_origin, tl_origin_lookups;

bool created_by_native_code() noexcept {
  if (AW_LIKELY(tl_thread_origin != kOriginUnknown)) return tl_thread_origin == kOriginNative;
  const uint64_t start = thread_starts::start_routine_of_self();
  if (!start) {
    if (++tl_origin_lookups >= kOriginLookups) tl_thread_origin = kOriginPython;
    return false;
  }
  const bool main_thread = static_cast<pid_t>(syscall(SYS_gettid)) == getpid();  // a stale entry of its pthread_t
  tl_thread_origin = !main_thread && !python_frames::in_interpreter(start) ? kOriginNative : kOriginPython;
  return tl_thread_origin == kOriginNative;
}

// A thread Python did not create keeps at most this many of its own frames (the innermost
// kOwnBeforeLender - kPythonOuterFrames and its kPythonOuterFrames outermost, where a user's
// autograd Function.backward is), so that the lender's innermost frames (its line) fit after them.
constexpr uint32_t kOwnBeforeLender = kMaxPythonDepth - 8;

// The native stack `native_id` with the calling thread's Python frames, if it runs Python, or
// those borrowed from another thread when it has no Python thread state. A thread Python did not
// create gets both: its own frames, then the lender's (the Python thread that waits for its work).
uint32_t with_python_frames(uint32_t native_id) noexcept {
  python_frames::PythonFrame py[kMaxPythonDepth];
  python_frames::WalkEnd walk_end;
  uint32_t lender = 0, own = 0;
  uint32_t n = python_frames::capture(py, kMaxPythonDepth, &walk_end, kPythonOuterFrames);
  if (AW_LIKELY(n == 0)) {
    // No thread state, or one without frames (a native thread that attached a state once: PyTorch's
    // autograd engine threads while loss.backward() waits): another thread's line is borrowed.
    if (AW_LIKELY(walk_end != python_frames::WalkEnd::kNoThreadState && walk_end != python_frames::WalkEnd::kComplete))
      return native_id;
    n = borrow_frames(py, kMaxPythonDepth, &walk_end, &lender);
    if (n == 0) return native_id;
  } else if (AW_UNLIKELY(created_by_native_code())) {
    // Its Python was entered from native code (autograd's engine running a compiled backward):
    // the user's line, unless its own frames hold one, is the waiting thread's.
    const uint32_t keep = n < kOwnBeforeLender ? n : kOwnBeforeLender;
    python_frames::PythonFrame lent[kMaxPythonDepth];
    python_frames::WalkEnd lent_end;
    const uint32_t b = borrow_frames(lent, kMaxPythonDepth - keep, &lent_end, &lender);
    if (b) {
      if (keep < n)  // the outermost own frames move up, those before them are left out
        std::memmove(py + keep - kPythonOuterFrames, py + n - kPythonOuterFrames, kPythonOuterFrames * sizeof *py);
      std::memcpy(py + keep, lent, b * sizeof *py);
      own = keep;
      n = keep + b;
      walk_end = lent_end;  // the record's python_end is the lender's walk's (trace_format.h)
    }
  }
  uint8_t end = static_cast<uint8_t>(walk_end == python_frames::WalkEnd::kComplete     ? PythonWalkEnd::Complete
                                     : walk_end == python_frames::WalkEnd::kDepthLimit ? PythonWalkEnd::DepthLimit
                                     : walk_end == python_frames::WalkEnd::kElided     ? PythonWalkEnd::Elided
                                                                                       : PythonWalkEnd::Invalid);
  uint32_t gen = trace_writer::generation();
  uint64_t h = hash_python(native_id, py, n, end, lender, own);
  if (!tl_py_cache) {
    tl_py_cache = static_cast<CacheEntry*>(calloc(kPyCacheSize, sizeof(CacheEntry)));
    if (!tl_py_cache) return native_id;
    thread_exit::watch_this_thread();
  }
  CacheEntry& e = tl_py_cache[h % kPyCacheSize];
  if (e.hash == h && e.generation == gen) return e.id;
  uint32_t id;
  try {
    id = intern_python_slow(native_id, py, n, end, lender, own, h, gen);
  } catch (...) {
    return native_id;
  }
  e = CacheEntry{h, id, gen};
  return id;
}

}  // namespace

uint32_t capture_call_site(const void* caller_ra, const void* caller_frame) noexcept {
  uint32_t id = capture_native_call_site(caller_ra, caller_frame);
  if (AW_LIKELY(!python_enabled())) return id;
  return with_python_frames(id);
}

void python_trace_opened() noexcept {
  if (!python_enabled()) return;
  python_frames::find_interpreter();
  python_frames::Status st = python_frames::status();
  if (st.availability != python_frames::Availability::kReady &&
      st.availability != python_frames::Availability::kUnsupported)
    return;  // no Python: nothing in the trace
  PythonInfoRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::PythonInfo);
  r.h.size = static_cast<uint16_t>(record_size_aligned(sizeof r));
  r.version_hex = st.version_hex;
  r.availability = st.availability == python_frames::Availability::kReady ? 1 : 2;
  if (st.detail) strncpy(r.detail, st.detail, sizeof r.detail - 1);
  thread_buffer::write(&r);
}

void python_after_fork_child() noexcept { python_frames::reset_after_fork(); }

void release_thread() noexcept {
  free(tl_py_cache);
  tl_py_cache = nullptr;
  if (tl_borrow_memo) munmap(tl_borrow_memo, sizeof(python_frames::BorrowMemo));
  tl_borrow_memo = nullptr;
  if (tl_sites) munmap(tl_sites, kSitesBytes);
  tl_sites = nullptr;
  free(tl_cache);
  tl_cache = nullptr;
  if (tl_hits) {
    g_hits.fetch_add(tl_hits, std::memory_order_relaxed);
    tl_hits = 0;
  }
}

void set_main_stack_top(const void* argv) noexcept {
  g_main_stack_top.store(reinterpret_cast<uint64_t>(argv), std::memory_order_relaxed);
}

// Other threads' hits since their last flush are not counted (fewer than kHitFlush each); the
// calling thread's are.
CacheStats cache_stats() noexcept {
  return {g_hits.load() + tl_hits,   g_unwinds.load(),       g_mismatches.load(),    g_borrowed.load(),
          g_borrow_confirmed.load(), g_borrow_reused.load(), g_borrow_limited.load()};
}

}  // namespace asyncwatch::stacks
