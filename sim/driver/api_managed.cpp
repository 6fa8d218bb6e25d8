// Managed memory: prefetch, advice and stream attachment. The simulator's managed memory is host
// memory that copies treat as pinned; what matters here is who waits:
//  - a prefetch, to a device or to the host, is queued on the stream (bytes at the device copy
//    bandwidth) and the call returns at once, as documented ("asynchronous with respect to the
//    host"); on the H200 a prefetch to the host returned in 0.007-0.016 ms behind a 101 ms kernel
//    (docs/simulator.md, "Checked on a GPU");
//  - cuStreamAttachMemAsync is queued and never blocks; cuMemAdvise only validates.
#include <cstdint>

#include "copy_engine.h"
#include "driver_state.h"
#include "exports.h"
#include "memory_registry.h"
#include "sim_config.h"

using namespace aw_sim;

namespace {

// The managed allocation that holds [p, p + n).
bool managed_range(CUdeviceptr p, size_t n, Allocation* out) {
  auto a = memory_registry().find(p);
  if (!a || a->kind != MemoryKind::Managed || p + n > a->base + a->size) return false;
  *out = *a;
  return true;
}

// Prefetch of [p, p + n) to `device` (CU_DEVICE_CPU: the host).
CUresult prefetch(CUdeviceptr p, size_t n, int device, CUstream h, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  Allocation a;
  if (!n || !managed_range(p, n, &a)) return CUDA_ERROR_INVALID_VALUE;
  if (device != CU_DEVICE_CPU && !primary_context(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (s->capture()) return unsupported("cuMemPrefetchAsync into a capturing stream");
  StreamOp op;
  op.what = device == CU_DEVICE_CPU ? "prefetch to host" : "prefetch to device";
  op.duration_ns = device_copy_ns(n);
  op.body = [base = a.base, device] {
    memory_registry().update(base, [&](Allocation& entry) { entry.managed_location = device; });
  };
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

CUresult location_to_device(const CUmemLocation& loc, int* device) {
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: *device = loc.id; return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: *device = CU_DEVICE_CPU; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult prefetch_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream h, DefaultStream mode) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;  // "flags for future use, must be zero now"
  int device = 0;
  if (CUresult r = location_to_device(loc, &device)) return r;
  return prefetch(p, n, device, h, mode);
}

CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, int device) {
  if (CUresult r = check_context()) return r;
  Allocation a;
  if (!n || !managed_range(p, n, &a)) return CUDA_ERROR_INVALID_VALUE;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  if (device != CU_DEVICE_CPU && !primary_context(device)) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;  // advice changes placement policy only; the simulator does not migrate pages
}

CUresult attach(CUstream h, CUdeviceptr p, size_t n, unsigned flags, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  Allocation a;
  if (!managed_range(p, n ? n : 1, &a) || (n == 0 && p != a.base)) return CUDA_ERROR_INVALID_VALUE;
  if (flags == CU_MEM_ATTACH_SINGLE && s->kind() == Stream::Kind::Legacy) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture()) return unsupported("cuStreamAttachMemAsync on a capturing stream");
  // The association takes effect when the stream reaches it.
  StreamOp op;
  op.what = "attach managed memory";
  op.body = [base = a.base, flags] {
    memory_registry().update(base, [&](Allocation& entry) { entry.attach_flags = flags; });
  };
  s->enqueue(std::move(op));
  return CUDA_SUCCESS;
}

}  // namespace

// CUDA 8 form (PFN_cuMemPrefetchAsync_v8000): a device ordinal or CU_DEVICE_CPU.
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
  return prefetch(p, n, dst, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
  return prefetch(p, n, dst, s, DefaultStream::PerThread);
}
// CUDA 12.2+ form (the one cuda.h 13.0 declares as cuMemPrefetchAsync).
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags,
                                                        CUstream s) {
  return prefetch_v2(p, n, loc, flags, s, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc,
                                                             unsigned int flags, CUstream s) {
  return prefetch_v2(p, n, loc, flags, s, DefaultStream::PerThread);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev) {
  return advise(p, n, advice, dev);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc) {
  int device = 0;
  if (CUresult r = location_to_device(loc, &device)) return r;
  return advise(p, n, advice, device);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
  return attach(s, p, n, flags, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
  return attach(s, p, n, flags, DefaultStream::PerThread);
}
