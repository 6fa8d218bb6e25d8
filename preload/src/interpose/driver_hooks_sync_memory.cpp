// Wrappers of synchronization, memory management, stream creation and stream capture. These
// give the analyzer what it needs to read the copies: how long the host waited, which ranges are
// pinned (and feed the classifier's registry), each stream's flags, and when capture was on.
#include "call_context.h"
#include "traced_call.h"
#include "query_fold.h"
#include "classify/host_memory_classifier.h"
#include "cuda_abi.h"
#include "hook_table.h"
#include "real_functions.h"

namespace asyncwatch::graph_hooks {
void write_end_of_capture(cuda::CUstream st, cuda::CUgraph g) noexcept;  // driver_hooks_graph.cpp
}

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::calls::traced;
using asyncwatch::hooks::Hook;
using asyncwatch::trace::MemoryKind;

namespace {

// The pinned-range registry is written under its lock and a sequence count that readers spin on:
// marked as the library's own code, so that a signal handler's copy in between (which would spin
// on this thread's unfinished write) passes through instead.
template <class Fn>
void with_registry(Fn&& fn) noexcept {
  calls::LibraryScope scope;
  fn();
}

// The fill functions write the body and the flags (|=: kFlagInFlight stays until the wrapper
// completes the record); the head's api, driver_fn, result and times are the wrapper's.
void fill_sync(calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult, uint64_t handle, trace::StreamKind kind) {
  auto& s = rec.Sync;
  s.stream_kind = static_cast<uint8_t>(kind);
  s.flags |= hi.per_thread ? trace::kFlagPerThreadEntry : 0u;
  s.handle = handle;
  s.repeat = 1;
}

void fill_memory(calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult, MemoryKind kind, uint64_t address,
                 uint64_t bytes, unsigned alloc_flags) {
  auto& m = rec.MemoryOp;
  m.memory = static_cast<uint8_t>(kind);
  m.flags |= hi.per_thread ? trace::kFlagPerThreadEntry : 0u;
  m.alloc_flags = alloc_flags;
  m.address = address;
  m.bytes = bytes;
}

// `type` (StreamCreate or StreamDestroy) is the one calls::record_type gives for the hook.
void fill_stream(calls::AnyRecord& rec, const hooks::HookInfo&, CUresult, trace::RecordType, uint64_t stream,
                 unsigned flags, int priority) {
  auto& s = rec.StreamCreate;
  s.stream_flags = flags;
  s.priority = priority;
  s.stream = stream;
}

void fill_capture(calls::AnyRecord& rec, const hooks::HookInfo&, CUresult, uint64_t stream, unsigned mode) {
  auto& c = rec.Capture;
  c.mode = mode;
  c.stream = stream;
}

}  // namespace

// ---- synchronization ------------------------------------------------------------------------
#define DEF_STREAM_SYNC(sym)                                                                                         \
  AW_DRIVER_HOOK(sym, (st),                                                                                          \
                 return traced<Hook::sym>(                                                                           \
                     aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {    \
                       fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(st), calls::stream_kind(st, hi.per_thread)); \
                     });)
DEF_STREAM_SYNC(cuStreamSynchronize)
DEF_STREAM_SYNC(cuStreamSynchronize_ptsz)

// Queries: folded while their result repeats (query_fold.h), else recorded as above. The folding
// path calls the real function through a closure of its own, by value: the body's `call` (by
// reference) kept the handle and the function on the stack and made the polled query 107
// instructions, 96 so (bench/poll_loop.sh --callgrind, the static runtime's way in).
#define DEF_STREAM_QUERY(sym)                                                                                        \
  AW_DRIVER_HOOK(sym, (st), const hooks::HookInfo& hq = hooks::info(Hook::sym);                                      \
                 if (query_fold::eligible()) return query_fold::run(                                                 \
                     0, aw_caller, hq.api, hq.api, reinterpret_cast<uint64_t>(st),                                   \
                     calls::stream_kind(st, hq.per_thread), hq.per_thread, [real, st] { return real(st); });         \
                 return traced<Hook::sym>(                                                                           \
                     aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {    \
                       fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(st), calls::stream_kind(st, hi.per_thread)); \
                     });)
DEF_STREAM_QUERY(cuStreamQuery)
DEF_STREAM_QUERY(cuStreamQuery_ptsz)

#define DEF_EVENT_SYNC(sym)                                                                                       \
  AW_DRIVER_HOOK(sym, (ev),                                                                                       \
                 return traced<Hook::sym>(                                                                        \
                     aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL { \
                       fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(ev), trace::StreamKind::Unknown);         \
                     });)
DEF_EVENT_SYNC(cuEventSynchronize)

AW_DRIVER_HOOK(
    cuEventQuery, (ev),
    if (query_fold::eligible()) return query_fold::run(0, aw_caller, trace::Api::cuEventQuery, trace::Api::cuEventQuery,
                                                       reinterpret_cast<uint64_t>(ev), trace::StreamKind::Unknown,
                                                       false, [real, ev] { return real(ev); });
    return traced<Hook::cuEventQuery>(aw_caller, call,
                                      [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {
                                        fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(ev),
                                                  trace::StreamKind::Unknown);
                                      });)

AW_DRIVER_HOOK(cuCtxSynchronize, (),
               return traced<Hook::cuCtxSynchronize>(aw_caller, call,
                                                     [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r)
                                                         AW_FILL {
                                                           fill_sync(rec, hi, r, 0, trace::StreamKind::Unknown);
                                                         });)

// CUDA 13: cuGetProcAddress("cuCtxSynchronize", 13000) hands out cuCtxSynchronize_v2(CUcontext),
// which synchronizes the given context (NULL: the current one). Recorded as the same Sync as
// cuCtxSynchronize (api cuCtxSynchronize, so every rule about it applies) with driver_fn naming
// the entry point the application actually reached, and the context as the handle.
AW_DRIVER_HOOK(cuCtxSynchronize_v2, (ctx),
               return traced<Hook::cuCtxSynchronize_v2>(
                   aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {
                     fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(ctx), trace::StreamKind::Unknown);
                     rec.Sync.api = static_cast<uint16_t>(trace::Api::cuCtxSynchronize);
                   });)

#define DEF_STREAM_WAIT_EVENT(sym)                                                                                   \
  AW_DRIVER_HOOK(sym, (st, ev, flags),                                                                               \
                 return traced<Hook::sym>(                                                                           \
                     aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {    \
                       /* handle: the stream that waits; the event is not kept (no field for it) */                  \
                       fill_sync(rec, hi, r, reinterpret_cast<uint64_t>(st), calls::stream_kind(st, hi.per_thread)); \
                     });)
DEF_STREAM_WAIT_EVENT(cuStreamWaitEvent)
DEF_STREAM_WAIT_EVENT(cuStreamWaitEvent_ptsz)

// ---- memory management ----------------------------------------------------------------------
AW_DRIVER_HOOK(cuMemAlloc_v2, (p, n),
               return traced<Hook::cuMemAlloc_v2>(aw_caller, call,
                                                  [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                                                    fill_memory(rec, hi, r, MemoryKind::Device, (r == 0 && p) ? *p : 0,
                                                                n, 0);
                                                  });)

AW_DRIVER_HOOK(cuMemFree_v2, (p),
               return traced<Hook::cuMemFree_v2>(aw_caller, call,
                                                 [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                                                   fill_memory(rec, hi, r, MemoryKind::Device, p, 0, 0);
                                                 });)

// The pinned allocations feed the classifier's registry whether or not we record (a disabled or
// failed trace must not change classification of later calls... which are not recorded either,
// but the registry is cheap and keeps the two states simple).
AW_DRIVER_HOOK(cuMemAllocHost_v2, (pp, n),
               return traced<Hook::cuMemAllocHost_v2>(
                   aw_caller,
                   [&] {
                     CUresult r = real(pp, n);
                     if (r == CUDA_SUCCESS && pp && *pp)
                       with_registry([&] { classify::pinned_ranges().add(reinterpret_cast<uint64_t>(*pp), n); });
                     return r;
                   },
                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Pinned, (r == 0 && pp) ? reinterpret_cast<uint64_t>(*pp) : 0,
                                 n, 0);
                   });)

AW_DRIVER_HOOK(cuMemHostAlloc, (pp, n, flags),
               return traced<Hook::cuMemHostAlloc>(
                   aw_caller,
                   [&] {
                     CUresult r = real(pp, n, flags);
                     if (r == CUDA_SUCCESS && pp && *pp)
                       with_registry([&] { classify::pinned_ranges().add(reinterpret_cast<uint64_t>(*pp), n); });
                     return r;
                   },
                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Pinned, (r == 0 && pp) ? reinterpret_cast<uint64_t>(*pp) : 0,
                                 n, flags);
                   });)

AW_DRIVER_HOOK(cuMemFreeHost, (p),
               return traced<Hook::cuMemFreeHost>(
                   aw_caller,
                   [&] {
                     // Removed before the free: once the driver released it, malloc may reuse the
                     // address for pageable memory.
                     with_registry([&] { classify::pinned_ranges().remove(reinterpret_cast<uint64_t>(p)); });
                     return real(p);
                   },
                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Pinned, reinterpret_cast<uint64_t>(p), 0, 0);
                   });)

AW_DRIVER_HOOK(cuMemHostRegister_v2, (p, n, flags),
               return traced<Hook::cuMemHostRegister_v2>(
                   aw_caller,
                   [&] {
                     CUresult r = real(p, n, flags);
                     if (r == CUDA_SUCCESS && p)
                       with_registry([&] { classify::pinned_ranges().add(reinterpret_cast<uint64_t>(p), n); });
                     return r;
                   },
                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Pinned, reinterpret_cast<uint64_t>(p), n, flags);
                   });)

AW_DRIVER_HOOK(cuMemHostUnregister, (p),
               return traced<Hook::cuMemHostUnregister>(
                   aw_caller,
                   [&] {
                     CUresult r = real(p);
                     if (r == CUDA_SUCCESS)
                       with_registry([&] { classify::pinned_ranges().remove(reinterpret_cast<uint64_t>(p)); });
                     return r;
                   },
                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Pageable, reinterpret_cast<uint64_t>(p), 0, 0);
                   });)

AW_DRIVER_HOOK(cuMemAllocManaged, (p, n, flags),
               return traced<Hook::cuMemAllocManaged>(
                   aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_memory(rec, hi, r, MemoryKind::Managed, (r == 0 && p) ? *p : 0, n, flags);
                   });)

#define DEF_ALLOC_ASYNC(sym)                                                                                        \
  AW_DRIVER_HOOK(                                                                                                   \
      sym, (p, n, st),                                                                                              \
      return traced<Hook::sym>(aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) { \
        fill_memory(rec, hi, r, MemoryKind::Device, (r == 0 && p) ? *p : 0, n, 0);                                  \
      });)
DEF_ALLOC_ASYNC(cuMemAllocAsync)
DEF_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define DEF_FREE_ASYNC(sym)                                                                                         \
  AW_DRIVER_HOOK(                                                                                                   \
      sym, (p, st),                                                                                                 \
      return traced<Hook::sym>(aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) { \
        fill_memory(rec, hi, r, MemoryKind::Device, p, 0, 0);                                                       \
      });)
DEF_FREE_ASYNC(cuMemFreeAsync)
DEF_FREE_ASYNC(cuMemFreeAsync_ptsz)

// ---- streams and capture --------------------------------------------------------------------
AW_DRIVER_HOOK(cuStreamCreate, (ph, flags),
               return traced<Hook::cuStreamCreate>(aw_caller, call,
                                                   [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                                                     fill_stream(rec, hi, r, trace::RecordType::StreamCreate,
                                                                 (r == 0 && ph) ? reinterpret_cast<uint64_t>(*ph) : 0,
                                                                 flags, 0);
                                                   });)

AW_DRIVER_HOOK(cuStreamCreateWithPriority, (ph, flags, priority),
               return traced<Hook::cuStreamCreateWithPriority>(
                   aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_stream(rec, hi, r, trace::RecordType::StreamCreate,
                                 (r == 0 && ph) ? reinterpret_cast<uint64_t>(*ph) : 0, flags, priority);
                   });)

AW_DRIVER_HOOK(cuStreamDestroy_v2, (st),
               return traced<Hook::cuStreamDestroy_v2>(
                   aw_caller, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                     fill_stream(rec, hi, r, trace::RecordType::StreamDestroy, reinterpret_cast<uint64_t>(st), 0, 0);
                   });)

#define DEF_BEGIN_CAPTURE(sym)                                                                                     \
  AW_DRIVER_HOOK(                                                                                                  \
      sym, (st, mode),                                                                                             \
      /* Counted even when not recording: evidence must never run during a capture. */ CUresult r0 = CUDA_SUCCESS; \
      CUresult res = traced<Hook::sym>(                                                                            \
          aw_caller, [&] { return r0 = real(st, mode); },                                                          \
          [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {                                      \
            fill_capture(rec, hi, r, reinterpret_cast<uint64_t>(st), mode);                                        \
          });                                                                                                      \
      if (r0 == CUDA_SUCCESS && res == CUDA_SUCCESS) calls::capture_begun(); return res;)
DEF_BEGIN_CAPTURE(cuStreamBeginCapture_v2)
DEF_BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz)

// CUDA 12.3+: capture into an existing graph. Ended by cuStreamEndCapture like any capture; it
// must be counted too, or completion evidence could invalidate a global-mode capture.
#define DEF_BEGIN_CAPTURE_TO_GRAPH(sym)                                                                             \
  AW_DRIVER_HOOK(sym, (st, g, deps, edge_data, ndeps, mode), CUresult r0 = CUDA_SUCCESS;                            \
                 CUresult res = traced<Hook::sym>(                                                                  \
                     aw_caller, [&] { return r0 = real(st, g, deps, edge_data, ndeps, mode); },                     \
                     [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {                            \
                       fill_capture(rec, hi, r, reinterpret_cast<uint64_t>(st),                                     \
                                    mode); /* a begin of capture for every rule; driver_fn names the entry point */ \
                       rec.Capture.api = static_cast<uint16_t>(trace::Api::cuStreamBeginCapture_v2);                \
                     });                                                                                            \
                 if (r0 == CUDA_SUCCESS && res == CUDA_SUCCESS) calls::capture_begun(); return res;)
DEF_BEGIN_CAPTURE_TO_GRAPH(cuStreamBeginCaptureToGraph)
DEF_BEGIN_CAPTURE_TO_GRAPH(cuStreamBeginCaptureToGraph_ptsz)

#define DEF_END_CAPTURE(sym)                                                                                 \
  AW_DRIVER_HOOK(sym, (st, g),                                                                               \
                 CUresult res = traced<Hook::sym>(                                                           \
                     aw_caller, call,                                                                        \
                     [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {                     \
                       fill_capture(rec, hi, r, reinterpret_cast<uint64_t>(st),                              \
                                    0); /* the graph it made, for the analyzer's graph launches (GraphOp) */ \
                       if (r == CUDA_SUCCESS && g && !calls::thread_state().reentrant)                       \
                         graph_hooks::write_end_of_capture(st, *g);                                          \
                     });                                                                                     \
                 /* A failed EndCapture (invalidated capture) still ends it. */ calls::capture_ended(); return res;)
DEF_END_CAPTURE(cuStreamEndCapture)
DEF_END_CAPTURE(cuStreamEndCapture_ptsz)
