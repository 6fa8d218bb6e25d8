// blocking-launch: a kernel launch that blocked the host. Causes, in order of precedence:
// context-init (the process's first call: the runtime created the context in it),
// launch-blocking-env (CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel),
// graph-host-memcpy (a graph launch whose graph holds a memcpy node with pageable host memory: the
// launch waits as the same copy made with cudaMemcpyAsync would; the node and its origin are named),
// first-launch (kFlagFirstLaunch: the module was loaded lazily at the first launch),
// launch-queue-full (at least options.launch_queue_depth launches outstanding on the stream
// since it was last known idle), host-function-running / other-thread-call (a host function's run
// on the driver's thread, or another thread's CUDA call, covered at least half of the wait:
// events/concurrent_calls.h; the trace shows the calls, not the driver's locks), unknown.
#include "events/streams.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "symbols/names.h"
#include "read/trace_reader.h"  // is_driver_api
#include "findings/rules.h"

#include <algorithm>
#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

using namespace trace;

namespace {

constexpr uint32_t kGraphKernelId = events::StreamTable::kGraphKernel;  // "(CUDA graph)"

// "file.cu:42" (the file's last component), else the function.
std::string site_words(const Frame& f) {
  if (f.file.empty()) return f.function.empty() ? "an unknown site" : f.function;
  size_t slash = f.file.rfind('/');
  std::string file = slash == std::string::npos ? f.file : f.file.substr(slash + 1);
  return f.has_line() ? fmt::format(FMT_COMPILE("{}:{}"), file, f.line) : file;  // line 0: merged code
}

bool detect(RuleContext& ctx, const RuleEvent& e) {
  const LaunchRecord& l = *e.launch;
  const StreamState& stream = *e.stream;
  const Options& opt = ctx.options();
  Observation o = observation_of(FindingId::BlockingLaunch, l);
  if (o.blocked_ns < opt.min_blocked_ns) return false;  // (threshold_first: the analysis skips these)
  ObservationRare rare;
  o.rare = &rare;
  if (e.first_call) {
    o.cause = Cause::ContextInit;
    // A runtime call creates the context inside itself; a driver entry point (the static runtime,
    // which asyncwatch sees only at the driver) runs after the creation, which the trace lacks.
    rare.context_creation_visible = !is_driver_api(static_cast<Api>(l.api));
  } else if (ctx.launch_blocking_env())
    o.cause = Cause::LaunchBlockingEnv;
  else if (e.graph && e.graph->pageable_nodes)
    o.cause = Cause::GraphHostMemcpy;
  else if (e.graph && e.graph->first_launch)
    o.cause = Cause::GraphUpload;
  else if (e.graph && e.graph->memory_nodes)
    o.cause = Cause::GraphMemoryNodes;
  else if (l.flags & kFlagFirstLaunch)
    o.cause = Cause::FirstLaunch;
  else if (stream.launches_since_sync >= opt.launch_queue_depth)
    o.cause = Cause::LaunchQueueFull;
  else if (e.concurrent) {
    o.cause = e.concurrent->host_function ? Cause::HostFunctionRunning : Cause::OtherThreadCall;
    rare.concurrent = *e.concurrent;
  } else
    o.cause = Cause::Unknown;
  o.kernel_name_id = l.kernel_name_id;
  if (e.graph) {
    // A graph launch names the kernel captured into it when the trace shows one, else "a CUDA graph".
    o.kernel_name_id = e.graph->kernel_name_id ? e.graph->kernel_name_id : kGraphKernelId;
    rare.graph_pageable_nodes = e.graph->pageable_nodes;
    rare.graph_node = e.graph->first_pageable;
    rare.graph_memory_nodes = e.graph->memory_nodes;
  }
  rare.outstanding_launches = stream.launches_since_sync;
  // Loading the module lazily waits for the work pending on the device (a pinned upload still
  // running): the first launch names it.
  if (o.cause == Cause::FirstLaunch && e.pending && !e.pending->empty()) {
    o.waited_for = &e.pending->kernels;
    rare.pending_copies = e.pending->copies;
    rare.pending_copy_bytes = e.pending->copy_bytes;
  }
  ctx.observe(o);
  return true;
}

// ", and loading it waited for the work pending on the device: 1 copy (2.0 GiB) and kernel k x3
// not known complete when the launch was called", "" when none was pending.
std::string pending_words(const Finding& f) {
  if (!f.pending_copies && f.waited_for.empty()) return {};
  std::vector<std::string> parts;
  if (f.pending_copies)
    parts.push_back(fmt::format(FMT_COMPILE("{} ({})"),
                                plural(f.pending_copies, "asynchronous copy", "asynchronous copies"),
                                format_bytes(f.pending_copy_bytes)));
  if (!f.waited_for.empty()) {
    std::vector<std::pair<std::string, uint64_t>> k = most_first(f.waited_for);
    std::string ks = k.size() == 1 ? "kernel " : "kernels ";
    for (size_t i = 0; i < k.size() && i < 4; ++i) {
      if (i) ks += ", ";
      ks += shorten_middle(k[i].first, kDisplayNameMax);
      if (k[i].second > 1) ks += fmt::format(FMT_COMPILE(" x{}"), k[i].second);
    }
    if (k.size() > 4) ks += fmt::format(FMT_COMPILE(" and {} more"), k.size() - 4);
    parts.push_back(ks);
  }
  return fmt::format(FMT_COMPILE(", and loading it waited for the work pending on the device: {} not known complete "
                                 "when the launch was called"),
                     parts.size() == 2 ? parts[0] + " and " + parts[1] : parts[0]);
}

// "graph" or "graph of kernel K" (never "kernel (unnamed kernel)" for a graph).
std::string graph_words(const Finding& f) {
  if (f.kernel.empty() || f.kernel == "(CUDA graph)" || f.kernel == "(unnamed kernel)") return "graph";
  return "graph of kernel " + shorten_middle(f.kernel, kDisplayNameMax);
}

std::string graph_node_words(const Finding& f) {
  const GraphMemcpyNodeInfo& node = f.graph_node();
  std::string dir = node.direction == Direction::DtoH   ? " device-to-host into"
                    : node.direction == Direction::HtoD ? " host-to-device from"
                                                        : " with";
  std::string origin = node.captured ? "captured from " + node.api : "added by " + node.api;
  if (node.site_known) origin += " at " + site_words(node.site);
  std::string more = f.graph_pageable_nodes > 1
                         ? fmt::format(FMT_COMPILE(" (and {} more such node{})"), f.graph_pageable_nodes - 1,
                                       f.graph_pageable_nodes == 2 ? "" : "s")
                         : "";
  return fmt::format(FMT_COMPILE("its memcpy node copying {}{} pageable host memory, {}{}"), format_bytes(node.bytes),
                     dir, origin, more);
}

std::string message(const Finding& f) {
  std::string blocked = total_time_words(f);
  const bool graph = f.api == "cudaGraphLaunch" || f.api == "cuGraphLaunch";
  std::string what = api_with_args(f, {f.chevron_launch ? "<<<...>>>" : "",
                                       graph              ? graph_words(f)
                                       : f.kernel.empty() ? "kernel ?"
                                                          : "kernel " + shorten_middle(f.kernel, kDisplayNameMax),
                                       calls_part(f)});
  switch (f.cause) {
    case Cause::GraphHostMemcpy:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: the graph launch waited for {}: a graph's copy to or from pageable memory "
                      "runs synchronously, as with cudaMemcpyAsync; allocate that buffer with cudaMallocHost or "
                      "register it with cudaHostRegister"),
          what, blocked, graph_node_words(f));
    case Cause::GraphUpload:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: the first launch of this executable graph since it was instantiated, so the "
                      "driver uploaded the graph to the device in it (its cost grows with the graph's nodes); "
                      "instantiate once outside the loop and upload it ahead with cudaGraphUpload, or launch it once "
                      "before the timed part"),
          what, blocked);
    case Cause::GraphMemoryNodes:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: the graph has {} (cudaMallocAsync captured into it), whose memory the launch "
                      "allocates or maps again when the graph's pool cannot hold it; keep the allocation outside "
                      "the graph, or trim less (cudaDeviceGraphMemTrim) and launch it while its memory is reserved"),
          what, blocked, plural(f.graph_memory_nodes, "memory-allocation node", "memory-allocation nodes"));
    case Cause::LaunchBlockingEnv:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: CUDA_LAUNCH_BLOCKING=1 is set, so every launch waits until its kernel has "
                      "finished; unset it outside debugging"),
          what, blocked);
    case Cause::FirstLaunch:
      return fmt::format(
          FMT_COMPILE(
              "{} blocked {}: first launch of this kernel in the process: its module was loaded lazily ({}){}; warm "
              "the kernel up before the timed part, or set CUDA_MODULE_LOADING=EAGER to load modules at start-up"),
          what, blocked,
          f.module_loading.empty() ? "CUDA_MODULE_LOADING is not set: lazy loading is the default"
                                   : "CUDA_MODULE_LOADING=" + f.module_loading,
          pending_words(f));
    case Cause::ContextInit:
      if (f.context_creation_visible)
        return fmt::format(
            FMT_COMPILE(
                "{} blocked {}: it was the process's first CUDA call, so the runtime created the CUDA context in it "
                "(and loaded the kernel's module); create the context before the timed part, e.g. with cudaFree(0) "
                "or cudaInitDevice at start-up (this first call's time also holds asyncwatch's own start-up)"),
            what, blocked);
      return fmt::format(
          FMT_COMPILE(
              "{} blocked {}: it is the first CUDA call in the trace, a driver entry point reached after the CUDA "
              "context was created by calls asyncwatch does not see (the static runtime), so the creation's time is "
              "not in this figure; create the context before the timed part, e.g. with cudaFree(0) at start-up"),
          what, blocked);
    case Cause::LaunchQueueFull:
      return fmt::format(
          FMT_COMPILE(
              "{} blocked {}: {} launches had been enqueued on the stream with no sign in the trace that it had run "
              "them (no synchronization, query or waiting copy), at least --launch-queue-depth, so the launch queue "
              "was probably full and the call waited for room; launch fewer, larger kernels, or use CUDA graphs"),
          what, blocked, f.outstanding_launches_max);
    case Cause::OtherThreadCall:
    case Cause::HostFunctionRunning: {
      static const ConcurrentCallInfo kNone;
      const ConcurrentCallInfo& c = f.concurrent ? *f.concurrent : kNone;
      const std::string span = fmt::format(FMT_COMPILE("{} of the wait ({} in all)"), format_duration(c.overlap_ns),
                                           format_duration(c.duration_ns));
      // The two causes differ in who ran through the wait, what the launch waited for and the advice.
      struct Words {
        const char* waited_for;
        const char* advice;
      };
      const bool host_function = f.cause == Cause::HostFunctionRunning;
      const Words w = host_function
                          ? Words{"the driver while it ran (the trace shows the function's run, not the driver's "
                                  "queue or locks)",
                                  "keep host functions short, or have them only signal a thread of your own"}
                          : Words{"a lock of the CUDA runtime or driver that call held (the trace shows the calls, "
                                  "not the locks)",
                                  "move that call out of the other thread's loop, or make the launches from one thread"};
      const std::string who =
          host_function ? fmt::format(FMT_COMPILE("a host function ran on the driver's thread (thread {})"), c.tid)
                        : fmt::format(FMT_COMPILE("thread {}'s {}{} ran"), c.tid, c.api.empty() ? "CUDA call" : c.api,
                                      c.site_known ? " at " + site_words(c.site) : "");
      return fmt::format(FMT_COMPILE("{} blocked {}: {} through {}: the launch probably waited for {}; {}"), what,
                         blocked, who, span, w.waited_for, w.advice);
    }
    default:
      return fmt::format(
          FMT_COMPILE("{} blocked {}: the trace does not show why (not a first launch, launch queue not known to "
                      "be full, no other thread's CUDA call or host function ran through most of the wait)"),
          what, blocked);
  }
}

// `key`: {"file", "line", "function"} of a call site the finding names besides its own.
void site_object(JsonWriter& out, const char* key, const Frame& site) {
  out.key(key);
  out.begin_object();
  out.field("file", site.file);
  if (site.has_line())
    out.field("line", site.line);
  else
    out.null_field("line");
  out.field("function", site.function);
  out.end_object();
}

void json_fields(JsonWriter& out, const Finding& f) {
  out.field("outstanding_launches_max", f.outstanding_launches_max);
  if (f.graph_pageable_nodes) {
    out.field("graph_pageable_memcpy_nodes", f.graph_pageable_nodes);
    const GraphMemcpyNodeInfo& node = f.graph_node();
    out.key("graph_memcpy_node");
    out.begin_object();
    out.field("api", node.api);
    out.field("captured", node.captured);
    out.field("direction", std::string(direction_text(node.direction)));
    out.field("host_memory", std::string("pageable"));
    out.field("bytes", node.bytes);
    if (node.site_known) site_object(out, "origin", node.site);
    out.end_object();
  }
  if (f.cause == Cause::ContextInit) out.field("context_creation_in_call", f.context_creation_visible);
  if (f.graph_memory_nodes) out.field("graph_memory_nodes", f.graph_memory_nodes);
  if (f.concurrent) {
    const ConcurrentCallInfo& c = *f.concurrent;
    out.key("concurrent_call");
    out.begin_object();
    out.field("api", c.api.empty() ? std::string("host-function") : c.api);
    out.field("tid", uint64_t{c.tid});
    out.field("duration_ns", c.duration_ns);
    out.field("overlap_ns", c.overlap_ns);
    if (c.site_known) site_object(out, "site", c.site);
    out.end_object();
  }
  if (f.pending_copies) {
    out.field("pending_copies", f.pending_copies);
    out.field("pending_copy_bytes", f.pending_copy_bytes);
  }
}

}  // namespace

const Rule blocking_launch =
    Rule(Trigger::Launch, detect, message).blocking().per_kernel().threshold_first().json(json_fields);

}  // namespace asyncwatch::rules
