#include "arrays.h"

#include <map>
#include <memory>
#include <mutex>

#include "driver_state.h"
#include "memory_registry.h"

namespace aw_sim {
namespace {
std::mutex& arrays_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::map<const void*, std::unique_ptr<SimArray>>& arrays() {
  static auto* a = new std::map<const void*, std::unique_ptr<SimArray>>();
  return *a;
}
}  // namespace

size_t format_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

size_t SimArray::elem_size() const { return format_bytes(format) * channels; }

CUresult create_array(const CUDA_ARRAY3D_DESCRIPTOR& d, CUarray* out) {
  if (CUresult r = check_context()) return r;
  if (!out || d.Width == 0 || (d.Depth && !d.Height)) return CUDA_ERROR_INVALID_VALUE;
  if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4) return CUDA_ERROR_INVALID_VALUE;
  if (!format_bytes(d.Format)) return unsupported("a CUDA array of this format");
  auto a = std::make_unique<SimArray>();
  a->width = d.Width;
  a->height = d.Height;
  a->depth = d.Depth;
  a->format = d.Format;
  a->channels = d.NumChannels;
  a->flags = d.Flags;
  a->device = current()->ordinal;
  void* p = allocate_backing(a->bytes());
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  a->base = reinterpret_cast<CUdeviceptr>(p);
  Allocation entry;
  entry.base = a->base;
  entry.size = a->bytes();
  entry.kind = MemoryKind::Device;
  entry.buffer_id = memory_registry().next_buffer_id();
  entry.device = a->device;
  entry.is_array = true;
  memory_registry().add(entry);
  std::lock_guard<std::mutex> lock(arrays_mutex());
  *out = reinterpret_cast<CUarray>(a.get());
  arrays()[a.get()] = std::move(a);
  return CUDA_SUCCESS;
}

CUresult destroy_array(CUarray h) {
  if (CUresult r = check_context()) return r;
  std::unique_ptr<SimArray> a;
  {
    std::lock_guard<std::mutex> lock(arrays_mutex());
    auto it = arrays().find(h);
    if (it == arrays().end()) return CUDA_ERROR_INVALID_HANDLE;
    a = std::move(it->second);
    arrays().erase(it);
  }
  synchronize_all_devices();  // as cuMemFree: no queued copy may touch it afterwards
  if (auto entry = memory_registry().remove(a->base)) free_backing(*entry);
  return CUDA_SUCCESS;
}

const SimArray* find_array(CUarray h) {
  std::lock_guard<std::mutex> lock(arrays_mutex());
  auto it = arrays().find(h);
  return it == arrays().end() ? nullptr : it->second.get();
}

}  // namespace aw_sim

// ---- entry points ----
#include "exports.h"

using aw_sim::SimArray;

AW_DRIVER_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  return aw_sim::create_array(*d, out);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = d->Width;
  d3.Height = d->Height;
  d3.Format = d->Format;
  d3.NumChannels = d->NumChannels;
  return aw_sim::create_array(d3, out);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray a) {
  const SimArray* arr = aw_sim::find_array(a);
  if (!arr) return CUDA_ERROR_INVALID_HANDLE;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  out->Width = arr->width;
  out->Height = arr->height;
  out->Depth = arr->depth;
  out->Format = arr->format;
  out->NumChannels = arr->channels;
  out->Flags = arr->flags;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* out, CUarray a) {
  const SimArray* arr = aw_sim::find_array(a);
  if (!arr) return CUDA_ERROR_INVALID_HANDLE;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  out->Width = arr->width;
  out->Height = arr->height;
  out->Format = arr->format;
  out->NumChannels = arr->channels;
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray a) { return aw_sim::destroy_array(a); }
