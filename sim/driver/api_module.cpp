// Modules/libraries, kernel handles and names, and kernel launch (cuLaunchKernel, the launch-config
// form cuLaunchKernelEx, cuLaunchCooperativeKernel: the same stream-ordered work to the simulator).
#include "driver_state.h"
#include "exports.h"
#include "graph.h"
#include "host_wait.h"
#include "kernel_model.h"
#include "sim_config.h"

using namespace aw_sim;

namespace {

// Libraries (cuLibrary*, CUDA 12) are context-independent: loading one needs cuInit only.
CUresult load_module(void** out, const void* image, bool needs_context) {
  if (CUresult r = needs_context ? check_context() : (driver_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED))
    return r;
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  // Kernels are created by name on request; the image is read only for first-parameter sizes.
  *out = create_module(image);
  return CUDA_SUCCESS;
}

CUresult get_function(void** out, void* module, const char* name, bool needs_context) {
  if (CUresult r = needs_context ? check_context() : (driver_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED))
    return r;
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!is_module(module)) return CUDA_ERROR_INVALID_HANDLE;
  *out = static_cast<SimModule*>(module)->get_or_create(name);
  return CUDA_SUCCESS;
}

CUresult function_name(const char** name, const void* f) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (!is_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  *name = static_cast<const SimFunction*>(f)->mangled_name.c_str();
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, CUstream h,
                void** params, void** extra, DefaultStream mode) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolve_stream(h, mode, s)) return r;
  if (!is_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  // A launch fails if the stream does not belong to the current device (CUDA programming guide).
  if (s->device() != current()->ordinal) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<uint64_t>(bx) * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (extra && extra[0] != CU_LAUNCH_PARAM_END) return unsupported("cuLaunchKernel with 'extra' parameters");
  auto* fn = reinterpret_cast<SimFunction*>(f);
  // Lazy loading: the first launch of each kernel loads it, blocking the launching thread.
  ensure_loaded(*fn);
  if (s->capture()) {
    NodeParams p;
    p.kind = NodeKind::Kernel;
    p.device = s->device();
    p.function = fn;
    p.grid[0] = gx, p.grid[1] = gy, p.grid[2] = gz;
    p.block[0] = bx, p.block[1] = by, p.block[2] = bz;
    p.duration_ns = kernel_duration_ns(*fn, params);
    CUresult status = CUDA_SUCCESS;
    if (capture_node(*s, p, &status)) return status;
  }
  StreamOp op;
  op.what = "kernel " + fn->mangled_name;
  op.duration_ns = kernel_duration_ns(*fn, params);
  const uint64_t seq = s->enqueue(std::move(op));
  if (config().launch_blocking) s->host_wait(seq);
  return CUDA_SUCCESS;
}

}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* m, const void* image) {
  return load_module(reinterpret_cast<void**>(m), image, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned int, CUjit_option*,
                                                     void**) {
  return load_module(reinterpret_cast<void**>(m), image, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* m, const void* image) {
  return load_module(reinterpret_cast<void**>(m), image, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  if (CUresult r = check_context()) return r;
  return destroy_module(reinterpret_cast<SimModule*>(m)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  return get_function(reinterpret_cast<void**>(f), m, name, true);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option*, void**,
                                                    unsigned int, CUlibraryOption*, void**, unsigned int) {
  return load_module(reinterpret_cast<void**>(lib), code, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary lib) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return destroy_module(reinterpret_cast<SimModule*>(lib)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  return get_function(reinterpret_cast<void**>(k), lib, name, false);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule* m, CUlibrary lib) {
  if (!m || !is_module(lib)) return CUDA_ERROR_INVALID_HANDLE;
  *m = reinterpret_cast<CUmodule>(lib);
  return CUDA_SUCCESS;
}
// In the simulator a CUkernel and its CUfunction are the same object.
AW_DRIVER_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction* f, CUkernel k) {
  if (CUresult r = check_context()) return r;
  if (!f) return CUDA_ERROR_INVALID_VALUE;
  if (!is_function(k)) return CUDA_ERROR_INVALID_HANDLE;
  *f = reinterpret_cast<CUfunction>(k);
  return CUDA_SUCCESS;
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction f) { return function_name(name, f); }
AW_DRIVER_EXPORT CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel k) { return function_name(name, k); }

AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                 unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                                                 CUstream s, void** params, void** extra) {
  return launch(f, gx, gy, gz, bx, by, bz, s, params, extra, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                      unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                                                      CUstream s, void** params, void** extra) {
  return launch(f, gx, gy, gz, bx, by, bz, s, params, extra, DefaultStream::PerThread);
}

namespace {
// cuLaunchKernelEx: the configuration's grid, block and stream. Attributes change how the kernel
// runs on a GPU (clusters, priority, programmatic serialization), not when the host returns: accepted
// and not modelled; a configuration with attributes but no array is invalid.
CUresult launch_ex(const CUlaunchConfig* c, CUfunction f, void** params, void** extra, DefaultStream mode) {
  if (!c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->hStream, params,
                extra, mode);
}
}  // namespace

AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                                   void** extra) {
  return launch_ex(config, f, params, extra, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                                        void** extra) {
  return launch_ex(config, f, params, extra, DefaultStream::PerThread);
}
// A cooperative launch: all blocks resident at once on a GPU (a grid-wide sync needs it); to the host,
// an ordinary stream-ordered launch.
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                            unsigned int gz, unsigned int bx, unsigned int by,
                                                            unsigned int bz, unsigned int, CUstream s, void** params) {
  return launch(f, gx, gy, gz, bx, by, bz, s, params, nullptr, DefaultStream::Legacy);
}
AW_DRIVER_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                                 unsigned int gz, unsigned int bx, unsigned int by,
                                                                 unsigned int bz, unsigned int, CUstream s,
                                                                 void** params) {
  return launch(f, gx, gy, gz, bx, by, bz, s, params, nullptr, DefaultStream::PerThread);
}
