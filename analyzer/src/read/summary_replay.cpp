#include "read/summary_replay.h"

#include <algorithm>
#include <cstring>

namespace asyncwatch {

using namespace trace;

namespace {
// The largest blocked time of bucket `b` that a call of at most `max_ns` can have.
uint64_t bucket_high(uint32_t b, uint64_t max_ns) {
  const uint64_t hi = b + 1 < kSummaryBuckets ? summary_bucket_low(b + 1) - 1 : max_ns;
  return std::min(hi, max_ns);
}
}  // namespace

void SummaryReplay::add(const SiteSummaryRecord& s, uint64_t file_offset) {
  if (s.count == 0) return;
  Site site;
  std::memcpy(site.call, s.call, sizeof site.call);
  site.file_offset = file_offset;
  site.count = s.count;
  site.first_start = s.first_start_ns;
  site.last_start = std::max(s.last_start_ns, s.first_start_ns);
  site.max_ns = s.max_ns;
  // The histogram may hold one call more than `count` (a kill inside an update: trace_format.h): the
  // counts are taken from the bottom bucket up until `count` calls.
  uint64_t hist[kSummaryBuckets];
  uint64_t left = s.count;
  for (uint32_t b = 0; b < kSummaryBuckets; ++b) {
    hist[b] = std::min<uint64_t>(s.histogram[b], left);
    left -= hist[b];
  }
  if (left) hist[summary_bucket(s.max_ns)] += left;  // (validated: cannot happen)
  const uint32_t max_bucket = summary_bucket(s.max_ns);
  site.max_pending = hist[max_bucket] > 0;
  if (site.max_pending) --hist[max_bucket];
  const uint64_t rest = site.count - (site.max_pending ? 1 : 0);
  const uint64_t target = s.total_ns > s.max_ns ? s.total_ns - (site.max_pending ? s.max_ns : 0) : 0;
  // Each bucket's calls at its low end, then the time left over shared out in proportion to the
  // room each bucket has, then what rounding left one unit at a time.
  unsigned __int128 low = 0, room = 0;
  for (uint32_t b = 0; b < kSummaryBuckets; ++b) {
    if (!hist[b]) continue;
    const uint64_t lo = std::min(summary_bucket_low(b), s.max_ns), hi = bucket_high(b, s.max_ns);
    low += static_cast<unsigned __int128>(hist[b]) * lo;
    room += static_cast<unsigned __int128>(hist[b]) * (hi - lo);
  }
  unsigned __int128 extra = target > low ? target - low : 0;
  if (extra > room) extra = room;
  unsigned __int128 given = 0;
  for (uint32_t b = 0; b < kSummaryBuckets; ++b) {
    if (!hist[b]) continue;
    const uint64_t lo = std::min(summary_bucket_low(b), s.max_ns), hi = bucket_high(b, s.max_ns);
    const unsigned __int128 r = static_cast<unsigned __int128>(hist[b]) * (hi - lo);
    const unsigned __int128 x = room ? extra * r / room : 0;
    given += x;
    site.shares.push_back({b, hist[b], static_cast<uint64_t>(hist[b] * static_cast<unsigned __int128>(lo) + x)});
  }
  for (auto& sh : site.shares) {  // the remainder (less than one unit a bucket)
    if (given >= extra) break;
    const uint64_t lo = std::min(summary_bucket_low(sh.bucket), s.max_ns), hi = bucket_high(sh.bucket, s.max_ns);
    const unsigned __int128 cap = static_cast<unsigned __int128>(sh.calls) * hi;
    const unsigned __int128 add = std::min<unsigned __int128>(extra - given, cap - sh.sum);
    sh.sum += static_cast<uint64_t>(add);
    given += add;
    (void)lo;
  }
  (void)rest;
  calls_ += site.count;
  sites_.push_back(std::move(site));
  const uint32_t i = static_cast<uint32_t>(sites_.size() - 1);
  heap_.push_back({sites_[i].time_of(0), i});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

uint64_t SummaryReplay::Site::time_of(uint64_t i) const {
  if (count <= 1) return first_start;
  return first_start +
         static_cast<uint64_t>(static_cast<unsigned __int128>(last_start - first_start) * i / (count - 1));
}

uint64_t SummaryReplay::Site::next_duration() {
  while (share < shares.size() && in_share >= shares[share].calls) ++share, in_share = 0;
  if (share >= shares.size()) {
    max_pending = false;
    return max_ns;
  }
  // The bucket's sum spread evenly: consecutive differences of floor(sum * k / calls).
  const Share& s = shares[share];
  const auto at = [&](uint64_t k) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(s.sum) * k / s.calls);
  };
  const uint64_t d = at(in_share + 1) - at(in_share);
  ++in_share;
  return d;
}

const uint8_t* SummaryReplay::pop(uint64_t* start, uint64_t* file_offset) {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const Entry e = heap_.back();
  heap_.pop_back();
  Site& s = sites_[e.site];
  std::memcpy(scratch_, s.call, sizeof scratch_);
  auto* h = reinterpret_cast<CallHead*>(scratch_);
  h->start_ns = e.time;
  h->end_ns = e.time + s.next_duration();
  *start = e.time;
  *file_offset = s.file_offset;
  if (++s.emitted < s.count) {
    heap_.push_back({s.time_of(s.emitted), e.site});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  return scratch_;
}

}  // namespace asyncwatch
