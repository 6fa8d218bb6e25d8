// Wrappers of kernel launches, graph launches and host functions. Launches are cheap and
// frequent: no classification, no evidence; a stack only when the launch blocked longer than
// ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US (captured after the call: the frames are the same).
#include <cstdlib>

#include "call_context.h"
#include "traced_call.h"
#include "gpu_times/gpu_times.h"
#include "cuda_abi.h"
#include "hook_table.h"
#include "real_functions.h"

using namespace asyncwatch;
using namespace asyncwatch::cuda;
using asyncwatch::hooks::Hook;

namespace {

struct LaunchShape {
  CUfunction f;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  CUstream stream;
  bool has_function;
};

// ASYNCWATCH_GPU_TIMES: the start event recorded before the call (`*gpu`, its token); nothing
// to do (wanted() false) when GPU times are off.
struct GpuTimesBefore {
  Hook h;
  CUstream stream;
  uint32_t* gpu;
  bool wanted() const noexcept { return gpu_times::enabled(); }
  void operator()() const noexcept {
    if (gpu_times::enabled()) *gpu = gpu_times::before(stream, hooks::info(h).per_thread);
  }
};

// The record's body that the launch's arguments give (all but the capture and GPU-times parts),
// with its kernel's name id and whether this is the kernel's first launch; `dims(i)`: grid x, y, z
// for i = 0..2, block x, y, z for 3..5.
template <class Dims>
inline __attribute__((always_inline)) void fill_shape(calls::AnyRecord& rec, bool per_thread, CUstream stream,
                                                      unsigned shared, bool has_function, uint32_t name_id, bool first,
                                                      CUgraphExec exec, const Dims& dims) noexcept {
  auto& l = rec.Launch;
  l.stream_kind = static_cast<uint8_t>(calls::stream_kind(stream, per_thread));
  l.flags |= (per_thread ? trace::kFlagPerThreadEntry : 0u) | (first ? trace::kFlagFirstLaunch : 0u);
  if (has_function) l.kernel_name_id = name_id;
  l.shared_mem_bytes = shared;
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = dims(i);
    l.block[i] = dims(3 + i);
  }
  l.stream = reinterpret_cast<uint64_t>(stream);
  // A graph launch's record (cudaGraphLaunch's too, adopted) names the executable graph, which the
  // analyzer joins with the graph's memcpy nodes (GraphOp records).
  if (rec.h.type == static_cast<uint16_t>(trace::RecordType::GraphLaunch))
    rec.GraphLaunch.exec = reinterpret_cast<uint64_t>(exec);
}

template <class C, class Call>
CUresult traced_launch(C caller, Hook h, const LaunchShape& shape, Call&& call, CUgraphExec exec = nullptr,
                       calls::Category cat = calls::Category::Launch) {
  uint32_t gpu = 0;  // ASYNCWATCH_GPU_TIMES: the token of the start event recorded before the call
  GpuTimesBefore timed{h, shape.stream, &gpu};
  return calls::traced_with(
      caller, h, cat, timed, call, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {
        bool first = false;
        const uint32_t name_id = shape.has_function ? calls::kernel_name_id(shape.f, &first) : 0;
        fill_shape(rec, hi.per_thread, shape.stream, shape.shared, shape.has_function, name_id, first, exec,
                   [&](int i) { return i < 3 ? shape.grid[i] : shape.block[i - 3]; });
        auto& l = rec.Launch;
        if (calls::stream_is_capturing(shape.stream)) l.flags |= trace::kFlagCaptureActive;
        if (gpu && gpu_times::after(gpu, r, shape.stream, hi.per_thread, trace::GpuOp::Kernel, l.stream_kind))
          l.flags |= trace::kFlagGpuTimed;
      });
}

#if AW_ENTRY_STUBS
// cuLaunchKernel's prefill step (hook_entry.h, AW_PREFILLED_DRIVER_HOOKS): the in-runtime body's
// work done before the call, when nothing of it needs the call's result or may call out: no GPU
// times, no capture active, the runtime call's record this launch's to fill and of this trace, the
// device's record written, the kernel's name cached; else `full` with nothing changed. The record
// (in flight, or pending) is completed by the runtime wrapper. No errno to keep: nothing here calls out but the deferred signals' delivery,
// which keeps it itself.
template <Hook H>
inline void* prefill_launch(const calls::StubArgs& a, void* full) noexcept {
  calls::ThreadCallState& st = calls::thread_state();
  void* const real = real::g_real[static_cast<size_t>(H)].load(std::memory_order_acquire);
  const Config* cfg = g_config.load(std::memory_order_acquire);
  const auto f = a.get<CUfunction>(0);
  const uint32_t gen = trace_writer::generation();
  uint32_t name_id;
  if (AW_UNLIKELY(!calls::prefill_possible(st, real, cfg, calls::Category::Launch, gen) ||
                  !calls::kernel_name_cached(f, gen, &name_id)))
    return full;
  // (f, gx, gy, gz, bx, by, bz, shared, st, params, extra)
  return calls::prefill_record(st, H, [&](calls::AnyRecord& rec, const hooks::HookInfo& hi) {
    fill_shape(rec, hi.per_thread, a.get<CUstream>(8), a.get<unsigned>(7), true, name_id, false, nullptr,
               [&](int i) { return a.get<unsigned>(1 + i); });
  });
}
#endif

}  // namespace

// (The prefilled wrappers, AW_PREFILLED_DRIVER_HOOKS.)
#define DEF_LAUNCH_PREFILLED(sym)                                  \
  AW_DRIVER_HOOK_PREFILLED(                                        \
      sym, (f, gx, gy, gz, bx, by, bz, shared, st, params, extra), \
      return traced_launch(aw_caller, Hook::sym, LaunchShape{f, {gx, gy, gz}, {bx, by, bz}, shared, st, true}, call);)
#if AW_ENTRY_STUBS
#define DEF_PREFILL(sym)                                                                                       \
  extern "C" __attribute__((visibility("hidden"))) void* aw_prefill_##sym(const calls::StubArgs* a) noexcept { \
    return prefill_launch<Hook::sym>(*a, reinterpret_cast<void*>(&aw_inrt_full_##sym));                        \
  }
#else
#define DEF_PREFILL(sym)
#endif
DEF_LAUNCH_PREFILLED(cuLaunchKernel)
DEF_PREFILL(cuLaunchKernel)
DEF_LAUNCH_PREFILLED(cuLaunchKernel_ptsz)
DEF_PREFILL(cuLaunchKernel_ptsz)

#define DEF_LAUNCH_COOP(sym)                                \
  AW_DRIVER_HOOK(                                           \
      sym, (f, gx, gy, gz, bx, by, bz, shared, st, params), \
      return traced_launch(aw_caller, Hook::sym, LaunchShape{f, {gx, gy, gz}, {bx, by, bz}, shared, st, true}, call);)
DEF_LAUNCH_COOP(cuLaunchCooperativeKernel)
DEF_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)

#define DEF_LAUNCH_EX(sym)                                                                                   \
  AW_DRIVER_HOOK(                                                                                            \
      sym, (cfg, f, params, extra), LaunchShape shape{f, {0, 0, 0}, {0, 0, 0}, 0, nullptr, true}; if (cfg) { \
        shape = LaunchShape{f,                                                                               \
                            {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ},                                   \
                            {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ},                                \
                            cfg->sharedMemBytes,                                                             \
                            cfg->hStream,                                                                    \
                            true};                                                                           \
      } return traced_launch(aw_caller, Hook::sym, shape, call);)
DEF_LAUNCH_EX(cuLaunchKernelEx)
DEF_LAUNCH_EX(cuLaunchKernelEx_ptsz)

#define DEF_GRAPH_LAUNCH(sym)                                                                                         \
  AW_DRIVER_HOOK(sym, (g, st),                                                                                        \
                 return traced_launch(aw_caller, Hook::sym, LaunchShape{nullptr, {0, 0, 0}, {0, 0, 0}, 0, st, false}, \
                                      call, g, calls::Category::GraphLaunch);)
DEF_GRAPH_LAUNCH(cuGraphLaunch)
DEF_GRAPH_LAUNCH(cuGraphLaunch_ptsz)

// ---- host functions ------------------------------------------------------------------------
namespace {

// `enqueue(ctx)` calls the real entry point with our trampoline and `ctx`, or with the user's
// function and data when `ctx` is null.
template <class C, class Enqueue>
CUresult traced_host_func(C caller, Hook h, CUstream st, CUhostFn user_fn, CUstreamCallback user_cb, void* user_data,
                          Enqueue&& enqueue) {
  calls::HostFuncContext* ctx = nullptr;
  bool capturing = false;
  uint64_t id = 0;
  uint32_t gpu = 0;  // ASYNCWATCH_GPU_TIMES: the token of the start event recorded before the call
  return calls::traced_with(
      caller, h, calls::Category::HostFuncEnqueue,
      [&]() noexcept {
        // A reentrant call (a signal handler's) allocates nothing: the user's function passes through.
        if (calls::thread_state().reentrant) return;
        // During capture the host node may run many times (each graph launch) or never: pass the
        // user's function through unchanged rather than a wrapper context that is freed after one run.
        capturing = calls::stream_is_capturing(st);
        if (!capturing && (user_fn || user_cb)) {
          ctx = static_cast<calls::HostFuncContext*>(malloc(sizeof(calls::HostFuncContext)));
          if (ctx) *ctx = calls::HostFuncContext{user_fn, user_cb, user_data, calls::next_callback_id()};
        }
        // Read before the enqueue: once the driver has the context, its thread may run the host
        // function and free the context (host_fn_trampoline) before the enqueue even returns here.
        id = ctx ? ctx->callback_id : 0;
        if (!capturing && gpu_times::enabled()) gpu = gpu_times::before(st, hooks::info(h).per_thread);
      },
      [&] { return enqueue(ctx); },
      [&](calls::AnyRecord& rec, const hooks::HookInfo& hi, CUresult r) AW_FILL {
        if (r != CUDA_SUCCESS && ctx) free(ctx);  // the driver will never call it
        auto& e = rec.HostFuncEnqueue;
        e.stream_kind = static_cast<uint8_t>(calls::stream_kind(st, hi.per_thread));
        e.flags |= (hi.per_thread ? trace::kFlagPerThreadEntry : 0u) | (capturing ? trace::kFlagCaptureActive : 0u);
        e.callback_id = id;
        e.stream = reinterpret_cast<uint64_t>(st);
        e.user_function = user_fn ? reinterpret_cast<uint64_t>(user_fn) : reinterpret_cast<uint64_t>(user_cb);
        if (gpu && gpu_times::after(gpu, r, st, hi.per_thread, trace::GpuOp::HostFunction, e.stream_kind))
          e.flags |= trace::kFlagGpuTimed;
      });
}

}  // namespace

#define DEF_LAUNCH_HOST_FUNC(sym)                                                                             \
  AW_DRIVER_HOOK(                                                                                             \
      sym, (st, fn, data),                                                                                    \
      return traced_host_func(aw_caller, Hook::sym, st, fn, nullptr, data, [&](calls::HostFuncContext* ctx) { \
        return ctx ? real(st, &calls::host_fn_trampoline, ctx) : call();                                      \
      });)
DEF_LAUNCH_HOST_FUNC(cuLaunchHostFunc)
DEF_LAUNCH_HOST_FUNC(cuLaunchHostFunc_ptsz)

#define DEF_ADD_CALLBACK(sym)                                                                                 \
  AW_DRIVER_HOOK(                                                                                             \
      sym, (st, cb, data, flags),                                                                             \
      return traced_host_func(aw_caller, Hook::sym, st, nullptr, cb, data, [&](calls::HostFuncContext* ctx) { \
        return ctx ? real(st, &calls::stream_callback_trampoline, ctx, flags) : call();                       \
      });)
DEF_ADD_CALLBACK(cuStreamAddCallback)
DEF_ADD_CALLBACK(cuStreamAddCallback_ptsz)
