// Wrappers of the driver's copy and memset entry points (every _v2/_ptds/_ptsz name in
// hook_table.h). Each records one Copy/Memset record: direction, the memory kind of each side,
// bytes, stream, time blocked, and (per ASYNCWATCH_EVIDENCE) whether the stream had already
// completed the work when the call returned.
#include <type_traits>

#include "call_context.h"
#include "traced_call.h"
#include "gpu_times/gpu_times.h"
#include "classify/host_memory_classifier.h"
#include "copy_sides.h"
#include "config.h"
#include "cuda_abi.h"
#include "hook_table.h"
#include "real_functions.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;
using asyncwatch::trace::Direction;
using asyncwatch::trace::MemoryKind;

namespace {

using copy_sides::host_kind;
using copy_sides::Sides;
using copy_sides::sides_of;
using copy_sides::unified_kind;
using trace::infer_direction;  // the one definition (trace_format.h)

// A host side that may make the call synchronous: anything not known to be pinned.
inline bool doubtful_host(MemoryKind k) {
  return k == MemoryKind::Pageable || k == MemoryKind::Unknown || k == MemoryKind::Managed;
}

inline __attribute__((always_inline)) bool wants_evidence(const Config& cfg, const Sides& s, bool memset) noexcept {
  switch (cfg.evidence) {
    case EvidencePolicy::Off: return false;
    case EvidencePolicy::All: return true;
    case EvidencePolicy::Auto: break;
  }
  if (memset) return doubtful_host(s.dst);
  switch (s.direction) {
    case Direction::HtoD: return doubtful_host(s.src);
    case Direction::DtoH: return doubtful_host(s.dst);
    case Direction::HtoH: return true;
    case Direction::DtoD:
    case Direction::Peer: return false;
    default: return doubtful_host(s.src) || doubtful_host(s.dst);
  }
}

// The record's body that the sides and the stream give (all but the capture, evidence and
// GPU-times parts).
inline __attribute__((always_inline)) void fill_sides(calls::AnyRecord& rec, const Sides& s, CUstream stream,
                                                      bool per_thread, bool sync_api) noexcept {
  auto& c = rec.Copy;
  c.direction = static_cast<uint8_t>(s.direction);
  c.src_memory = static_cast<uint8_t>(s.src);
  c.dst_memory = static_cast<uint8_t>(s.dst);
  c.stream_kind = static_cast<uint8_t>(calls::stream_kind(stream, per_thread));
  c.flags |= (per_thread ? trace::kFlagPerThreadEntry : 0u) | (sync_api ? trace::kFlagSynchronousApi : 0u);
  c.stream = reinterpret_cast<uint64_t>(stream);
  c.bytes = s.bytes;
}

// A copy or memset through hook `H`: its record (Copy or Memset) and whether it waits by the API's
// contract (kFlagSynchronousApi; such a call takes no stream) come from the hook table.
template <Hook H, class C, class Call, class Describe>
CUresult traced(C caller, CUstream stream, Call&& call, Describe&& describe) {
  constexpr Hook h = H;
  constexpr calls::Category cat = hooks::row(H).record;
  constexpr trace::RecordType type = cat;
  constexpr bool sync_api = hooks::row(H).blocking;
  constexpr bool has_stream = !sync_api;
  static_assert(cat == trace::RecordType::Copy || cat == trace::RecordType::Memset, "a copy or memset hook");
  uint32_t gpu = 0;  // ASYNCWATCH_GPU_TIMES: the token of the start event recorded before the call
  Sides s{};
  // Before the call: the sides, classified, decide whether the stack is taken now (the call site
  // of a copy still in flight when the process dies, stack_policy.h copy_stack_before).
  // (One configuration load for its tests and the fill's.)
  const Config* cfg = nullptr;
  auto prepare = [&]() noexcept {
    s = describe();
    cfg = &config_fast();
    if (cfg->gpu_times) gpu = gpu_times::before(stream, hooks::info(h).per_thread);
    return calls::copy_stack_before(*cfg, s.direction, s.src, s.dst, type == trace::RecordType::Memset);
  };
  return calls::traced_with(
      caller, h, cat, prepare, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {
        fill_sides(rec, s, stream, hi.per_thread, sync_api);
        auto& c = rec.Copy;
        bool capturing = has_stream && calls::stream_is_capturing(stream);
        if (capturing) c.flags |= trace::kFlagCaptureActive;
        if (r == CUDA_SUCCESS && !capturing && wants_evidence(*cfg, s, type == trace::RecordType::Memset))
          calls::completion_evidence(stream, hi.per_thread, &c.flags);
        if (gpu &&
            gpu_times::after(gpu, r, stream, hi.per_thread,
                             cat == calls::Category::Copy ? trace::GpuOp::Copy : trace::GpuOp::Memset, c.stream_kind))
          c.flags |= trace::kFlagGpuTimed;
      });
}

#if AW_ENTRY_STUBS
// An asynchronous host <-> device copy's prefill step (hook_entry.h, AW_PREFILLED_DRIVER_HOOKS;
// arguments (dst, src, n, st)): the in-runtime body's work done before the call when nothing of it
// needs the call's result or may call out: the host side in the pinned range this thread found
// last (classified without a call), so no evidence and no stack before the call (unless the
// configuration asks for them always), no GPU times, no capture active, the runtime call's record
// this copy's to fill and of this trace, the device's record written; else `full` with nothing
// changed. (No errno to keep: nothing here calls out but the deferred signals' delivery.)
template <Hook H, Direction D>
inline void* prefill_copy(const calls::StubArgs& a, void* full) noexcept {
  calls::ThreadCallState& st = calls::thread_state();
  void* const real = real::g_real[static_cast<size_t>(H)].load(std::memory_order_acquire);
  const Config* cfg = g_config.load(std::memory_order_acquire);
  const uint32_t gen = trace_writer::generation();
  const uint64_t host = a.reg[D == Direction::HtoD ? 1 : 0];
  const Sides s = D == Direction::HtoD ? Sides{D, MemoryKind::Pinned, MemoryKind::Device, a.reg[2]}
                                       : Sides{D, MemoryKind::Device, MemoryKind::Pinned, a.reg[2]};
  // (The host side first: what a pageable copy fails, soon.)
  if (AW_UNLIKELY(!classify::last_pinned_hit(host) ||
                  !calls::prefill_possible(st, real, cfg, hooks::row(H).record, gen) ||
                  wants_evidence(*cfg, s, false) || calls::copy_stack_before(*cfg, s.direction, s.src, s.dst, false)))
    return full;
  return calls::prefill_record(st, H, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi) {
    fill_sides(rec, s, a.get<CUstream>(3), hi.per_thread, false);
  });
}
#define DEF_PREFILL(sym, dir)                                                                                  \
  extern "C" __attribute__((visibility("hidden"))) void* aw_prefill_##sym(const calls::StubArgs* a) noexcept { \
    return prefill_copy<Hook::sym, Direction::dir>(*a, reinterpret_cast<void*>(&aw_inrt_full_##sym));          \
  }
#else
#define DEF_PREFILL(sym, dir)
#endif

}  // namespace

#define AW_BOTH(DEF, base, suffix) DEF(base) DEF(base##suffix)

// ---- linear copies -----------------------------------------------------------------------
#define DEF_MEMCPY(sym)                                                                       \
  AW_DRIVER_HOOK(sym, (dst, src, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { \
                   MemoryKind s = unified_kind(src), d = unified_kind(dst);                   \
                   return Sides{infer_direction(s, d), s, d, n};                              \
                 });)
AW_BOTH(DEF_MEMCPY, cuMemcpy, _ptds)

#define DEF_MEMCPY_ASYNC(sym)                                                                \
  AW_DRIVER_HOOK(sym, (dst, src, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                   MemoryKind s = unified_kind(src), d = unified_kind(dst);                  \
                   return Sides{infer_direction(s, d), s, d, n};                             \
                 });)
AW_BOTH(DEF_MEMCPY_ASYNC, cuMemcpyAsync, _ptsz)

#define DEF_HTOD(sym)                                                                         \
  AW_DRIVER_HOOK(sym, (dst, src, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { \
                   return Sides{Direction::HtoD, host_kind(src), MemoryKind::Device, n};      \
                 });)
AW_BOTH(DEF_HTOD, cuMemcpyHtoD_v2, _ptds)

#define DEF_DTOH(sym)                                                                         \
  AW_DRIVER_HOOK(sym, (dst, src, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { \
                   return Sides{Direction::DtoH, MemoryKind::Device, host_kind(dst), n};      \
                 });)
AW_BOTH(DEF_DTOH, cuMemcpyDtoH_v2, _ptds)

#define DEF_DTOD(sym)                                                                         \
  AW_DRIVER_HOOK(sym, (dst, src, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { \
                   return Sides{Direction::DtoD, MemoryKind::Device, MemoryKind::Device, n};  \
                 });)
AW_BOTH(DEF_DTOD, cuMemcpyDtoD_v2, _ptds)

#define DEF_HTOD_ASYNC(sym)                                                                            \
  AW_DRIVER_HOOK_PREFILLED(sym, (dst, src, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                             return Sides{Direction::HtoD, host_kind(src), MemoryKind::Device, n};     \
                           });)
AW_BOTH(DEF_HTOD_ASYNC, cuMemcpyHtoDAsync_v2, _ptsz)
DEF_PREFILL(cuMemcpyHtoDAsync_v2, HtoD)
DEF_PREFILL(cuMemcpyHtoDAsync_v2_ptsz, HtoD)

#define DEF_DTOH_ASYNC(sym)                                                                            \
  AW_DRIVER_HOOK_PREFILLED(sym, (dst, src, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                             return Sides{Direction::DtoH, MemoryKind::Device, host_kind(dst), n};     \
                           });)
AW_BOTH(DEF_DTOH_ASYNC, cuMemcpyDtoHAsync_v2, _ptsz)
DEF_PREFILL(cuMemcpyDtoHAsync_v2, DtoH)
DEF_PREFILL(cuMemcpyDtoHAsync_v2_ptsz, DtoH)

#define DEF_DTOD_ASYNC(sym)                                                                  \
  AW_DRIVER_HOOK(sym, (dst, src, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                   return Sides{Direction::DtoD, MemoryKind::Device, MemoryKind::Device, n}; \
                 });)
AW_BOTH(DEF_DTOD_ASYNC, cuMemcpyDtoDAsync_v2, _ptsz)

// ---- 2D / 3D: each side's kind from the descriptor's memory type (copy_sides::sides_of) ----

#define DEF_2D(sym) \
  AW_DRIVER_HOOK(sym, (p), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_2D, cuMemcpy2D_v2, _ptds)
AW_BOTH(DEF_2D, cuMemcpy2DUnaligned_v2, _ptds)

#define DEF_2D_ASYNC(sym) \
  AW_DRIVER_HOOK(sym, (p, st), return traced<Hook::sym>(aw_caller, st, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_2D_ASYNC, cuMemcpy2DAsync_v2, _ptsz)

#define DEF_3D(sym) \
  AW_DRIVER_HOOK(sym, (p), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_3D, cuMemcpy3D_v2, _ptds)

#define DEF_3D_ASYNC(sym) \
  AW_DRIVER_HOOK(sym, (p, st), return traced<Hook::sym>(aw_caller, st, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_3D_ASYNC, cuMemcpy3DAsync_v2, _ptsz)

// ---- peer and array copies ---------------------------------------------------------------
#define DEF_PEER(sym)                                                                                 \
  AW_DRIVER_HOOK(sym, (dst, dc, src, sc, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { \
                   return Sides{Direction::Peer, MemoryKind::Device, MemoryKind::Device, n};          \
                 });)
AW_BOTH(DEF_PEER, cuMemcpyPeer, _ptds)

#define DEF_PEER_ASYNC(sym)                                                                          \
  AW_DRIVER_HOOK(sym, (dst, dc, src, sc, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                   return Sides{Direction::Peer, MemoryKind::Device, MemoryKind::Device, n};         \
                 });)
AW_BOTH(DEF_PEER_ASYNC, cuMemcpyPeerAsync, _ptsz)

#define DEF_3D_PEER(sym) \
  AW_DRIVER_HOOK(sym, (p), return traced<Hook::sym>(aw_caller, nullptr, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_3D_PEER, cuMemcpy3DPeer, _ptds)

#define DEF_3D_PEER_ASYNC(sym) \
  AW_DRIVER_HOOK(sym, (p, st), return traced<Hook::sym>(aw_caller, st, call, [&] { return sides_of(p); });)
AW_BOTH(DEF_3D_PEER_ASYNC, cuMemcpy3DPeerAsync, _ptsz)

#define DEF_HTOA_ASYNC(sym)                                                                       \
  AW_DRIVER_HOOK(sym, (dst, off, src, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                   return Sides{Direction::HtoD, host_kind(src), MemoryKind::Array, n};           \
                 });)
AW_BOTH(DEF_HTOA_ASYNC, cuMemcpyHtoAAsync_v2, _ptsz)

#define DEF_ATOH_ASYNC(sym)                                                                       \
  AW_DRIVER_HOOK(sym, (dst, src, off, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] { \
                   return Sides{Direction::DtoH, MemoryKind::Array, host_kind(dst), n};           \
                 });)
AW_BOTH(DEF_ATOH_ASYNC, cuMemcpyAtoHAsync_v2, _ptsz)

// ---- memsets: dst kind classified (pinned/managed targets change the sync behaviour) -------
// (The element's size is the value's: its type is the table's.)
#define DEF_MEMSET(sym)                                                                                    \
  AW_DRIVER_HOOK(sym, (dst, v, n), return traced<Hook::sym>(aw_caller, nullptr, call, [&] {                \
                   return Sides{Direction::Unknown, MemoryKind::Unknown, unified_kind(dst), n * sizeof v}; \
                 });)
#define DEF_MEMSET_ASYNC(sym)                                                                              \
  AW_DRIVER_HOOK(sym, (dst, v, n, st), return traced<Hook::sym>(aw_caller, st, call, [&] {                 \
                   return Sides{Direction::Unknown, MemoryKind::Unknown, unified_kind(dst), n * sizeof v}; \
                 });)
#define DEF_MEMSET2D(sym)                                                                                      \
  AW_DRIVER_HOOK(sym, (dst, pitch, v, w, h), return traced<Hook::sym>(aw_caller, nullptr, call, [&] {          \
                   return Sides{Direction::Unknown, MemoryKind::Unknown, unified_kind(dst), w * h * sizeof v}; \
                 });)
#define DEF_MEMSET2D_ASYNC(sym)                                                                                \
  AW_DRIVER_HOOK(sym, (dst, pitch, v, w, h, st), return traced<Hook::sym>(aw_caller, st, call, [&] {           \
                   return Sides{Direction::Unknown, MemoryKind::Unknown, unified_kind(dst), w * h * sizeof v}; \
                 });)
// The eight entry points of one element size.
#define DEF_MEMSETS(bits)                                  \
  AW_BOTH(DEF_MEMSET, cuMemsetD##bits##_v2, _ptds)         \
  AW_BOTH(DEF_MEMSET_ASYNC, cuMemsetD##bits##Async, _ptsz) \
  AW_BOTH(DEF_MEMSET2D, cuMemsetD2D##bits##_v2, _ptds)     \
  AW_BOTH(DEF_MEMSET2D_ASYNC, cuMemsetD2D##bits##Async, _ptsz)
DEF_MEMSETS(8)
DEF_MEMSETS(16)
DEF_MEMSETS(32)
