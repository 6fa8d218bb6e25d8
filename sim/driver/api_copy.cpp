// Copy and memset entry points (legacy and per-thread variants): 1D, 2D, 3D, peer, CUDA arrays and
// batches. copy_engine.cpp holds the rules they all follow.
#include <cstdint>

#include "arrays.h"
#include "copy_engine.h"
#include "driver_state.h"
#include "exports.h"
#include "memory_registry.h"

using namespace aw_sim;

namespace {

constexpr DefaultStream L = DefaultStream::Legacy;
constexpr DefaultStream PT = DefaultStream::PerThread;

bool device_reachable(const void* p) { return memory_registry().find(reinterpret_cast<uintptr_t>(p)).has_value(); }

CUresult checked_copy(const CopyShape& s, bool dst_is_device, bool src_is_device, CUstream h, DefaultStream mode,
                      CopyCall call) {
  if (CUresult r = check_context()) return r;
  if (s.bytes() == 0) return CUDA_SUCCESS;
  if (dst_is_device && !device_reachable(s.dst)) return CUDA_ERROR_INVALID_VALUE;
  if (src_is_device && !device_reachable(s.src)) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, h, mode, call);
}

void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream h, DefaultStream mode, CopyCall call) {
  if (CUresult r = check_context()) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CopyShape s;
  if (CUresult r = shape_from_memcpy2d(*p, &s)) return r;
  return copy(s, h, mode, call);
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream h, DefaultStream mode, CopyCall call) {
  if (CUresult r = check_context()) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CopyShape s;
  if (CUresult r = shape_from_memcpy3d(*p, &s)) return r;
  return copy(s, h, mode, call);
}

// A copy of `n` bytes from/to offset `off` of a CUDA array (treated as linear memory).
CUresult array_span(CUarray a, size_t off, size_t n, char** out) {
  const SimArray* arr = find_array(a);
  if (!arr || off + n > arr->bytes()) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<char*>(arr->base) + off;
  return CUDA_SUCCESS;
}

CUresult array_copy(CUarray dst_array, size_t dst_off, void* dst, CUarray src_array, size_t src_off, const void* src,
                    size_t n, CUstream h, DefaultStream mode, CopyCall call) {
  if (CUresult r = check_context()) return r;
  char* d = static_cast<char*>(dst);
  char* s = const_cast<char*>(static_cast<const char*>(src));
  if (dst_array)
    if (CUresult r = array_span(dst_array, dst_off, n, &d)) return r;
  if (src_array)
    if (CUresult r = array_span(src_array, src_off, n, &s)) return r;
  return copy(linear_copy(d, s, n), h, mode, call);
}

// Device memory of context `ctx`'s device (peer copies name the contexts owning both sides).
CUresult check_owned(CUdeviceptr p, CUcontext ctx) {
  SimContext* c = context_from_handle(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  auto a = memory_registry().find(p);
  if (!a || a->kind != MemoryKind::Device || a->device != c->ordinal) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// cuMemcpyPeer / cuMemcpy3DPeer: "asynchronous with respect to the host, but serialized with respect
// to all pending and future asynchronous work in the current context, srcContext and dstContext":
// the copy goes to the current context's default stream after a marker on each context's default
// stream, and each other context's default stream gets a marker waiting for the copy.
CUresult peer_copy_serialized(const CopyShape& shape, CUcontext dst_ctx, CUcontext src_ctx, DefaultStream mode) {
  std::shared_ptr<Stream> own;
  if (CUresult r = resolve_stream(nullptr, mode, own)) return r;
  std::vector<std::shared_ptr<Stream>> others;
  for (CUcontext c : {dst_ctx, src_ctx}) {
    SimContext* ctx = context_from_handle(c);
    auto s = mode == DefaultStream::PerThread ? ctx->streams().per_thread() : ctx->streams().legacy();
    if (s != own && (others.empty() || others.front() != s)) others.push_back(s);
  }
  StreamOp before;
  before.what = "peer copy: earlier work of the other context";
  for (const auto& s : others) {
    StreamOp marker;
    marker.what = "peer copy: pending work";
    before.deps.push_back({s, s->enqueue(std::move(marker))});
  }
  own->enqueue(std::move(before));
  copy_on_stream(*own, shape, CopyCall::Async);
  const uint64_t copied = own->enqueued();
  for (const auto& s : others) {
    StreamOp after;
    after.what = "peer copy: later work waits for it";
    after.deps.push_back({own, copied});
    s->enqueue(std::move(after));
  }
  return CUDA_SUCCESS;
}

CUresult peer_copy(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream h,
                   DefaultStream mode, bool async) {
  if (CUresult r = check_context()) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (CUresult r = check_owned(dst, dctx)) return r;
  if (CUresult r = check_owned(src, sctx)) return r;
  const CopyShape shape = linear_copy(as_ptr(dst), as_ptr(src), n);
  return async ? copy(shape, h, mode, CopyCall::Async) : peer_copy_serialized(shape, dctx, sctx, mode);
}

CUresult peer_copy_3d(const CUDA_MEMCPY3D_PEER* p, CUstream h, DefaultStream mode, bool async) {
  if (CUresult r = check_context()) return r;
  if (!p || !context_from_handle(p->srcContext) || !context_from_handle(p->dstContext)) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = p->srcXInBytes, d.srcY = p->srcY, d.srcZ = p->srcZ, d.srcLOD = p->srcLOD;
  d.srcMemoryType = p->srcMemoryType, d.srcHost = p->srcHost, d.srcDevice = p->srcDevice, d.srcArray = p->srcArray;
  d.srcPitch = p->srcPitch, d.srcHeight = p->srcHeight;
  d.dstXInBytes = p->dstXInBytes, d.dstY = p->dstY, d.dstZ = p->dstZ, d.dstLOD = p->dstLOD;
  d.dstMemoryType = p->dstMemoryType, d.dstHost = p->dstHost, d.dstDevice = p->dstDevice, d.dstArray = p->dstArray;
  d.dstPitch = p->dstPitch, d.dstHeight = p->dstHeight;
  d.WidthInBytes = p->WidthInBytes, d.Height = p->Height, d.Depth = p->Depth;
  CopyShape s;
  if (CUresult r = shape_from_memcpy3d(d, &s)) return r;
  if (s.bytes() == 0) return CUDA_SUCCESS;
  return async ? copy(s, h, mode, CopyCall::Async) : peer_copy_serialized(s, p->dstContext, p->srcContext, mode);
}

template <class T>
CUresult memset_2d(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h, CUstream s, DefaultStream mode,
                   CopyCall call) {
  if (CUresult r = check_context()) return r;
  MemsetShape m;
  m.dst = dst;
  m.pitch = pitch;
  m.value = v;
  m.elem_size = sizeof(T);
  m.width = w;
  m.height = h;
  return aw_sim::memset(m, s, mode, call);
}

// ---- batches (CUDA 12.8+): every element follows the rules of a single cuMemcpyAsync, except that a
// device->pageable element is only queued (CopyCall::Batch, measured on the H200) ----

bool legacy_stream(CUstream h, DefaultStream mode) {
  return h == CU_STREAM_LEGACY || (h == nullptr && mode == DefaultStream::Legacy);
}

CUresult resolve_batch_stream(CUstream h, DefaultStream mode, std::shared_ptr<Stream>& s) {
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  // "Must not be legacy NULL stream" (cuda.h).
  if (legacy_stream(h, mode)) return CUDA_ERROR_INVALID_VALUE;
  // The H200 answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture stays valid.
  if (s->capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

SourceOrder source_order(CUmemcpySrcAccessOrder o) {
  return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ? SourceOrder::InStream : SourceOrder::AtCall;
}
bool valid_order(CUmemcpySrcAccessOrder o) {
  return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
         o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

CUresult batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
               size_t* attr_idxs, size_t num_attrs, size_t* fail_idx, CUstream h, DefaultStream mode) {
  if (fail_idx) *fail_idx = SIZE_MAX;  // the failure is not specific to one copy
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_batch_stream(h, mode, s)) return r;
  if (!count || !dsts || !srcs || !sizes || !attrs || !attr_idxs || !num_attrs || num_attrs > count ||
      attr_idxs[0] != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < num_attrs; ++k) {
    if (k && attr_idxs[k] <= attr_idxs[k - 1]) return CUDA_ERROR_INVALID_VALUE;
    if (attr_idxs[k] >= count || !valid_order(attrs[k].srcAccessOrder)) return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!sizes[i] || !dsts[i] || !srcs[i]) {
      if (fail_idx) *fail_idx = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    while (k + 1 < num_attrs && attr_idxs[k + 1] <= i) ++k;
    copy_on_stream(*s, linear_copy(as_ptr(dsts[i]), as_ptr(srcs[i]), sizes[i]), CopyCall::Batch,
                   source_order(attrs[k].srcAccessOrder));
  }
  return CUDA_SUCCESS;
}

// One operand of a 3D batch copy, `elem` bytes per element.
CUresult operand(const CUmemcpy3DOperand& o, const CUextent3D& ext, size_t elem, char** p, size_t* pitch,
                 size_t* slice) {
  if (o.type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
    if (!o.op.ptr.ptr || (o.op.ptr.rowLength && o.op.ptr.rowLength < ext.width) ||
        (o.op.ptr.layerHeight && o.op.ptr.layerHeight < ext.height))
      return CUDA_ERROR_INVALID_VALUE;
    *pitch = (o.op.ptr.rowLength ? o.op.ptr.rowLength : ext.width) * elem;
    *slice = *pitch * (o.op.ptr.layerHeight ? o.op.ptr.layerHeight : ext.height);
    *p = reinterpret_cast<char*>(o.op.ptr.ptr);
    return CUDA_SUCCESS;
  }
  if (o.type != CU_MEMCPY_OPERAND_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  const SimArray* a = find_array(o.op.array.array);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  const CUoffset3D& off = o.op.array.offset;
  if (off.x + ext.width > a->width || off.y + ext.height > a->rows() || off.z + ext.depth > (a->depth ? a->depth : 1))
    return CUDA_ERROR_INVALID_VALUE;
  *pitch = a->row_bytes();
  *slice = a->slice_bytes();
  *p = reinterpret_cast<char*>(a->base) + off.z * *slice + off.y * *pitch + off.x * a->elem_size();
  return CUDA_SUCCESS;
}

CUresult batch_3d(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx, unsigned long long flags, CUstream h,
                  DefaultStream mode) {
  if (fail_idx) *fail_idx = SIZE_MAX;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_batch_stream(h, mode, s)) return r;
  if (!n || !ops || flags) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::pair<CopyShape, SourceOrder>> copies;
  for (size_t i = 0; i < n; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    auto fail = [&] {
      if (fail_idx) *fail_idx = i;
      return CUDA_ERROR_INVALID_VALUE;
    };
    if (!op.extent.width || !op.extent.height || !op.extent.depth || !valid_order(op.srcAccessOrder)) return fail();
    // Element size: 1 between pointers, else the array's (arrays on both sides must agree).
    size_t elem = 1;
    for (const CUmemcpy3DOperand* o : {&op.src, &op.dst}) {
      if (o->type != CU_MEMCPY_OPERAND_TYPE_ARRAY) continue;
      const SimArray* a = find_array(o->op.array.array);
      if (!a) return fail();
      if (elem != 1 && elem != a->elem_size()) return fail();
      elem = a->elem_size();
    }
    CopyShape c;
    char* src = nullptr;
    char* dst = nullptr;
    if (operand(op.src, op.extent, elem, &src, &c.src_pitch, &c.src_slice) ||
        operand(op.dst, op.extent, elem, &dst, &c.dst_pitch, &c.dst_slice))
      return fail();
    c.src = src;
    c.dst = dst;
    c.width = op.extent.width * elem;
    c.height = op.extent.height;
    c.depth = op.extent.depth;
    copies.emplace_back(c, source_order(op.srcAccessOrder));
  }
  for (const auto& [shape, order] : copies) copy_on_stream(*s, shape, CopyCall::Batch, order);
  return CUDA_SUCCESS;
}

}  // namespace

// ---- 1D copies ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), src, n), true, false, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(dst, as_ptr(src), n), false, true, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), true, true, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return checked_copy(linear_copy(as_ptr(dst), as_ptr(src), n), false, false, nullptr, PT, CopyCall::Sync);
}

// ---- 2D and 3D ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s) {
  return copy_2d(p, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* p, CUstream s) {
  return copy_2d(p, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return copy_2d(p, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* p) {
  return copy_2d(p, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  return copy_3d(p, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* p) {
  return copy_3d(p, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream s) {
  return copy_3d(p, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* p, CUstream s) {
  return copy_3d(p, s, PT, CopyCall::Async);
}

// ---- peer ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                               size_t n) {
  return peer_copy(dst, dctx, src, sctx, n, nullptr, L, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                                    size_t n) {
  return peer_copy(dst, dctx, src, sctx, n, nullptr, PT, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                                    size_t n, CUstream s) {
  return peer_copy(dst, dctx, src, sctx, n, s, L, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                                         CUcontext sctx, size_t n, CUstream s) {
  return peer_copy(dst, dctx, src, sctx, n, s, PT, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p) {
  return peer_copy_3d(p, nullptr, L, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* p) {
  return peer_copy_3d(p, nullptr, PT, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return peer_copy_3d(p, s, L, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return peer_copy_3d(p, s, PT, true);
}

// ---- CUDA arrays ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoA_v2(CUarray dst, size_t off, const void* src, size_t n) {
  return array_copy(dst, off, nullptr, nullptr, 0, src, n, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoA_v2_ptds(CUarray dst, size_t off, const void* src, size_t n) {
  return array_copy(dst, off, nullptr, nullptr, 0, src, n, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoH_v2(void* dst, CUarray src, size_t off, size_t n) {
  return array_copy(nullptr, 0, dst, src, off, nullptr, n, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoH_v2_ptds(void* dst, CUarray src, size_t off, size_t n) {
  return array_copy(nullptr, 0, dst, src, off, nullptr, n, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoA_v2(CUarray dst, size_t doff, CUarray src, size_t soff, size_t n) {
  return array_copy(dst, doff, nullptr, src, soff, nullptr, n, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoA_v2_ptds(CUarray dst, size_t doff, CUarray src, size_t soff, size_t n) {
  return array_copy(dst, doff, nullptr, src, soff, nullptr, n, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoA_v2(CUarray dst, size_t off, CUdeviceptr src, size_t n) {
  if (!device_reachable(as_ptr(src))) return CUDA_ERROR_INVALID_VALUE;
  return array_copy(dst, off, nullptr, nullptr, 0, as_ptr(src), n, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyDtoA_v2_ptds(CUarray dst, size_t off, CUdeviceptr src, size_t n) {
  if (!device_reachable(as_ptr(src))) return CUDA_ERROR_INVALID_VALUE;
  return array_copy(dst, off, nullptr, nullptr, 0, as_ptr(src), n, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t off, size_t n) {
  if (!device_reachable(as_ptr(dst))) return CUDA_ERROR_INVALID_VALUE;
  return array_copy(nullptr, 0, as_ptr(dst), src, off, nullptr, n, nullptr, L, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, CUarray src, size_t off, size_t n) {
  if (!device_reachable(as_ptr(dst))) return CUDA_ERROR_INVALID_VALUE;
  return array_copy(nullptr, 0, as_ptr(dst), src, off, nullptr, n, nullptr, PT, CopyCall::Sync);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoAAsync_v2(CUarray dst, size_t off, const void* src, size_t n, CUstream s) {
  return array_copy(dst, off, nullptr, nullptr, 0, src, n, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyHtoAAsync_v2_ptsz(CUarray dst, size_t off, const void* src, size_t n,
                                                            CUstream s) {
  return array_copy(dst, off, nullptr, nullptr, 0, src, n, s, PT, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t off, size_t n, CUstream s) {
  return array_copy(nullptr, 0, dst, src, off, nullptr, n, s, L, CopyCall::Async);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyAtoHAsync_v2_ptsz(void* dst, CUarray src, size_t off, size_t n, CUstream s) {
  return array_copy(nullptr, 0, dst, src, off, nullptr, n, s, PT, CopyCall::Async);
}

// ---- batches ----
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                                        size_t count, CUmemcpyAttributes* attrs, size_t* idxs,
                                                        size_t num_attrs, CUstream s) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, nullptr, s, L);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                                             size_t count, CUmemcpyAttributes* attrs, size_t* idxs,
                                                             size_t num_attrs, CUstream s) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, nullptr, s, PT);
}
// CUDA 12.8 form, with failIdx (PFN_cuMemcpyBatchAsync_v12080).
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                                     CUmemcpyAttributes* attrs, size_t* idxs, size_t num_attrs,
                                                     size_t* fail_idx, CUstream s) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, fail_idx, s, L);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                                          size_t count, CUmemcpyAttributes* attrs, size_t* idxs,
                                                          size_t num_attrs, size_t* fail_idx, CUstream s) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, fail_idx, s, PT);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops,
                                                          unsigned long long flags, CUstream s) {
  return batch_3d(n, ops, nullptr, flags, s, L);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops,
                                                               unsigned long long flags, CUstream s) {
  return batch_3d(n, ops, nullptr, flags, s, PT);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
                                                       unsigned long long flags, CUstream s) {
  return batch_3d(n, ops, fail_idx, flags, s, L);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
                                                            unsigned long long flags, CUstream s) {
  return batch_3d(n, ops, fail_idx, flags, s, PT);
}

// ---- memsets ----
#define AW_MEMSET(NAME, T, CALL, MODE)                                               \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, T v, size_t n) {           \
    return memset_2d<T>(dst, n * sizeof(T), v, n, 1, nullptr, MODE, CopyCall::CALL); \
  }
#define AW_MEMSET_ASYNC(NAME, T, MODE)                                                 \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, T v, size_t n, CUstream s) { \
    return memset_2d<T>(dst, n * sizeof(T), v, n, 1, s, MODE, CopyCall::Async);        \
  }
#define AW_MEMSET_2D(NAME, T, CALL, MODE)                                                          \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h) { \
    return memset_2d<T>(dst, pitch, v, w, h, nullptr, MODE, CopyCall::CALL);                       \
  }
#define AW_MEMSET_2D_ASYNC(NAME, T, MODE)                                                                      \
  AW_DRIVER_EXPORT CUresult CUDAAPI NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h, CUstream s) { \
    return memset_2d<T>(dst, pitch, v, w, h, s, MODE, CopyCall::Async);                                        \
  }
// The eight entry points of one element size: 1D and 2D, synchronous and asynchronous, each with
// the legacy and the per-thread default stream.
#define AW_MEMSETS(BITS, T)                              \
  AW_MEMSET(cuMemsetD##BITS##_v2, T, Sync, L)            \
  AW_MEMSET(cuMemsetD##BITS##_v2_ptds, T, Sync, PT)      \
  AW_MEMSET_ASYNC(cuMemsetD##BITS##Async, T, L)          \
  AW_MEMSET_ASYNC(cuMemsetD##BITS##Async_ptsz, T, PT)    \
  AW_MEMSET_2D(cuMemsetD2D##BITS##_v2, T, Sync, L)       \
  AW_MEMSET_2D(cuMemsetD2D##BITS##_v2_ptds, T, Sync, PT) \
  AW_MEMSET_2D_ASYNC(cuMemsetD2D##BITS##Async, T, L)     \
  AW_MEMSET_2D_ASYNC(cuMemsetD2D##BITS##Async_ptsz, T, PT)
AW_MEMSETS(8, unsigned char)
AW_MEMSETS(16, unsigned short)
AW_MEMSETS(32, unsigned int)
