// Wrappers of the managed-memory stream operations (cuMemPrefetchAsync, its CUDA 12.2 _v2 form with a
// CUmemLocation, cuStreamAttachMemAsync: one ManagedOp record each) and of batch copies
// (cuMemcpyBatchAsync / cuMemcpy3DBatchAsync, the CUDA 12.8 forms with failIdx and the 13.0 _v2 forms:
// one BatchCopy record each, every element classified). Signatures from CUDA 13.0's cuda.h and
// cudaTypedefs.h (PFN_cuMemcpyBatchAsync_v12080 / _v13000, PFN_cuMemPrefetchAsync_v8000 / _v12020).
#include "call_context.h"
#include "classify/host_memory_classifier.h"
#include "config.h"
#include "cuda_abi.h"
#include "hook_table.h"
#include "real_functions.h"
#include "traced_call.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;
using asyncwatch::trace::Direction;
using asyncwatch::trace::MemoryKind;

namespace {

inline MemoryKind kind_of(CUdeviceptr p) noexcept { return classify::classify_pointer(p); }

// ---- managed-memory operations --------------------------------------------------------------
template <class C, class Call>
CUresult traced_managed(C caller, Hook h, CUstream st, CUdeviceptr p, size_t n, int loc_type, int loc_id,
                        unsigned flags, Call&& call) {
  return calls::traced(caller, h, calls::Category::ManagedOp, call,
                       [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult) {
                         auto& m = rec.ManagedOp;
                         m.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, hi.per_thread));
                         m.flags |= hi.per_thread ? trace::kFlagPerThreadEntry : 0u;
                         if (calls::stream_is_capturing(st)) m.flags |= trace::kFlagCaptureActive;
                         m.stream = reinterpret_cast<uint64_t>(st);
                         m.address = p;
                         m.bytes = n;
                         m.memory = static_cast<uint8_t>(kind_of(p));
                         m.location_type = static_cast<uint8_t>(loc_type);
                         m.location_id = loc_id;
                         m.op_flags = flags;
                       });
}

// ---- batch copies ---------------------------------------------------------------------------
// The running classification of a batch's elements (BatchCopyRecord, trace_format.h).
struct BatchTally {
  uint32_t classified = 0, pageable = 0, stream_order_sources = 0;
  uint64_t bytes = 0, pageable_bytes = 0, stream_order_bytes = 0;
  int rank = -1;  // of the element the CopyRecord part describes: 2 stream-ordered pageable source, 1 pageable, 0 any
  Direction dir = Direction::Unknown;
  MemoryKind src = MemoryKind::Unknown, dst = MemoryKind::Unknown;

  void add(MemoryKind s, MemoryKind d, uint64_t n, bool stream_order) noexcept {
    ++classified;
    bytes += n;
    bool is_pageable = s == MemoryKind::Pageable || d == MemoryKind::Pageable;
    bool ordered_source = s == MemoryKind::Pageable && stream_order;
    if (is_pageable) ++pageable, pageable_bytes += n;
    if (ordered_source) ++stream_order_sources, stream_order_bytes += n;
    int r = ordered_source ? 2 : is_pageable ? 1 : 0;
    if (r > rank) {
      rank = r;
      src = s;
      dst = d;
      dir = trace::infer_direction(s, d);
    }
  }
};

bool batch_wants_evidence(const BatchTally& t) noexcept {
  switch (config().evidence) {
    case EvidencePolicy::Off: return false;
    case EvidencePolicy::All: return true;
    case EvidencePolicy::Auto: break;
  }
  return t.pageable > 0 || t.classified == 0;
}

template <class C, class Call, class Classify>
CUresult traced_batch(C caller, Hook h, CUstream st, size_t count, Call&& call, Classify&& classify) {
  return calls::traced(caller, h, calls::Category::BatchCopy, call,
                       [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) {
                         auto& b = rec.BatchCopy;
                         BatchTally t;
                         classify(t);
                         b.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, hi.per_thread));
                         b.flags |= hi.per_thread ? trace::kFlagPerThreadEntry : 0u;
                         if (t.stream_order_sources) b.flags |= trace::kFlagSourceStreamOrder;
                         b.stream = reinterpret_cast<uint64_t>(st);
                         b.bytes = t.bytes;
                         b.direction = static_cast<uint8_t>(t.dir);
                         b.src_memory = static_cast<uint8_t>(t.src);
                         b.dst_memory = static_cast<uint8_t>(t.dst);
                         b.elements = static_cast<uint32_t>(count > UINT32_MAX ? UINT32_MAX : count);
                         b.classified = t.classified;
                         b.pageable_elements = t.pageable;
                         b.pageable_bytes = t.pageable_bytes;
                         b.stream_order_pageable_sources = t.stream_order_sources;
                         b.stream_order_pageable_bytes = t.stream_order_bytes;
                         bool capturing = calls::stream_is_capturing(st);
                         if (capturing) b.flags |= trace::kFlagCaptureActive;
                         if (r == CUDA_SUCCESS && !capturing && batch_wants_evidence(t))
                           calls::completion_evidence(st, hi.per_thread, &b.flags);
                       });
}

// 1D batch: attribute k applies to the copies from attrs_idx[k] up to attrs_idx[k + 1].
void classify_1d(BatchTally& t, const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes, size_t count,
                 const CUmemcpyAttributes* attrs, const size_t* attrs_idx, size_t num_attrs) noexcept {
  if (!dsts || !srcs || !sizes) return;
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    while (attrs && attrs_idx && k + 1 < num_attrs && attrs_idx[k + 1] <= i) ++k;
    bool ordered = attrs && num_attrs && attrs[k].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    t.add(kind_of(srcs[i]), kind_of(dsts[i]), sizes[i], ordered);
  }
}

MemoryKind operand_kind(const CUmemcpy3DOperand& o) noexcept {
  if (o.type == CU_MEMCPY_OPERAND_TYPE_POINTER) return kind_of(o.op.ptr.ptr);
  if (o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) return MemoryKind::Array;
  return MemoryKind::Unknown;
}

// 3D batch: bytes are the extent's product (exact for pointer operands, whose extent is in bytes; for
// arrays, elements).
void classify_3d(BatchTally& t, const CUDA_MEMCPY3D_BATCH_OP* ops, size_t n) noexcept {
  if (!ops) return;
  for (size_t i = 0; i < n; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    uint64_t bytes = uint64_t{op.extent.width} * op.extent.height * (op.extent.depth ? op.extent.depth : 1);
    t.add(operand_kind(op.src), operand_kind(op.dst), bytes, op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  }
}

}  // namespace

#define AW_BOTH(DEF, base, suffix) DEF(base) DEF(base##suffix)

// CUDA 8 form: a device ordinal or CU_DEVICE_CPU.
#define DEF_PREFETCH_V1(sym)                                                                                           \
  AW_DRIVER_HOOK(sym, (p, n, dev, st),                                                                                 \
                 return traced_managed(aw_caller, Hook::sym, st, p, n,                                                 \
                                       dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE, \
                                       dev, 0, call);)
AW_BOTH(DEF_PREFETCH_V1, cuMemPrefetchAsync, _ptsz)

// CUDA 12.2 form (what cuda.h 13.0 calls cuMemPrefetchAsync).
#define DEF_PREFETCH_V2(sym)                  \
  AW_DRIVER_HOOK(sym, (p, n, loc, flags, st), \
                 return traced_managed(aw_caller, Hook::sym, st, p, n, loc.type, loc.id, flags, call);)
AW_BOTH(DEF_PREFETCH_V2, cuMemPrefetchAsync_v2, _ptsz)

#define DEF_ATTACH(sym) \
  AW_DRIVER_HOOK(sym, (st, p, n, flags), return traced_managed(aw_caller, Hook::sym, st, p, n, 0, 0, flags, call);)
AW_BOTH(DEF_ATTACH, cuStreamAttachMemAsync, _ptsz)

// CUDA 12.8 form, with failIdx (PFN_cuMemcpyBatchAsync_v12080).
#define DEF_BATCH_V1(sym)                                                                        \
  AW_DRIVER_HOOK(sym, (dsts, srcs, sizes, count, attrs, idx, num_attrs, fail, st),               \
                 return traced_batch(aw_caller, Hook::sym, st, count, call, [&](BatchTally& t) { \
                   classify_1d(t, dsts, srcs, sizes, count, attrs, idx, num_attrs);              \
                 });)
AW_BOTH(DEF_BATCH_V1, cuMemcpyBatchAsync, _ptsz)

// CUDA 13.0 form (PFN_cuMemcpyBatchAsync_v13000).
#define DEF_BATCH_V2(sym)                                                                        \
  AW_DRIVER_HOOK(sym, (dsts, srcs, sizes, count, attrs, idx, num_attrs, st),                     \
                 return traced_batch(aw_caller, Hook::sym, st, count, call, [&](BatchTally& t) { \
                   classify_1d(t, dsts, srcs, sizes, count, attrs, idx, num_attrs);              \
                 });)
AW_BOTH(DEF_BATCH_V2, cuMemcpyBatchAsync_v2, _ptsz)

#define DEF_BATCH3D_V1(sym)           \
  AW_DRIVER_HOOK(                     \
      sym, (n, ops, fail, flags, st), \
      return traced_batch(aw_caller, Hook::sym, st, n, call, [&](BatchTally& t) { classify_3d(t, ops, n); });)
AW_BOTH(DEF_BATCH3D_V1, cuMemcpy3DBatchAsync, _ptsz)

#define DEF_BATCH3D_V2(sym)                                                                                            \
  AW_DRIVER_HOOK(sym, (n, ops, flags, st), return traced_batch(aw_caller, Hook::sym, st, n, call, [&](BatchTally& t) { \
                   classify_3d(t, ops, n);                                                                             \
                 });)
AW_BOTH(DEF_BATCH3D_V2, cuMemcpy3DBatchAsync_v2, _ptsz)
