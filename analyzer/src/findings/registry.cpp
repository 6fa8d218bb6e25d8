// Names, severities and help texts of the finding rules; merging of groups.
#include "../call_site.h"
#include "../format.h"
#include "../names.h"
#include "rules.h"

#include <fmt/format.h>

namespace asyncwatch {

using namespace trace;

namespace {
const RuleInfo kRules[] = {
    {FindingId::PageableAsyncCopy, Severity::Warning,
     "An asynchronous copy between the device and pageable host memory ran synchronously.",
     "Allocate the host buffer with cudaMallocHost/cudaHostAlloc, or register it with cudaHostRegister, so the "
     "copy can run asynchronously. Device-to-host copies into pageable memory wait for all earlier work in the "
     "stream; host-to-device copies from pageable memory block while the driver stages the data."},
    {FindingId::HostToHostAsyncCopy, Severity::Warning,
     "An asynchronous copy between two host buffers, which is always synchronous.",
     "Copy on the host with memcpy/std::copy, or keep the data on the device."},
    {FindingId::ManagedMemoryCopy, Severity::Warning,
     "An asynchronous copy involving managed memory blocked the host.",
     "Prefetch managed memory with cudaMemPrefetchAsync, or copy between device memory and pinned host memory."},
    {FindingId::BlockingMemset, Severity::Warning, "A memset blocked the host.",
     "Memsets of pinned host or managed memory are synchronous: set host memory with memset, device memory with "
     "cudaMemsetAsync."},
    {FindingId::BlockingLaunch, Severity::Warning, "A kernel launch blocked the host.",
     "First launches under lazy module loading: warm kernels up or set CUDA_MODULE_LOADING=EAGER. A full launch "
     "queue: fewer, larger kernels or CUDA graphs. CUDA_LAUNCH_BLOCKING=1: unset it outside debugging."},
    {FindingId::LongHostCallback, Severity::Warning,
     "A host function or stream callback ran long and held its stream back.",
     "Keep host functions short: have them signal a host thread that does the work."},
    {FindingId::DeprecatedStreamCallback, Severity::Note, "cudaStreamAddCallback is deprecated.",
     "Use cudaLaunchHostFunc (cuLaunchHostFunc with the driver API)."},
    {FindingId::ExplicitSync, Severity::Note, "Time the host waited in explicit synchronization.",
     "Check that the host needs the result at this point; wait on an event for just the work it needs, or move "
     "the wait later."},
    {FindingId::ImplicitSync, Severity::Warning,
     "Memory management calls that may synchronize the device, repeated at one call site.",
     "Allocate once outside the loop and reuse the memory, or use cudaMallocAsync/cudaFreeAsync with a pool."},
};
}  // namespace

const char* finding_id_name(FindingId id) {
  switch (id) {
    case FindingId::PageableAsyncCopy: return "pageable-async-copy";
    case FindingId::HostToHostAsyncCopy: return "host-to-host-async-copy";
    case FindingId::ManagedMemoryCopy: return "managed-memory-copy";
    case FindingId::BlockingMemset: return "blocking-memset";
    case FindingId::BlockingLaunch: return "blocking-launch";
    case FindingId::LongHostCallback: return "long-host-callback";
    case FindingId::DeprecatedStreamCallback: return "deprecated-stream-callback";
    case FindingId::ExplicitSync: return "explicit-sync";
    case FindingId::ImplicitSync: return "implicit-sync";
    case FindingId::Count: break;
  }
  return "unknown";
}

bool parse_finding_id(const std::string& name, FindingId* out) {
  for (int i = 0; i < static_cast<int>(FindingId::Count); ++i) {
    auto id = static_cast<FindingId>(i);
    if (name == finding_id_name(id)) {
      *out = id;
      return true;
    }
  }
  return false;
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "note";
}

const char* cause_name(Cause c) {
  switch (c) {
    case Cause::None: return nullptr;
    case Cause::WaitedForStream: return "waited-for-stream";
    case Cause::Staged: return "staged";
    case Cause::FirstLaunch: return "first-launch";
    case Cause::LaunchQueueFull: return "launch-queue-full";
    case Cause::LaunchBlockingEnv: return "launch-blocking-env";
    case Cause::PinnedHostMemory: return "host-memory";
    case Cause::ManagedMemory: return "managed-memory";
    case Cause::Unknown: return "unknown";
  }
  return nullptr;
}

const RuleInfo& rule_info(FindingId id) { return kRules[static_cast<size_t>(id)]; }

std::string finding_message(const Finding& f) {
  switch (f.id) {
    case FindingId::PageableAsyncCopy: return rules::pageable_async_copy_message(f);
    case FindingId::HostToHostAsyncCopy: return rules::host_to_host_async_copy_message(f);
    case FindingId::ManagedMemoryCopy: return rules::managed_memory_copy_message(f);
    case FindingId::BlockingMemset: return rules::blocking_memset_message(f);
    case FindingId::BlockingLaunch: return rules::blocking_launch_message(f);
    case FindingId::LongHostCallback: return rules::long_host_callback_message(f);
    case FindingId::DeprecatedStreamCallback: return rules::deprecated_stream_callback_message(f);
    case FindingId::ExplicitSync: return rules::explicit_sync_message(f);
    case FindingId::ImplicitSync: return rules::implicit_sync_message(f);
    case FindingId::Count: break;
  }
  return {};
}

std::string Finding::merge_key() const {
  std::string site = call_site_known ? call_site_key(call_site, via) : std::string("?");
  return fmt::format("{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}", static_cast<int>(id), static_cast<int>(cause), api,
                     driver_api, has_direction ? static_cast<int>(direction) : -1,
                     has_host_memory ? static_cast<int>(host_memory) : -1, kernel, site);
}

void Finding::merge(const Finding& o) {
  count += o.count;
  bytes += o.bytes;
  blocked.merge(o.blocked);
  evidence_checked += o.evidence_checked;
  completed_at_return += o.completed_at_return;
  drained_before_return += o.drained_before_return;
  outstanding_launches_max = std::max(outstanding_launches_max, o.outstanding_launches_max);
  chevron_launch = chevron_launch || o.chevron_launch;
  for (const auto& [k, n] : o.waited_for) waited_for[k] += n;
  if (module_loading.empty()) module_loading = o.module_loading;
  for (const auto& p : o.processes) {
    bool found = false;
    for (auto& q : processes)
      if (q.pid == p.pid) {
        q.count += p.count;
        q.blocked_ns_total += p.blocked_ns_total;
        found = true;
      }
    if (!found) processes.push_back(p);
  }
}

std::string direction_words(const Finding& f) {
  if (!f.has_direction) return {};
  switch (f.direction) {
    case Direction::HtoD: return "host to device";
    case Direction::DtoH: return "device to host";
    case Direction::DtoD: return "device to device";
    case Direction::HtoH: return "host to host";
    case Direction::Peer: return "peer to peer";
    case Direction::Unknown: break;
  }
  return {};
}

std::string api_with_args(const Finding& f) {
  std::vector<std::string> parts;
  if (f.id == FindingId::BlockingLaunch || f.id == FindingId::LongHostCallback) {
    if (f.chevron_launch) parts.push_back("<<<...>>>");
    if (f.id == FindingId::BlockingLaunch)
      parts.push_back(f.kernel.empty() ? "kernel ?" : "kernel " + shorten_middle(f.kernel, kDisplayNameMax));
    if (f.count > 1) parts.push_back(plural(f.count, "call", "calls"));
  } else if (f.id == FindingId::BlockingMemset) {
    if (f.count > 1) parts.push_back(plural(f.count, "call", "calls"));
    std::string b = format_bytes(f.bytes) + (f.count > 1 ? " in total" : "");
    if (f.has_host_memory) b += fmt::format(" of {} memory", f.host_memory == MemoryKind::Pinned
                                                                 ? "pinned host"
                                                                 : memory_kind_name(f.host_memory));
    parts.push_back(b);
  } else {
    std::string d = direction_words(f);
    if (!d.empty()) parts.push_back(d);
    if (f.count > 1) parts.push_back(plural(f.count, "call", "calls"));
    parts.push_back(format_bytes(f.bytes) + (f.count > 1 ? " in total" : ""));
  }
  std::string out = f.api;
  if (!parts.empty()) {
    out += " (";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    out += ")";
  }
  // Called inside a library: through which of its functions ("via cusparseSpMV (libcusparse.so.12)").
  if (!f.via.module.empty()) out += " via " + frame_name_text(f.via);
  return out;
}

void fill_from_copy(Observation& o, const CopyRecord& c) {
  o.api = c.api;
  o.driver_fn = c.driver_fn;
  o.stack_id = c.stack_id;
  o.blocked_ns = c.end_ns - c.start_ns;
  o.bytes = c.bytes;
  o.evidence_checked = (c.flags & kFlagEvidenceChecked) != 0;
  o.completed_at_return = o.evidence_checked && (c.flags & kFlagCompletedAtReturn) != 0;
}

Direction copy_direction(const CopyRecord& c) {
  auto d = static_cast<Direction>(c.direction);
  if (d != Direction::Unknown) return d;
  auto host = [](uint8_t k) { return k == 1 || k == 2; };
  auto dev = [](uint8_t k) { return k == 3 || k == 5; };
  if (host(c.src_memory) && dev(c.dst_memory)) return Direction::HtoD;
  if (dev(c.src_memory) && host(c.dst_memory)) return Direction::DtoH;
  if (host(c.src_memory) && host(c.dst_memory)) return Direction::HtoH;
  if (dev(c.src_memory) && dev(c.dst_memory)) return Direction::DtoD;
  return Direction::Unknown;
}

MemoryKind host_side(const CopyRecord& c, Direction d) {
  switch (d) {
    case Direction::HtoD: return static_cast<MemoryKind>(c.src_memory);
    case Direction::DtoH: return static_cast<MemoryKind>(c.dst_memory);
    case Direction::HtoH:
      // Report the "worse" side: pageable over pinned.
      return static_cast<MemoryKind>(c.src_memory == 1 || c.dst_memory == 1 ? 1 : c.src_memory);
    default: return MemoryKind::Unknown;
  }
}

}  // namespace asyncwatch
