#include "findings/impact.h"

#include <algorithm>

namespace asyncwatch::impact {

namespace {

// The pageable device-to-host rate is a buffer's whose pages are already mapped (written before):
// the fastest a pageable transfer goes, so that without GPU times a waiting copy's transfer is the
// shortest it can have been and its gain a lower bound. Into a buffer written for the first time
// (a fresh malloc) the same copy is several times slower: 1.23 GB/s for 2 GiB on the H200.
//
// The H200's figures (CUDA 13.0, driver 580): its 2 GiB pinned copies ran 38.9 ms on the device
// each way (analyzer/tests/golden/h200/seed_gpu_times.pinned.awtrace, GPU times: 55.2 GB/s) and
// returned after 45 us (host to device) and 21 us (device to host); a 256 MiB pageable
// device-to-host copy ran 26.6 ms on the device (pinned_vs_pageable_gpu_times.awtrace: 10.1 GB/s).
constexpr double kH200PinnedBytesPerNs = 55.2;
constexpr uint64_t kH200PinnedCallNs[2] = {45'000, 21'000};
constexpr double kH200PageableD2hBytesPerNs = 10.1;
// The H100's figures (H100 80GB HBM3, PCIe 5.0 x16, driver 580; test_apps/apps/pinned_vs_pageable
// 256M 3, each copy on an idle stream, timed from its call to its synchronize's return): pinned
// 4.86-4.92 ms each way (55.0 GB/s), calls returning after 18-22 us (host to device) and 12-27 us
// (device to host); a pageable device-to-host copy of a buffer already written 16.98-17.05 ms
// (15.8 GB/s).
constexpr double kH100PinnedBytesPerNs = 55.0;
constexpr uint64_t kH100PinnedCallNs[2] = {20'000, 17'000};
constexpr double kH100PageableD2hBytesPerNs = 15.8;
// The simulator's defaults (docs/simulator.md): queued copies at 50 GB/s, pageable device-to-host
// copies at 1.23 GB/s; a queued copy returns in microseconds.
constexpr double kSimPinnedBytesPerNs = 50.0;
constexpr uint64_t kSimPinnedCallNs = 10'000;
constexpr double kSimPageableD2hBytesPerNs = 1.23;
// Any other device: a PCIe 4.0 x16 link's usual pinned rate, the pinned call cost of the measured
// devices, and a pageable device-to-host rate in the H100 host's proportion to its pinned rate.
constexpr double kAssumedPinnedBytesPerNs = 25.0;
constexpr uint64_t kAssumedPinnedCallNs[2] = {20'000, 17'000};
constexpr double kAssumedPageableD2hBytesPerNs =
    kAssumedPinnedBytesPerNs * kH100PageableD2hBytesPerNs / kH100PinnedBytesPerNs;

}  // namespace

std::string basis_text(uint16_t b) {
  std::string out;
  auto add = [&](uint16_t bit, const char* text) {
    if (!(b & bit)) return;
    if (!out.empty()) out += "; ";
    out += text;
  };
  add(kSimulated, "simulated: the simulator's model figures, not a real device's");
  add(kMeasuredRate, "pinned transfer rate measured in this trace (GPU times)");
  add(kDeviceFigure, "pinned transfer rate: the device's measured figure (docs/findings.md)");
  add(kAssumedRate,
      "transfer rates assumed (pinned 25 GB/s, PCIe 4.0 x16; pageable device to host 7.2 GB/s): no figure for this "
      "device");
  add(kBounded,
      "bounded: no GPU times recorded, the transfer's share of the wait is taken at the pageable rate into a buffer "
      "already written (a lower bound: into a freshly allocated one the transfer is slower and the gain larger)");
  add(kMeasuredPageable, "pageable device-to-host rate measured in this trace (its copies on an idle stream)");
  add(kMeasuredCopy, "the pageable transfer's time measured in this trace (GPU times)");
  add(kStreamWorkStays, "the stream work the calls waited for stays; only the host time that overlaps it is gained");
  add(kQueueStall, "the time the GPU queue stood empty after each wait, until the thread gave it work again");
  add(kMoved, "the fix moves this time (to start-up), it does not remove it");
  add(kGpuBound, "the launch queue was full: the GPU set the pace, not the host");
  add(kSameWork, "the fix changes the API, not what runs");
  add(kNotModelled, "not modelled");
  return out;
}

Figures device_figures(const std::string& device_name, bool simulated) {
  Figures f;
  const bool h200 = !simulated && device_name.find("H200") != std::string::npos;
  const bool h100 = !simulated && !h200 && device_name.find("H100") != std::string::npos;
  for (int d = 0; d < 2; ++d) {
    if (simulated) {
      f.pinned_bytes_per_ns[d] = kSimPinnedBytesPerNs;
      f.pinned_call_ns[d] = kSimPinnedCallNs;
    } else if (h200) {
      f.pinned_bytes_per_ns[d] = kH200PinnedBytesPerNs;
      f.pinned_call_ns[d] = kH200PinnedCallNs[d];
    } else if (h100) {
      f.pinned_bytes_per_ns[d] = kH100PinnedBytesPerNs;
      f.pinned_call_ns[d] = kH100PinnedCallNs[d];
    } else {
      f.pinned_bytes_per_ns[d] = kAssumedPinnedBytesPerNs;
      f.pinned_call_ns[d] = kAssumedPinnedCallNs[d];
    }
    f.pinned_basis[d] = f.call_basis[d] = simulated ? kSimulated : (h200 || h100) ? kDeviceFigure : kAssumedRate;
  }
  f.pageable_d2h_bytes_per_ns = simulated ? kSimPageableD2hBytesPerNs
                                : h200    ? kH200PageableD2hBytesPerNs
                                : h100    ? kH100PageableD2hBytesPerNs
                                          : kAssumedPageableD2hBytesPerNs;
  // Without GPU times the share of a waiting copy's time that was its transfer rests on this rate.
  f.pageable_basis = simulated ? uint16_t{kSimulated}
                               : static_cast<uint16_t>(kBounded | ((h200 || h100) ? 0u : unsigned{kAssumedRate}));
  return f;
}

uint64_t transfer_ns(uint64_t bytes, double bytes_per_ns) {
  if (bytes_per_ns <= 0) return 0;
  return static_cast<uint64_t>(static_cast<double>(bytes) / bytes_per_ns);
}

// In the fixed program the thread runs `saved` = blocked - fixed cost earlier from each fixed call
// on; the stream has a fixed call's work done after the earlier work it waited for and, when that
// work was itself behind an earlier call of the chain, after that call's fixed work plus the time
// the work between them ran (as traced: from the earlier call's end to when this call's wait ended,
// the stream busy throughout, which makes the gain a lower bound). A call left as traced blocks as
// long as traced, or, behind a fixed call on its stream, returns when the stream reaches it plus its
// own time. Work the thread put on the stream after the last
// call starts when both allow and takes as long as it took (from when it could start to the wait's
// end). The thread gets past the wait when it arrives there and each stream is done.
uint64_t chain_gain(const ChainCall* calls, size_t n, const NextWait& next, uint64_t* fixed_wait) {
  if (fixed_wait) *fixed_wait = next.end >= next.start ? next.end - next.start : 0;
  if (next.end < next.start) return 0;
  struct StreamState {
    uint64_t stream = 0;
    uint64_t done = 0;      // fixed program: when the stream has the chain's work so far done
    uint64_t prev_end = 0;  // traced: the end of the chain's last call on it
    uint64_t prev_ret = 0;  // fixed program: when that call returned
    uint64_t last_enqueue = 0;
  };
  std::vector<StreamState> streams;  // a handful: the streams of one thread's calls settled by one wait
  uint64_t shift = 0, gain_cap = 0;
  for (size_t i = 0; i < n; ++i) {
    const BlockingCall& c = calls[i].call;
    if (c.end <= c.start || next.start < c.end) return 0;
    const uint64_t blocked = c.end - c.start;
    const uint64_t work = std::min(c.fixed_work, c.fixed_done);
    const uint64_t prior = c.fixed_done - work;  // the traced wait for earlier stream work
    auto found =
        std::find_if(streams.begin(), streams.end(), [&](const StreamState& x) { return x.stream == calls[i].stream; });
    const bool first = found == streams.end();
    StreamState* s = first ? &streams.emplace_back(StreamState{calls[i].stream, 0, 0, 0, 0}) : &*found;
    const uint64_t host = c.start - std::min(shift, c.start);
    uint64_t prior_done = c.start + prior;
    if (!first && prior > 0) {
      const uint64_t between = c.start + prior > s->prev_end ? c.start + prior - s->prev_end : 0;
      prior_done = std::min(prior_done, std::max(s->done, s->prev_ret) + between);
    } else if (!first) {
      prior_done = std::min(prior_done, std::max(s->done, host));
    }
    uint64_t ret;
    if (calls[i].fixed && blocked > c.fixed_cost) {
      ret = host + c.fixed_cost;
      s->done = std::max(prior_done + work, ret);
      gain_cap += blocked;
    } else if (first) {  // what it waited for is not the chain's: it blocks as long as traced
      ret = host + blocked;
      s->done = ret;
    } else {
      ret = std::min(std::max(host, prior_done) + (blocked - prior), c.end);
      s->done = ret;
    }
    shift = c.end - ret;
    s->prev_end = c.end;
    s->prev_ret = ret;
    s->last_enqueue = calls[i].last_enqueue;
  }
  if (gain_cap == 0) return 0;
  const uint64_t arrive = next.start - std::min(shift, next.start);
  uint64_t fixed_end = arrive;
  for (const StreamState& s : streams) {
    fixed_end = std::max(fixed_end, s.done);
    if (next.end > next.start && s.last_enqueue) {
      const uint64_t x_start = std::max(s.last_enqueue, s.prev_end);
      const uint64_t x_ran = next.end > x_start ? next.end - x_start : 0;
      const uint64_t fixed_x_start = std::max(s.last_enqueue >= shift ? s.last_enqueue - shift : 0, s.done);
      fixed_end = std::max(fixed_end, fixed_x_start + x_ran);
    }
  }
  if (fixed_wait) *fixed_wait = fixed_end - arrive;
  const uint64_t gain = next.end > fixed_end ? next.end - fixed_end : 0;
  return std::min(gain, gain_cap);
}

uint64_t blocking_call_gain(const BlockingCall& c, const NextWait& next, uint64_t* fixed_wait) {
  const ChainCall one{c, 0, next.last_enqueue, true};
  return chain_gain(&one, 1, next, fixed_wait);
}

uint64_t sync_gain(uint64_t waited, uint64_t gap) { return std::min(waited, gap); }

Tracker::Thread* Tracker::find(uint32_t tid) {
  CacheEntry& e = cache_[tid % kSlots];
  if (e.thread && e.tid == tid) return e.thread;
  auto it = threads_.find(tid);
  if (it == threads_.end()) return nullptr;
  e = CacheEntry{tid, &it->second};
  return e.thread;
}

Tracker::Thread& Tracker::at(uint32_t tid) {
  if (Thread* t = find(tid)) return *t;
  Thread* t = &threads_[tid];
  cache_[tid % kSlots] = CacheEntry{tid, t};
  return *t;
}

uint64_t Tracker::settle(const Call* calls, size_t n, const NextWait& next, Sink* waiter) {
  if (n == 0) return 0;
  n = std::min(n, kMaxPending);
  std::vector<ChainCall>& chain = chain_scratch_;
  chain.clear();
  for (size_t i = 0; i < n; ++i)
    chain.push_back(ChainCall{calls[i].call, calls[i].stream, calls[i].last_enqueue, false});
  uint64_t kept = 0;
  const uint64_t waited = next.end > next.start ? next.end - next.start : 0;
  for (size_t i = 0; i < n; ++i) {
    Sink* sink = calls[i].sink;
    bool seen = false;  // each group once, at its first call
    for (size_t k = 0; k < i && !seen; ++k) seen = calls[k].sink == sink;
    if (seen) continue;
    uint64_t blocked = 0;
    for (size_t k = i; k < n; ++k) {
      chain[k].fixed = calls[k].sink == sink;
      if (!chain[k].fixed) continue;
      sink->basis |= calls[k].basis;
      if (calls[k].call.end > calls[k].call.start) blocked += calls[k].call.end - calls[k].call.start;
    }
    for (size_t k = 0; k < i; ++k) chain[k].fixed = false;
    uint64_t fixed_wait = 0;
    const uint64_t gain = chain_gain(chain.data(), n, next, &fixed_wait);
    sink->impact_ns += gain;
    // The wait was for these calls' work: fixed, the synchronization would have waited clearly less.
    if (waiter && !waiter->cause && waiter != sink && waited > 0 && fixed_wait < waited - waited / 10)
      waiter->cause = sink;
    kept += blocked > gain ? blocked - gain : 0;
  }
  return kept;
}

void Tracker::blocking(uint32_t tid, uint64_t stream, const BlockingCall& call, Sink* sink, uint16_t basis,
                       uint64_t moved) {
  Thread& t = at(tid);
  if (t.calls.size() >= kMaxPending) {  // the oldest settled as at a wait that did not wait
    settle(&t.calls.front(), 1, NextWait{call.start, call.start, 0}, nullptr);
    t.calls.erase(t.calls.begin());
    count(tid, -1);
  }
  t.calls.push_back(Call{call, stream, 0, sink, moved, basis});
  count(tid, 1);
}

void Tracker::gpu_span(uint32_t tid, uint64_t host_before, uint64_t host_after, uint64_t device_start) {
  Thread* t = find(tid);
  if (!t) return;
  for (Call& c : t->calls) {
    if (!c.moved || host_before < c.call.start || host_after > c.call.end) continue;
    // The stream reached the copy at device_start: before it, the call waited for earlier work.
    const uint64_t waited = device_start > c.call.start ? std::min(device_start, c.call.end) - c.call.start : 0;
    c.call.fixed_done = std::max(c.call.fixed_cost, waited + c.moved);
    c.basis = static_cast<uint16_t>((c.basis & ~kBounded) | kMeasuredCopy);
    c.moved = 0;
    return;
  }
}

void Tracker::wait(uint32_t tid, uint64_t stream, uint64_t start, uint64_t end, Sink* sync_sink) {
  if (pending_by_slot_[tid % kSlots] == 0 && !sync_sink) return;
  Thread* t = sync_sink ? &at(tid) : find(tid);
  if (!t) return;
  // What the settled calls waited for that their fix does not remove: a synchronization that
  // follows them (`.item()`: a small pageable copy that waits for the step's kernels, then a
  // synchronize) stalls the GPU queue for that wait too.
  uint64_t kept_waiting = 0;
  if (!t->calls.empty() && stream != kNoStream) {
    std::vector<Call>& settled = settled_scratch_;
    settled.clear();
    size_t kept = 0;
    for (size_t i = 0; i < t->calls.size(); ++i) {
      Call& c = t->calls[i];
      if (stream == kAllStreams || c.stream == stream || c.stream == 0)
        settled.push_back(c);
      else
        t->calls[kept++] = c;
    }
    t->calls.resize(kept);
    count(tid, -static_cast<int64_t>(settled.size()));
    kept_waiting = settle(settled.data(), settled.size(), NextWait{start, end, 0}, sync_sink);
  }
  if (sync_sink) {
    sync_sink->basis |= kQueueStall;
    if (t->syncs.size() >= kMaxPending) {
      t->syncs.erase(t->syncs.begin());
      count(tid, -1);
    }
    t->syncs.push_back(Sync{end, (end > start ? end - start : 0) + kept_waiting, sync_sink});
    count(tid, 1);
  }
}

void Tracker::enqueue_slow(uint32_t tid, uint64_t stream, uint64_t start) {
  Thread* t = find(tid);
  if (!t) return;
  for (Call& c : t->calls)
    if (c.stream == stream || stream == 0) c.last_enqueue = start;
  for (const Sync& s : t->syncs) s.sink->impact_ns += sync_gain(s.waited, start > s.end ? start - s.end : 0);
  count(tid, -static_cast<int64_t>(t->syncs.size()));
  t->syncs.clear();
}

void Tracker::finish(uint64_t trace_end) {
  for (auto& [tid, t] : threads_) {
    uint64_t end = trace_end;
    for (const Call& c : t.calls) end = std::max(end, c.call.end);
    settle(t.calls.data(), t.calls.size(), NextWait{end, end, 0}, nullptr);
    t.calls.clear();
    t.syncs.clear();  // nothing was given to the GPU after them: they cost the run nothing that a fix saves
  }
  pending_ = 0;
  for (auto& n : pending_by_slot_) n = 0;
}

}  // namespace asyncwatch::impact
