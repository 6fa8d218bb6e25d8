// Summary mode (ASYNCWATCH_SUMMARY=1, docs/configuration.md): a call whose record is identical but for
// its times to earlier calls of this thread is folded into a SiteSummaryRecord (trace_format.h) instead
// of staying in the trace as a record of its own, so that the trace grows with the distinct calls of a
// run, not with its length. Per thread, no lock, no allocation: the thread's index of its signatures is
// thread-local, the summaries are records in the thread's own block, updated in place (MAP_SHARED: a
// SIGKILL leaves the counts of every call that returned, and the exemplars).
//
// The in-flight slot: in summary mode a call's record is published in flight not in fresh space
// appended to the block but in the thread's slot for its record type, a record of the type's size in
// the thread's current block that is Padding while no call of the thread uses it (its bytes after the
// header zero, as fresh space is). The wrapper fills and completes it in place as in full mode; then
// the call is folded (the slot goes back to Padding, the summary's counts go up) or, for an exemplar or
// a call of a signature not summarized yet, moved out to a record of its own at the block's end. So a
// call that never returns is in the trace (the slot, in flight) and every call that returned is
// counted, and a folded call writes no new bytes. A reentrant call (a signal handler's, while the
// slot holds the interrupted call) and a call whose slot's block was left during the call keep an
// appended record of their own.
#pragma once

#include <atomic>
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "trace/flight_ring.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::site_summary {

// Set when a trace opens in summary mode (trace_file.cpp, from the configuration).
extern std::atomic<bool> g_enabled;

// One load and a test in every wrapper: full mode's per-call instructions (docs/performance.md) stay.
inline __attribute__((always_inline)) bool enabled() noexcept {
  return AW_UNLIKELY(g_enabled.load(std::memory_order_relaxed));
}

namespace detail {
// The per-call-site cache: the summary the last folded call from a return address went to, so that
// a call from a site already seen is folded without hashing or probing (only compared with it).
inline constexpr uint32_t kSites = 64;
// A summary takes no more calls than its 32-bit histogram counts can hold; the next goes to a new one.
inline constexpr uint64_t kMaxCount = uint64_t{1} << 31;
// The thread's slots and site cache, valid while `epoch` is its thread_buffer block_epoch (the
// thread's block unchanged: the slots and summaries they point into are in it; a thread's first
// record of a trace changes it, so the zero state of a new thread is never valid).
struct Slots {
  uint32_t epoch;
  char* slot[trace::kRecordTypeLimit];  // by record type; nullptr: none in this block yet
  // By site_of(caller's return address): the summary its last folded call went to, else kNoSummary
  // (a summary no call record matches: its `call` is zero). Whatever the site, a call is folded only
  // into a summary whose record it matches.
  trace::SiteSummaryRecord* sites[kSites];
};
extern const trace::SiteSummaryRecord kNoSummary;
extern AW_TLS_SHARED Slots tl_slots;

inline uint32_t site_of(uint64_t ra) noexcept { return static_cast<uint32_t>((ra * 0x9e3779b97f4a7c15ull) >> 58); }

// The slot for `type` made (reserved in the thread's block as Padding) or the losses to report
// written first; nullptr when the call is to take an appended record instead.
__attribute__((noinline)) char* slot_slow(trace::RecordType type, uint32_t size, uint32_t gen) noexcept;
// The slot's completed call that the site cache did not fold: looked up in the thread's index of
// signatures, folded, or moved out as a record of its own (and a summary made).
__attribute__((noinline)) void fold_slow(char* p, uint32_t size, uint64_t ra) noexcept;
// A folded call among the summary's slowest (also its first folded call): worst, max and first start.
__attribute__((noinline)) void note_worst(trace::SiteSummaryRecord* r, uint64_t d, uint64_t start) noexcept;

inline uint64_t word_at(const void* p, uint32_t i) noexcept {
  uint64_t w;
  __builtin_memcpy(&w, static_cast<const char*>(p) + 8 * i, 8);
  return w;
}
// Whether the records at `a` and `b` (`n` words) are the same but for their times (words 3 and 4).
// Word loops rather than memcmp: records are a few 8-byte words, and `n` is a constant where it is
// inlined.
inline bool same_untimed(const void* a, const void* b, uint32_t n) noexcept {
  uint64_t diff = (word_at(a, 0) ^ word_at(b, 0)) | (word_at(a, 1) ^ word_at(b, 1)) | (word_at(a, 2) ^ word_at(b, 2));
#pragma GCC unroll 12
  for (uint32_t i = 5; i < n; ++i) diff |= word_at(a, i) ^ word_at(b, i);
  return diff == 0;
}

// trace::summary_bucket(ns) without its branch: with k = floor(log2(ns | 4)) - 2, ns >> k is ns itself
// below 8, else its top three bits (4 to 7), and 4 k + that is the bucket (clamped as
// summary_bucket's). 9 instructions a folded call instead of summary_bucket's 16 (callgrind).
constexpr uint32_t bucket_of(uint64_t ns) noexcept {
  const int k = 61 - __builtin_clzll(ns | 4);
  const uint64_t b = 4u * static_cast<uint32_t>(k) + (ns >> k);
  return b < trace::kSummaryBuckets ? static_cast<uint32_t>(b) : trace::kSummaryBuckets - 1;
}
constexpr bool bucket_of_matches() {
  for (uint64_t ns = 0; ns < 4096; ++ns)
    if (trace::summary_bucket(ns) != bucket_of(ns)) return false;
  for (uint32_t e = 3; e < 64; ++e)
    for (uint64_t top = 4; top < 8; ++top) {
      const uint64_t lo = top << (e - 2), hi = lo + (uint64_t{1} << (e - 2)) - 1;
      if (trace::summary_bucket(lo) != bucket_of(lo) || trace::summary_bucket(hi) != bucket_of(hi)) return false;
    }
  return true;
}
static_assert(bucket_of_matches(), "bucket_of is summary_bucket");

// The slot at `p` (`size` bytes) idle again: Padding, stored first (release order: a kill leaves the
// call or nothing of it), then its other bytes zero, as the next call publishes only its non-zero fields.
inline __attribute__((always_inline)) void release(char* p, uint32_t size) noexcept {
  const uint32_t padding = static_cast<uint32_t>(trace::RecordType::Padding) | (size << 16);
  __atomic_store_n(reinterpret_cast<uint32_t*>(p), padding, __ATOMIC_RELEASE);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  __builtin_memset(p + 4, 0, size - 4);
}

// The slot's call (completed) counted in `r`: the slot released first, then the counts, the count
// last: a kill in between leaves the call uncounted (it had not returned to the application) or a
// histogram that holds one call more than `count` (readers accept it), never a call counted twice.
inline __attribute__((always_inline)) void fold_into(trace::SiteSummaryRecord* r, char* p, uint32_t size,
                                                     uint64_t end) noexcept {
  const uint64_t start = reinterpret_cast<const trace::CallHead*>(p)->start_ns;
  release(p, size);
  const uint64_t d = end >= start ? end - start : 0;
  ++r->histogram[bucket_of(d)];
  r->total_ns += d;
  // max_ns is the first of the slowest: a call slower than the second slowest (or one of the first
  // two) is the only one that can change either, or the first start.
  if (AW_UNLIKELY(d > r->worst_ns[trace::kSummaryWorstExemplars - 1] ||
                  !r->worst_start_ns[trace::kSummaryWorstExemplars - 1]))
    note_worst(r, d, start);
  r->last_start_ns = start;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ++r->count;
}
}  // namespace detail

// Where the calling thread's call record of `type` (`size` bytes) is published in summary mode: its
// slot (Padding, body zero), or nullptr (the call takes an appended record: no slot could be made).
// `*gen` gets the trace generation, as reserve_active's.
inline __attribute__((always_inline)) char* slot(trace::RecordType type, uint32_t size, uint32_t* gen) noexcept {
  const uint32_t g = trace_writer::generation();
  *gen = g;
  const thread_buffer::detail::State& s = thread_buffer::detail::tl_state;
  detail::Slots& t = detail::tl_slots;
  char* p = t.slot[static_cast<unsigned>(type)];
  if (AW_UNLIKELY(s.key != g || t.epoch != s.block_epoch || s.lost_count || !p))
    return detail::slot_slow(type, size, g);
  return p;
}

// Whether the call record at `p` is the calling thread's slot for its type, in its current block.
inline bool is_slot(const char* p) noexcept {
  const uint16_t type = reinterpret_cast<const trace::RecordHeader*>(p)->type;
  return type < trace::kRecordTypeLimit && detail::tl_slots.slot[type] == p &&
         detail::tl_slots.epoch == thread_buffer::detail::tl_state.block_epoch;
}

// The calling thread's call record at `p` (published, completed: result, end time and stack set,
// kFlagInFlight cleared), `ra` its caller: when it is the thread's slot, folded into its signature's
// summary or moved out as a record of its own. Called from the wrapper after the real call returned
// (no reservation of this thread open). Inline: a call from a site already seen is compared with the
// summary the site cache names and counted without a call (summary mode's per-call instructions,
// docs/performance.md).
inline __attribute__((always_inline)) void after_call(char* p, trace::RecordType type, uint64_t ra,
                                                      uint64_t end) noexcept {
  // The flight recorder's raw copy of every completed call (flight_ring.h), before the slot may be released.
  flight_ring::after_call(reinterpret_cast<const trace::CallHead*>(p));
  const thread_buffer::detail::State& s = thread_buffer::detail::tl_state;
  detail::Slots& t = detail::tl_slots;
  // Not the slot (an appended record), or the thread left the slot's block during the call: the
  // call keeps its record where it is.
  if (p != t.slot[static_cast<unsigned>(type)] || t.epoch != s.block_epoch) return;
  const uint32_t size = trace::record_info(static_cast<uint16_t>(type)).fixed;
  trace::SiteSummaryRecord* r = t.sites[detail::site_of(ra)];
  if (AW_UNLIKELY(!detail::same_untimed(r->call, p, size / 8) || r->count >= detail::kMaxCount))
    return detail::fold_slow(p, size, ra);
  detail::fold_into(r, p, size, end);
}

}  // namespace asyncwatch::site_summary
