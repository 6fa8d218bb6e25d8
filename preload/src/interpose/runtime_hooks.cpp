// Thin wrappers of the shared CUDA runtime (libcudart.so), only for naming: each marks the
// thread as "inside cudaXxx", calls the real function, and then writes the one record of the
// call: the driver wrapper's record (adopted, renamed to the runtime API, timed over the whole
// runtime call), or, when the runtime reached no hooked driver entry point (a copy during stream
// capture), a record of its own with kFlagRuntimeOnly. The static runtime is compiled into the
// executable and never reaches these; its calls are seen at the driver layer only.
//
// Instances (docs/interception.md, "Runtime instances"): a process may hold several libcudart
// objects (two copies from different paths, loaded RTLD_LOCAL; one unloaded and loaded again
// elsewhere). The exported wrappers are instance 0: they call the runtime that follows us in the
// global scope (else the first libcudart loaded). A runtime function handed out by dlsym from any
// other object gets the wrapper of an instance bound to that object (kRtInstances - 1 of them, each
// its own copy of every wrapper, made by a template), so each copy's calls reach its own functions;
// beyond them, dlsym hands the real function out unwrapped. An instance whose object was unloaded
// (seen by our dlclose) is unbound: its slot serves the next object.
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

#include "call_context.h"
#include "classify/host_memory_classifier.h"
#include "cuda_abi.h"
#include "loaded_object.h"
#include "real_functions.h"
#include "runtime_hook_table.h"
#include "runtime_hooks.h"
#include "traced_call.h"
#include "query_fold.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::calls::Category;
using asyncwatch::trace::Api;
using asyncwatch::trace::Direction;
using asyncwatch::trace::MemoryKind;

namespace {

// ---- fallback records (the runtime call reached no hooked driver entry point) -------------
MemoryKind kind_of(const void* p) { return classify::classify_pointer(reinterpret_cast<uint64_t>(p)); }

bool fill_copy(calls::AnyRecord& rec, const void* dst, const void* src, uint64_t bytes, int kind, cudaStream_t st,
               bool per_thread) {
  auto& c = rec.Copy;
  MemoryKind s = MemoryKind::Unknown, d = MemoryKind::Unknown;
  Direction dir = Direction::Unknown;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      s = kind_of(src);
      d = MemoryKind::Device;
      dir = Direction::HtoD;
      break;
    case cudaMemcpyDeviceToHost:
      s = MemoryKind::Device;
      d = kind_of(dst);
      dir = Direction::DtoH;
      break;
    case cudaMemcpyDeviceToDevice:
      s = d = MemoryKind::Device;
      dir = Direction::DtoD;
      break;
    case cudaMemcpyHostToHost:
      s = kind_of(src);
      d = kind_of(dst);
      dir = Direction::HtoH;
      break;
    default:  // cudaMemcpyDefault: both sides classified
      s = src ? kind_of(src) : MemoryKind::Unknown;
      d = dst ? kind_of(dst) : MemoryKind::Unknown;
      dir = trace::infer_direction(s, d);
  }
  c.direction = static_cast<uint8_t>(dir);
  c.src_memory = static_cast<uint8_t>(s);
  c.dst_memory = static_cast<uint8_t>(d);
  c.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, per_thread));
  c.stream = reinterpret_cast<uint64_t>(st);
  c.bytes = bytes;
  if (calls::stream_is_capturing(st)) c.flags |= trace::kFlagCaptureActive;
  return true;
}

bool fill_memset(calls::AnyRecord& rec, const void* dst, uint64_t bytes, cudaStream_t st, bool per_thread) {
  auto& c = rec.Copy;
  c.dst_memory = static_cast<uint8_t>(kind_of(dst));
  c.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, per_thread));
  c.stream = reinterpret_cast<uint64_t>(st);
  c.bytes = bytes;
  if (calls::stream_is_capturing(st)) c.flags |= trace::kFlagCaptureActive;
  return true;
}

bool fill_launch(calls::AnyRecord& rec, dim3 g, dim3 b, size_t shared, cudaStream_t st, bool per_thread) {
  auto& l = rec.Launch;
  l.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, per_thread));
  l.grid[0] = g.x, l.grid[1] = g.y, l.grid[2] = g.z;
  l.block[0] = b.x, l.block[1] = b.y, l.block[2] = b.z;
  l.shared_mem_bytes = static_cast<uint32_t>(shared);
  l.stream = reinterpret_cast<uint64_t>(st);
  if (calls::stream_is_capturing(st)) l.flags |= trace::kFlagCaptureActive;
  return true;
}

bool fill_memory(calls::AnyRecord& rec, MemoryKind k, const void* addr, uint64_t bytes, unsigned flags) {
  auto& m = rec.MemoryOp;
  m.memory = static_cast<uint8_t>(k);
  m.address = reinterpret_cast<uint64_t>(addr);
  m.bytes = bytes;
  m.alloc_flags = flags;
  return true;
}

// Sets the fields every fallback record shares and writes it.
void write_fallback(calls::AnyRecord& rec, Api api, Category cat, cudaError_t r, uint64_t start, uint64_t end,
                    bool driver_reached) {
  trace::CallHead& h = rec.head;
  h.api = static_cast<uint16_t>(api);
  h.result = r, h.start_ns = start, h.end_ns = end;
  h.flags |= driver_reached ? 0u : trace::kFlagRuntimeOnly;
  calls::apply_stack_policy(rec, cat);
  calls::write(rec);
}

// Completes the adopted driver record: the API the application called, the whole call's time
// and the runtime's return value.
void write_adopted(calls::AnyRecord& rec, Api api, Category cat, cudaError_t r, uint64_t start, uint64_t end) {
  trace::CallHead& h = rec.head;
  h.api = static_cast<uint16_t>(api);
  h.result = r;
  h.start_ns = start;
  h.end_ns = end;
  calls::apply_stack_policy(rec, cat);
  calls::write(rec);
}

// The runtime call's record: when the trace is active, reserved in place and published in flight
// before the call (one record per call: the first driver call of its kind inside fills its body, see
// traced_call.h); otherwise built in `st.pending` and written after the call. When no driver entry
// point of its kind was reached, `fallback` fills the body from the runtime's own arguments
// (kFlagRuntimeOnly when no hooked driver entry point ran at all); without a fallback the call has
// no record (an in-place reservation becomes Padding).
// The thread's state for a recorded runtime call, before its record is begun: the outer wrapper
// of the driver calls the runtime makes under it.
inline __attribute__((always_inline)) void enter_recorded(calls::ThreadCallState& st, calls::Caller c, uint8_t inst,
                                                          Category cat) noexcept {
  st.phase = calls::kPhaseLibrary;
  calls::signal_fence();
  st.caller = c;
  st.outer = calls::kOuterRuntime;
  st.rt_instance = inst;
  st.runtime_category = cat;
  st.driver_reached = false;
  st.pending_valid = false;
}

// The record reserved in place and published in flight before the call, as the driver wrappers'
// target. A call whose category always gets a stack takes it before the call (and before its start
// time): the call site of a call in flight when the process dies (stack_policy.h).
inline __attribute__((always_inline)) calls::AnyRecord* begin_recorded_in_place(calls::ThreadCallState& st,
                                                                                calls::Caller c, Api api, Category cat,
                                                                                uint64_t* start,
                                                                                uint32_t* gen) noexcept {
  calls::AnyRecord* rec =
      calls::begin_in_place(cat, api, c.ra, calls::stack_before(cat) ? calls::stack_now() : 0, start, gen);
  st.target = rec;
  st.target_generation = *gen;
  return rec;
}

// After the call: completes the in-place record (the body a driver wrapper filled, else the
// fallback's, else it becomes Padding).
template <bool kHasFallback, class Fallback>
inline __attribute__((always_inline)) void complete_in_place(calls::ThreadCallState& st, calls::AnyRecord* rec,
                                                             uint32_t gen, Api api, Category cat, cudaError_t r,
                                                             uint64_t end, Fallback& fallback) noexcept {
  if (!rec || !calls::in_place_valid(gen)) return;
  if (!st.pending_valid) {
    if constexpr (kHasFallback) {
      fallback(*rec);
      if (!st.driver_reached) rec->head.flags |= trace::kFlagRuntimeOnly;
    } else {
      calls::cancel_in_place(rec);
      return;
    }
  }
  // A driver wrapper's fill names its own API in the records of these categories only
  // (cuCtxSynchronize_v2's, the capture-to-graph begin's).
  if (cat == Category::Sync || cat == Category::Capture) rec->head.api = static_cast<uint16_t>(api);
  calls::finish_in_place(rec, cat, r, end);
}

template <class Call, class Fallback>
cudaError_t run(uint8_t inst, calls::Caller c, Api api, Category cat, Call&& call, Fallback&& fallback) {
  constexpr bool kHasFallback = !std::is_same_v<std::decay_t<Fallback>, std::nullptr_t>;
  enum Way { kRecord, kPassive, kPass, kLost };
  if (AW_UNLIKELY(trace_writer::disabled_now())) return call();  // ASYNCWATCH_DISABLE=1: nothing else
  calls::ThreadCallState& st = calls::thread_state();
  const uint32_t ph = st.phase;
  Way way;
  bool in_place = false;
  calls::SavedCallState* reentrant = nullptr;  // set when this call interrupted a real function
  alignas(calls::SavedCallState) unsigned char saved_storage[sizeof(calls::SavedCallState)];
  auto outer_way = [&]() noexcept {
    in_place = trace_writer::recording_now();
    return in_place || calls::recording() ? kRecord : kPassive;
  };
  if (AW_LIKELY(ph == calls::kPhaseApplication)) {
    way = outer_way();
  } else {
    switch (calls::classify_nested(st, c)) {
      case calls::Nested::PassThrough: way = kPass; break;
      case calls::Nested::Lost: way = kLost; break;
      case calls::Nested::Application: way = outer_way(); break;
      default:  // a call of its own, in a clean state (restored below)
        reentrant = new (saved_storage) calls::SavedCallState;
        st.reentrant = true;
        way = outer_way();
        break;
    }
  }
  const trace::RecordType type = cat;
  uint64_t start = 0;
  uint32_t lost_phase = 0, gen = 0;
  calls::AnyRecord* rec = nullptr;
  if (way == kRecord) {
    enter_recorded(st, c, inst, cat);
    if (in_place) {
      rec = begin_recorded_in_place(st, c, api, cat, &start, &gen);
    } else {
      st.pending = calls::AnyRecord{};
      st.pending.h = trace::RecordHeader{static_cast<uint16_t>(type),
                                         static_cast<uint16_t>(trace::record_info(static_cast<uint16_t>(type)).fixed)};
      st.target = &st.pending;
      st.target_generation = 0;  // (thread_state.h)
      start = now_ns();
    }
    calls::set_phase(st, calls::kPhaseInReal);
  } else if (way == kPassive) {
    // Not recorded (paused, stopped): the driver wrappers under it pass through without counting
    // the call a second time.
    st.phase = calls::kPhaseLibrary;
    calls::signal_fence();
    st.outer = calls::kOuterRuntimePassive;
    st.rt_instance = inst;
    calls::set_phase(st, calls::kPhaseInReal);
  } else if (way == kLost) {
    lost_phase = calls::begin_lost(st);
  }
  cudaError_t r = call();
  if (AW_UNLIKELY(way != kRecord)) {
    if (way == kLost) st.phase = lost_phase;
    if (way == kPassive) {
      calls::signal_fence();
      st.phase = calls::kPhaseApplication;
    }
    if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
    return r;
  }
  st.phase = calls::kPhaseLibrary;
  calls::signal_fence();
  uint64_t end = now_ns();
  [&]() noexcept {
    calls::ThreadErrnoKeeper keep(st);
    if (in_place) {
      complete_in_place<kHasFallback>(st, rec, gen, api, cat, r, end, fallback);
    } else if (st.pending_valid) {
      st.pending_valid = false;
      write_adopted(st.pending, api, cat, r, start, end);
    } else if constexpr (kHasFallback) {
      calls::AnyRecord tmp{};
      tmp.h = st.pending.h;
      fallback(tmp);
      write_fallback(tmp, api, cat, r, start, end, st.driver_reached);
    }
  }();
  calls::set_phase(st, calls::kPhaseApplication);
  if (AW_UNLIKELY(reentrant)) reentrant->~SavedCallState();
  return r;
}

// Called by the application with the trace recording in place (the exported wrapper tested it:
// AppCaller): the record reserved in place and published in flight before the call, the same steps
// as `run` above for that case, in a body that holds nothing else. What it buys: the shared
// runtime's launch 424 -> 403 and 64 B pinned copy 381 -> 360 instructions (callgrind on the
// simulator when it was added), on the path whose copy is at +2.5 to +3.4 % of its <= +5 % target.
template <class Call, class Fallback>
cudaError_t run(uint8_t inst, calls::AppCaller c, Api api, Category cat, Call&& call, Fallback&& fallback) {
  constexpr bool kHasFallback = !std::is_same_v<std::decay_t<Fallback>, std::nullptr_t>;
  calls::ThreadCallState& st = calls::thread_state();
  uint64_t start;  // set by begin_recorded_in_place; the record keeps it
  uint32_t gen = 0;
  enter_recorded(st, c, inst, cat);
  calls::AnyRecord* rec = begin_recorded_in_place(st, c, api, cat, &start, &gen);
  calls::set_phase(st, calls::kPhaseInReal);
  cudaError_t r = call();
  st.phase = calls::kPhaseLibrary;
  calls::signal_fence();
  uint64_t end = now_ns();
  [&]() noexcept {
    calls::ThreadErrnoKeeper keep(st);
    complete_in_place<kHasFallback>(st, rec, gen, api, cat, r, end, fallback);
  }();
  calls::set_phase(st, calls::kPhaseApplication);
  return r;
}

// Queries (cudaStreamQuery, cudaEventQuery): folded while their result repeats (query_fold.h), else
// the ordinary path, without a fallback record. `driver_fn` names the entry point such a query reaches.
struct Query {
  uint64_t handle;
  trace::StreamKind kind;
  bool per_thread;
  Api driver_fn;
};
// The rows' query fallbacks (runtime_hooks.txt).
inline Query stream_query(cudaStream_t st, bool per_thread) {
  return Query{reinterpret_cast<uint64_t>(st), calls::stream_kind(st, per_thread), per_thread, Api::cuStreamQuery};
}
inline Query event_query(cudaEvent_t e) {
  return Query{reinterpret_cast<uint64_t>(e), trace::StreamKind::Unknown, false, Api::cuEventQuery};
}
template <class Call>
cudaError_t run(uint8_t inst, calls::Caller c, Api api, Category cat, Call&& call, Query q) {
  if (query_fold::eligible()) return query_fold::run(inst, c, api, q.driver_fn, q.handle, q.kind, q.per_thread, call);
  return run(inst, c, api, cat, call, nullptr);
}
template <class Call>
cudaError_t run(uint8_t inst, calls::AppCaller c, Api api, Category cat, Call&& call, Query q) {
  if (query_fold::eligible()) return query_fold::run(inst, c, api, q.driver_fn, q.handle, q.kind, q.per_thread, call);
  return run(inst, c, api, cat, call, nullptr);
}

}  // namespace

namespace {
enum class RtSlot : uint16_t {
#define AW_RT_ENUM(sym, api, cat, pt, params, args, fb) sym,
  AW_RUNTIME_HOOKS(AW_RT_ENUM)
#undef AW_RT_ENUM
      Count
};
constexpr size_t kRtCount = static_cast<size_t>(RtSlot::Count);
constexpr const char* kRtNames[] = {
#define AW_RT_NAME(sym, api, cat, pt, params, args, fb) #sym,
    AW_RUNTIME_HOOKS(AW_RT_NAME)
#undef AW_RT_NAME
};

using runtime_hooks::kRtInstances;
enum InstanceState : int { kFree = 0, kBinding = 1, kBound = 2 };
}  // namespace

// Not in the anonymous namespace: the exported wrappers' stubs (entry_stubs.cpp) load instance 0's
// functions, `real` at offset 0, by this assembler name.
namespace asyncwatch::runtime_hooks {
struct RtInstance {
  std::atomic<void*> real[kRtCount];
  std::atomic<uintptr_t> base, ld;  // identity: load bias and dynamic section of the object
  std::atomic<int> state;
};
extern RtInstance g_inst[kRtInstances] __asm__("aw_runtime_instances");
RtInstance g_inst[kRtInstances];
static_assert(offsetof(RtInstance, real) == 0 && sizeof(std::atomic<void*>) == 8, "entry_stubs.cpp's addressing");
}  // namespace asyncwatch::runtime_hooks

namespace {
using runtime_hooks::g_inst;
using runtime_hooks::RtInstance;
// The instance's object's address range (the runtime -> driver nesting test): g_rt_text[i] is g_inst[i]'s.
runtime_hooks::TextRange& text_of(const RtInstance& in) noexcept { return runtime_hooks::g_rt_text[&in - g_inst]; }

// The loaded object containing `p`: its load bias, dynamic section and address range.
struct Object {
  uintptr_t base, ld, lo, hi;
};
bool object_of(const void* p, Object* out) noexcept {
  LoadedObject o;
  if (!find_loaded_object(p, &o)) return false;
  *out = Object{o.map->l_addr, reinterpret_cast<uintptr_t>(o.map->l_ld), o.low, o.high};
  return true;
}

bool same_object(const RtInstance& in, const Object& o) noexcept {
  return in.state.load(std::memory_order_acquire) == kBound && in.base.load() == o.base && in.ld.load() == o.ld;
}

void bind(RtInstance& in, const Object& o) noexcept {
  in.base.store(o.base);
  in.ld.store(o.ld);
  text_of(in).len.store(0);  // never a range with the new start and the old length
  text_of(in).lo.store(o.lo);
  text_of(in).len.store(o.hi - o.lo);
  in.state.store(kBound, std::memory_order_release);
}

void unbind(RtInstance& in) noexcept {
  in.state.store(kBinding);
  for (auto& r : in.real) r.store(nullptr);
  text_of(in).len.store(0);
  text_of(in).lo.store(0);
  in.base.store(0);
  in.ld.store(0);
  in.state.store(kFree, std::memory_order_release);
}

// Instance 0's function for `s`: the object it lies in binds instance 0.
void* resolve_slot(RtSlot s, bool may_wait) noexcept {
  void* p = real::runtime(kRtNames[static_cast<size_t>(s)]);
  if (!p) return nullptr;
  RtInstance& in = g_inst[0];
  Object o;
  int expected = kFree;
  if (in.state.load(std::memory_order_acquire) != kBound && object_of(p, &o) &&
      in.state.compare_exchange_strong(expected, kBinding))
    bind(in, o);
  // Bound by another thread right now: its range must be known before this call goes through
  // (not when this thread itself was interrupted while binding: a handler's call goes on).
  while (may_wait && in.state.load(std::memory_order_acquire) == kBinding) {}
  in.real[static_cast<size_t>(s)].store(p, std::memory_order_release);
  return p;
}

std::atomic<bool> g_exports_resolved{false};

// The first time one is missing: every slot at once, as the library's own code (the loader's lock
// is taken; a signal meanwhile is held back), so that a later first call of another runtime
// function, perhaps from a signal handler, needs no lookup.
__attribute__((noinline)) void* resolve_export(RtSlot s) noexcept {
  bool may_wait = !calls::in_library(calls::thread_state().phase);
  calls::LibraryScope scope;
  if (!g_exports_resolved.exchange(true)) {
    for (size_t i = 0; i < kRtCount; ++i)
      if (!g_inst[0].real[i].load(std::memory_order_acquire)) resolve_slot(static_cast<RtSlot>(i), may_wait);
  }
  void* p = g_inst[0].real[static_cast<size_t>(s)].load(std::memory_order_acquire);
  return p ? p : resolve_slot(s, may_wait);
}

template <int I>
inline void* rt_real(RtSlot s) noexcept {
  void* p = g_inst[I].real[static_cast<size_t>(s)].load(std::memory_order_acquire);
  if (I == 0 && AW_UNLIKELY(!p)) return resolve_export(s);
  return p;  // instances >= 1: set when dlsym handed the wrapper out
}

}  // namespace

// Each wrapper's body (hook_entry.h), out of line, one per instance, with `aw_caller`, `real_fn` and
// `aw_per_thread` (the row's per_thread) in scope; instance 0's bodies are aw_traced_<sym> and
// aw_app_<sym>, reached from the exported stub (AW_STUB_CALLER_AS), the other instances' from their
// C++ entries (AW_ENTRY_CALLER_AS).
#define AW_RT_TRACED_BODY(caller_as, inst, wrapper, sym, api, cat, pt, args, fb) \
  AW_RT_BODY_AS(caller_as, ::asyncwatch::calls::Caller, inst, wrapper, sym, api, cat, pt, args, fb)
#define AW_RT_BODY_AS(caller_as, caller_type, inst, wrapper, sym, api, cat, pt, args, fb) \
  caller_as(caller_type, wrapper);                                                        \
  const auto real_fn = reinterpret_cast<decltype(&::sym)>(rt_real<inst>(RtSlot::sym));    \
  if (!real_fn) return cudaErrorInitializationError;                                      \
  [[maybe_unused]] constexpr bool aw_per_thread = pt != 0;                                \
  return run(                                                                             \
      inst, aw_caller, Api::api, Category::cat, [&] { return real_fn args; }, fb);
// An instance's entry (hook_entry.h): with ASYNCWATCH_DISABLE=1 a load, a bit test and a tail call of the
// real function; otherwise the body, called with the same arguments.
#define AW_RT_ENTRY(inst, sym, args, body)                                                  \
  const auto real = reinterpret_cast<decltype(&::sym)>(                                     \
      g_inst[inst].real[static_cast<size_t>(RtSlot::sym)].load(std::memory_order_acquire)); \
  if (AW_UNLIKELY(trace_writer::disabled_now()) && AW_LIKELY(real)) return real args;       \
  AW_NOTE_ENTRY();                                                                          \
  return body args;
// Instance 0's entry where the exported symbol is not a stub (AW_ENTRY_NAME): the same, and the
// short body (`aw_app_<sym>`, an AppCaller) when the application called it (kPhaseApplication) with the trace
// recording in place, the common case. The x86-64 stubs make these tests in assembly.
#if AW_ENTRY_STUBS
#define AW_RT_EXPORTED_ENTRY(sym, params, args)
#else
#define AW_RT_EXPORTED_ENTRY(sym, params, args)                                                                       \
  extern "C" AW_ENTRY_VISIBILITY AW_ENTRY_ATTRS cudaError_t AW_ENTRY_NAME(sym) params {                               \
    AW_ENTRY_PASS_IF_DISABLED(decltype(&::sym),                                                                       \
                              g_inst[0].real[static_cast<size_t>(RtSlot::sym)].load(std::memory_order_acquire), args) \
    AW_NOTE_ENTRY();                                                                                                  \
    if (AW_LIKELY(calls::tl_locals.call.phase == calls::kPhaseApplication && trace_writer::recording_now()))          \
      return aw_app_##sym args;                                                                                       \
    return aw_traced_##sym args;                                                                                      \
  }
#endif

// The exported wrapper (instance 0: its bodies, and its entry where there is no stub) and, for the
// other instances, templates of the same entry and body.
#define AW_RT_DEFINE(sym, api, cat, pt, params, args, fb)                                                              \
  extern "C" AW_EXPORT cudaError_t sym params;                                                                         \
  extern "C" AW_EXPORTED_VISIBILITY cudaError_t AW_EXPORTED_NAME(sym) params;                                          \
  extern "C" __attribute__((visibility("hidden"), noinline)) cudaError_t aw_traced_##sym params {                      \
    AW_RT_TRACED_BODY(AW_STUB_CALLER_AS, 0, &::AW_EXPORTED_NAME(sym), sym, api, cat, pt, args, fb)                     \
  }                                                                                                                    \
  extern "C" __attribute__((visibility("hidden"), noinline)) cudaError_t aw_app_##sym params{                          \
      AW_RT_BODY_AS(AW_STUB_CALLER_AS, ::asyncwatch::calls::AppCaller, 0, &::AW_EXPORTED_NAME(sym), sym, api, cat, pt, \
                    args, fb)} AW_RT_EXPORTED_ENTRY(sym, params, args) namespace {                                     \
    template <int I>                                                                                                   \
    cudaError_t sym##_instance params;                                                                                 \
    template <int I>                                                                                                   \
    __attribute__((noinline)) cudaError_t sym##_traced params {                                                        \
      AW_RT_TRACED_BODY(AW_ENTRY_CALLER_AS, I, &sym##_instance<I>, sym, api, cat, pt, args, fb)                        \
    }                                                                                                                  \
    template <int I>                                                                                                   \
    AW_ENTRY_ATTRS cudaError_t sym##_instance params {                                                                 \
      AW_RT_ENTRY(I, sym, args, sym##_traced<I>)                                                                       \
    }                                                                                                                  \
  }
AW_RUNTIME_HOOKS(AW_RT_DEFINE)
#undef AW_RT_DEFINE

namespace asyncwatch::runtime_hooks {

namespace {
#define AW_RT_ADDR(sym, api, cat, pt, params, args, fb) reinterpret_cast<void*>(&::AW_EXPORTED_NAME(sym)),
void* const kExported[] = {AW_RUNTIME_HOOKS(AW_RT_ADDR)};
#undef AW_RT_ADDR
#define AW_RT_ADDR_AT(I) \
  { AW_RUNTIME_HOOKS(AW_RT_ADDR_ONE_##I) }
#define AW_RT_ADDR_ONE_1(sym, api, cat, pt, params, args, fb) reinterpret_cast<void*>(&sym##_instance<1>),
#define AW_RT_ADDR_ONE_2(sym, api, cat, pt, params, args, fb) reinterpret_cast<void*>(&sym##_instance<2>),
#define AW_RT_ADDR_ONE_3(sym, api, cat, pt, params, args, fb) reinterpret_cast<void*>(&sym##_instance<3>),
void* const kInstanceWrappers[kRtInstances][kRtCount] = {{}, AW_RT_ADDR_AT(1), AW_RT_ADDR_AT(2), AW_RT_ADDR_AT(3)};
static_assert(kRtInstances == 4, "one AW_RT_ADDR_AT row per instance");

// An instance for object `o`: the one bound to it, else a free one, else one whose object is gone.
int instance_for(const Object& o) noexcept {
  for (int i = 1; i < kRtInstances; ++i)
    if (same_object(g_inst[i], o)) return i;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) forget_unloaded();
    for (int i = 1; i < kRtInstances; ++i) {
      int expected = kFree;
      if (g_inst[i].state.compare_exchange_strong(expected, kBinding)) {
        bind(g_inst[i], o);
        return i;
      }
      if (same_object(g_inst[i], o)) return i;  // bound meanwhile by another thread
    }
  }
  return -1;
}
}  // namespace

TextRange g_rt_text[kRtInstances];

// dlsym of a runtime name: the wrapper of the instance bound to the object `real_fn` is in (the
// exported wrapper when that is the runtime the exports call), or nullptr (hand `real_fn` out).
void* wrapper_for(const char* name, void* real_fn) noexcept {
  size_t slot = kRtCount;
  for (size_t i = 0; i < kRtCount && slot == kRtCount; ++i)
    if (!strcmp(kRtNames[i], name)) slot = i;
  if (slot == kRtCount) return nullptr;
  Object o;
  if (!object_of(real_fn, &o)) return nullptr;
  if (same_object(g_inst[0], o)) {
    void* expected = nullptr;
    g_inst[0].real[slot].compare_exchange_strong(expected, real_fn);
    if (expected == nullptr || expected == real_fn) return kExported[slot];
  }
  int i = instance_for(o);
  if (i < 0) return nullptr;  // more runtimes than instances: this one is not traced at its level
  g_inst[i].real[slot].store(real_fn, std::memory_order_release);
  return kInstanceWrappers[i][slot];
}

void forget_unloaded() noexcept {
  // Which bound instances' objects are still loaded.
  struct Arg {
    bool alive[kRtInstances];
  } arg{};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* a) -> int {
        auto* g = static_cast<Arg*>(a);
        uintptr_t ld = 0;
        for (int k = 0; k < info->dlpi_phnum; ++k)
          if (info->dlpi_phdr[k].p_type == PT_DYNAMIC) ld = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr;
        for (int i = 0; i < kRtInstances; ++i)
          if (g_inst[i].state.load() == kBound && g_inst[i].base.load() == info->dlpi_addr && g_inst[i].ld.load() == ld)
            g->alive[i] = true;
        return 0;
      },
      &arg);
  for (int i = 0; i < kRtInstances; ++i) {
    if (g_inst[i].state.load() != kBound || arg.alive[i]) continue;
    unbind(g_inst[i]);
    if (i == 0) g_exports_resolved.store(false);  // the next runtime's functions, all at once again
  }
}

}  // namespace asyncwatch::runtime_hooks
