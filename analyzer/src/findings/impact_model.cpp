// The impact model fed during the pass: what fixing each flagged call would save (impact.h).
#include "findings/process_analyzer.h"

namespace asyncwatch::analysis {

const impact::Figures& ProcessAnalyzer::figures() {
  if (!figures_ready_) {
    figures_ = impact::device_figures(trace_.device().name, trace_.device().simulated);
    figures_ready_ = trace_.device().present;
  }
  return figures_;
}

uint64_t ProcessAnalyzer::pinned_call_ns(size_t d) {
  const DurationStats& s = d == 0 ? pinned_htod_ : pinned_dtoh_;
  return s.count() ? s.total() / s.count() : figures().pinned_call_ns[d];
}

uint64_t ProcessAnalyzer::pinned_transfer_ns(size_t d, uint64_t bytes, uint16_t* basis) {
  if (pinned_rate_ns_[d]) {
    *basis = impact::kMeasuredRate;
    return static_cast<uint64_t>(static_cast<double>(bytes) * static_cast<double>(pinned_rate_ns_[d]) /
                                 static_cast<double>(pinned_rate_bytes_[d]));
  }
  *basis = figures().pinned_basis[d];
  return impact::transfer_ns(bytes, figures().pinned_bytes_per_ns[d]);
}

void ProcessAnalyzer::timed_copy(uint32_t tid, const GpuSpanRecord& g) {
  tracker_.gpu_span(tid, g.host_before_ns, g.host_after_ns, g.start_ns);
  auto it = timed_pinned_.find(tid);
  if (it == timed_pinned_.end()) return;
  auto& copies = it->second;
  for (size_t i = 0; i < copies.size(); ++i) {
    const TimedPinned& c = copies[i];
    if (g.host_before_ns < c.start || g.host_before_ns > c.end) continue;
    if (g.end_ns > g.start_ns) {
      pinned_rate_bytes_[c.direction] += c.bytes;
      pinned_rate_ns_[c.direction] += g.end_ns - g.start_ns;
    }
    copies.erase(copies.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

void ProcessAnalyzer::model_impact(const Observation& o, impact::Sink& sink) {
  const uint64_t stream = current_stream_;  // UINT64_MAX (impact's kAllStreams) for calls without a stream
  switch (o.id) {
    case FindingId::PageableAsyncCopy: {
      if (o.direction != Direction::HtoD && o.direction != Direction::DtoH) break;
      const size_t d = o.direction == Direction::HtoD ? 0 : 1;
      // The fixed copy returns after a pinned copy's cost and moves the bytes at the pinned rate on
      // the stream, after the work the call waited for (all of it: the stream was idle; else what
      // is left once the pageable transfer's time is taken out, at the pageable rate).
      const uint64_t cost = pinned_call_ns(d);
      uint16_t basis = 0;
      const uint64_t moved = pinned_transfer_ns(d, o.bytes, &basis);
      uint64_t done = cost + moved;
      bool measurable = false;  // a span of this copy (GPU times) says how long it waited
      if (o.cause == Cause::WaitedForStream) {
        const bool idle = !o.waited_for || (o.waited_for->total == 0 && o.event_waits == 0);
        uint64_t copy = o.blocked_ns;
        if (idle && d == 1 && o.bytes >= (1u << 20)) {  // the call was the transfer: this trace's pageable rate
          pageable_idle_.bytes += o.bytes;
          pageable_idle_.ns += o.blocked_ns;
        }
        if (!idle) {
          const bool own = pageable_idle_.ns != 0;
          copy = std::min(o.blocked_ns, impact::transfer_ns(o.bytes, own ? pageable_idle_.rate()
                                                                         : figures().pageable_d2h_bytes_per_ns));
          basis |= own ? uint16_t{impact::kMeasuredPageable} : figures().pageable_basis;
          measurable = gpu_times_;
        }
        done = o.blocked_ns - copy + moved;
      }
      tracker_.blocking(current_tid_, stream, impact::BlockingCall{current_start_, current_end_, cost, done}, &sink,
                        basis, measurable ? std::max<uint64_t>(moved, 1) : 0);
      return;
    }
    case FindingId::ExplicitSync:
    case FindingId::HiddenSync: return;  // on_sync
    case FindingId::BlockingLaunch:
      if (o.cause == Cause::FirstLaunch || o.cause == Cause::ContextInit) {
        sink.basis |= impact::kMoved;
        return;
      }
      if (o.cause == Cause::LaunchQueueFull) {
        sink.basis |= impact::kGpuBound;
        return;
      }
      if (o.cause == Cause::Unknown) {  // no known cause, no known fix
        sink.basis |= impact::kNotModelled;
        return;
      }
      break;
    case FindingId::LongHostCallback:
    case FindingId::InFlightCall: sink.basis |= impact::kNotModelled; return;
    case FindingId::DeprecatedStreamCallback: sink.basis |= impact::kSameWork; return;
    default: break;
  }
  // The call becomes asynchronous (or goes); the stream work it waited for stays.
  tracker_.blocking(current_tid_, stream, impact::BlockingCall{current_start_, current_end_, 0, o.blocked_ns}, &sink,
                    impact::kStreamWorkStays);
}

}  // namespace asyncwatch::analysis
