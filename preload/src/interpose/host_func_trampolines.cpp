#include "host_func_trampolines.h"

#include <atomic>
#include <cstdlib>

#include "capture_range.h"
#include "common.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::calls {

namespace {

std::atomic<uint64_t> g_next_callback_id{1};

// Not a call of the application: written when recording (also while the trace is still being
// created for the call that enqueued the function: the write waits for it), never counted as lost.
void write_run(uint64_t id, uint64_t start, uint64_t end) noexcept {
  if (capture::paused_quiet() || !trace_writer::is_active_or_opening()) return;
  trace::HostFuncRunRecord r{};
  r.h.type = static_cast<uint16_t>(trace::RecordType::HostFuncRun);
  r.h.size = sizeof r;
  r.callback_id = id;
  r.start_ns = start;
  r.end_ns = end;
  thread_buffer::write(&r);
}

}  // namespace

uint64_t next_callback_id() noexcept { return g_next_callback_id.fetch_add(1, std::memory_order_relaxed); }

void host_fn_trampoline(void* p) noexcept {
  auto* ctx = static_cast<HostFuncContext*>(p);
  uint64_t start = now_ns();
  ctx->user_fn(ctx->user_data);
  uint64_t end = now_ns();
  ErrnoKeeper keep;
  write_run(ctx->callback_id, start, end);
  free(ctx);  // a host function enqueued outside capture runs exactly once
}

void stream_callback_trampoline(cuda::CUstream s, cuda::CUresult status, void* p) noexcept {
  auto* ctx = static_cast<HostFuncContext*>(p);
  uint64_t start = now_ns();
  ctx->user_callback(s, status, ctx->user_data);  // the status argument passes through unchanged
  uint64_t end = now_ns();
  ErrnoKeeper keep;
  write_run(ctx->callback_id, start, end);
  free(ctx);
}

}  // namespace asyncwatch::calls
