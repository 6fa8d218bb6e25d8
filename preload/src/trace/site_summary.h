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
#include <cstddef>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <cstdint>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::site_summary {

// Set when a trace opens (trace_file.cpp, from the configuration): kOff (full mode), kOn, or kOnRing
// (summary mode with the flight recorder's ring, which copies every completed call: flight_ring.h).
enum Mode : uint8_t { kOff = 0, kOn = 1, kOnRing = 3 };
extern std::atomic<uint8_t> g_mode;
// fold_in_flight folds calls that blocked d ns, kFoldMinNs <= d < the blocked time from which the
// stack policy gives a call a stack after it whatever its record (ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US;
// 0 under ASYNCWATCH_STACKS=all) and < kFoldBelowMaxNs: those with d - kFoldMinNs < g_fold_range_ns
// (fold_range). Set with g_mode.
extern std::atomic<uint64_t> g_fold_range_ns;
// 2^36 ns (68 s): below it the histogram bucket needs no clamp (bucket_in_range), and an end time
// before the start (clocks of two CPUs a few ns apart) makes a difference above it; from 4 ns on the
// bucket is the blocked time's exponent and two bits after it (bucket_from_double). One test covers
// all four.
inline constexpr uint64_t kFoldBelowMaxNs = uint64_t{1} << 36;
inline constexpr uint64_t kFoldMinNs = 4;
constexpr uint64_t fold_range(uint64_t below_ns) noexcept {
  below_ns = below_ns < kFoldBelowMaxNs ? below_ns : kFoldBelowMaxNs;
  return below_ns > kFoldMinNs ? below_ns - kFoldMinNs : 0;
}
inline __attribute__((always_inline)) uint8_t mode() noexcept { return g_mode.load(std::memory_order_relaxed); }

// One load and a test in every wrapper: full mode's per-call instructions (docs/performance.md) stay.
inline __attribute__((always_inline)) bool enabled() noexcept { return AW_UNLIKELY(mode() != kOff); }

namespace detail {
// The per-call-site cache: the summary the last folded call from a return address went to, so that
// a call from a site already seen is folded without hashing or probing (only compared with it).
inline constexpr uint32_t kSites = 64;
// A summary takes no more calls than its 32-bit histogram counts can hold; the next goes to a new one.
inline constexpr uint64_t kMaxCount = uint64_t{1} << 31;
// The thread's slots and site cache (thread_buffer::detail::SummarySlots, a member of its
// thread_buffer state): slot[type] while not nullptr (cleared when the thread's block changes), sites
// while `epoch` is the thread's block_epoch (the thread's block unchanged: the summaries they point
// into are in it; a thread's first record of a trace changes it, so the zero state of a new thread is
// never valid). sites, by site_of(caller's return address): the summary its last folded call went
// to, else kNoSummary (a summary no call record matches: its `call` is zero). Whatever the site, a
// call is folded only into a summary whose record it matches.
using Slots = thread_buffer::detail::SummarySlots;
static_assert(sizeof(Slots::sites) / sizeof(Slots::sites[0]) == kSites);
extern const trace::SiteSummaryRecord kNoSummary;
inline Slots& slots() noexcept { return thread_buffer::detail::tl_state.summary; }

// Bits 3-8 of the return address: the sites of a loop body within 512 bytes never share an entry
// (a multiplicative hash did not spread them better and cost two instructions more a call: summary
// per-call instructions <= full mode's, docs/performance.md).
inline uint32_t site_of(uint64_t ra) noexcept { return static_cast<uint32_t>(ra >> 3) & (kSites - 1); }
// A summary's count reached kMaxCount in fold_in_flight: the site entries that name it let go of it
// (its next calls take fold_slow, which starts a new summary).
__attribute__((noinline)) void summary_full(trace::SiteSummaryRecord* r) noexcept;

// The slot for `type` made (reserved in the thread's block as Padding) or the losses to report
// written first; nullptr when the call is to take an appended record instead.
__attribute__((noinline)) char* slot_slow(trace::RecordType type, uint32_t size, uint32_t gen) noexcept;
// The slot's completed call that the site cache did not fold: looked up in the thread's index of
// signatures, folded, or moved out as a record of its own (and a summary made).
// `quiet`: the stack policy gives calls of this record from `ra` no stack after the call unless they
// block (the site cache then lets fold_in_flight skip the policy).
__attribute__((noinline)) void fold_slow(char* p, uint32_t size, uint64_t ra, bool quiet) noexcept;
// A folded call among the summary's slowest (also its first folded call): worst, max and first start.
__attribute__((noinline)) void note_worst(trace::SiteSummaryRecord* r, uint64_t d, uint64_t start) noexcept;

inline __attribute__((always_inline)) uint64_t word_at(const void* p, uint32_t i) noexcept {
  uint64_t w;
  __builtin_memcpy(&w, static_cast<const char*>(p) + 8 * i, 8);
  return w;
}
// Whether the records at `a` and `b` (`n` words) are the same but for their times (words 3 and 4),
// word 1 (flags and result) of `b` taken xor `w1`. Word loops rather than memcmp: records are a few
// 8-byte words, and `n` is a constant where it is inlined.
inline __attribute__((always_inline)) bool same_untimed(const void* a, const void* b, uint32_t n,
                                                        uint64_t w1 = 0) noexcept {
  uint64_t diff =
      (word_at(a, 0) ^ word_at(b, 0)) | (word_at(a, 1) ^ word_at(b, 1) ^ w1) | (word_at(a, 2) ^ word_at(b, 2));
#pragma GCC unroll 12
  for (uint32_t i = 5; i < n; ++i) diff |= word_at(a, i) ^ word_at(b, i);
  return diff == 0;
}

// trace::summary_bucket(ns) for ns below kFoldBelowMaxNs, without a branch: with k = floor(log2(ns |
// 4)) - 2, ns >> k is ns itself below 8, else its top three bits (4 to 7), and 4 k + that is the
// bucket. Unsigned 32-bit k: no sign extension of the index (summary per-call instructions <= full
// mode's, docs/performance.md).
constexpr uint64_t bucket_in_range(uint64_t ns) noexcept {
  const unsigned k = 61u - static_cast<unsigned>(__builtin_clzll(ns | 4));
  return uint64_t{4} * k + (ns >> k);
}
// The same for any ns (clamped as summary_bucket's).
constexpr uint64_t bucket_of(uint64_t ns) noexcept {
  return ns < kFoldBelowMaxNs ? bucket_in_range(ns) : trace::summary_bucket(ns);
}
static_assert(bucket_in_range(kFoldBelowMaxNs - 1) < trace::kSummaryBuckets, "no clamp below kFoldBelowMaxNs");
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
// The same for kFoldMinNs <= ns < kFoldBelowMaxNs from the bits of ns as a double (exact below 2^53):
// its biased exponent and the two mantissa bits after the leading one are 4 (e + 1023) + the bucket's
// top bits, so the bucket is the bits >> 50, less 4 * 1024. Four instructions where bucket_in_range
// takes eight (summary mode's per-call figures, docs/performance.md: what brings the idle
// synchronization's to full mode's, with the slot's pointer test, the count's add and fold_in_flight
// without a mode test).
inline constexpr uint64_t kDoubleBucketBias = uint64_t{4} * 1024;
constexpr uint64_t double_bucket_bits(uint64_t ns) noexcept {
  return __builtin_bit_cast(uint64_t, static_cast<double>(static_cast<int64_t>(ns))) >> 50;
}
constexpr bool double_bucket_matches() {
  for (uint64_t ns = kFoldMinNs; ns < 4096; ++ns)
    if (trace::summary_bucket(ns) != double_bucket_bits(ns) - kDoubleBucketBias) return false;
  for (uint32_t e = 3; e < 36; ++e)
    for (uint64_t top = 4; top < 8; ++top) {
      const uint64_t lo = top << (e - 2), hi = lo + (uint64_t{1} << (e - 2)) - 1;
      if (trace::summary_bucket(lo) != double_bucket_bits(lo) - kDoubleBucketBias ||
          trace::summary_bucket(hi) != double_bucket_bits(hi) - kDoubleBucketBias)
        return false;
    }
  return trace::summary_bucket(kFoldBelowMaxNs - 1) == double_bucket_bits(kFoldBelowMaxNs - 1) - kDoubleBucketBias;
}
static_assert(double_bucket_matches(), "double_bucket_bits - kDoubleBucketBias is summary_bucket from kFoldMinNs on");
// At run time, after release (whose zero register the conversion reuses: no second one).
inline __attribute__((always_inline)) uint64_t double_bucket(uint64_t ns) noexcept {
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128d x = _mm_cvtsi64_sd(_mm_setzero_pd(), static_cast<int64_t>(ns));
  return (static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_castpd_si128(x))) >> 50) - kDoubleBucketBias;
#else
  return double_bucket_bits(ns) - kDoubleBucketBias;
#endif
}

// The slot at `p` (`size` bytes) idle again: Padding, stored first (release order: a kill leaves the
// call or nothing of it), then its other bytes zero, as the next call publishes only its non-zero fields.
inline __attribute__((always_inline)) void release(char* p, uint32_t size) noexcept {
  const uint32_t padding = static_cast<uint32_t>(trace::RecordType::Padding) | (size << 16);
  __atomic_store_n(reinterpret_cast<uint32_t*>(p), padding, __ATOMIC_RELEASE);
  std::atomic_signal_fence(std::memory_order_seq_cst);
#if defined(__SSE2__)
  // 16-byte stores, `size` a constant where inlined: GCC may make a memset of this size `rep stos`,
  // one instruction per 4 bytes (summary per-call instructions <= full mode's, docs/performance.md).
  // No loop either: GCC makes that one a memset again.
  static_assert(trace::kSummaryCallBytes <= 100, "every call record's slot is zeroed by the stores below");
  const __m128i z = _mm_setzero_si128();
  auto at = [p](uint32_t o) noexcept { return reinterpret_cast<__m128i*>(p + o); };
  _mm_storeu_si128(at(4), z);
  _mm_storeu_si128(at(size - 16), z);  // a call record has 40 bytes at least
  if (size > 36) _mm_storeu_si128(at(20), z);
  if (size > 52) _mm_storeu_si128(at(36), z);
  if (size > 68) _mm_storeu_si128(at(52), z);
  if (size > 84) _mm_storeu_si128(at(68), z);
#else
  __builtin_memset(p + 4, 0, size - 4);
#endif
}

// The slot's call (started at `start`, blocked `d` ns, histogram bucket `bucket`) counted in `r`,
// which holds fewer than kMaxCount calls, after the slot was released (release), the count last:
// a kill in between leaves the call uncounted (it had not returned to the application) or a
// histogram that holds one call more than `count` (readers accept it), never a call counted twice.
// True when `r` is full now (its count reached kMaxCount).
inline __attribute__((always_inline)) bool count_into(trace::SiteSummaryRecord* r, uint64_t start, uint64_t d,
                                                      uint64_t bucket) noexcept {
  ++r->histogram[bucket];
  r->total_ns += d;
  // max_ns is the first of the slowest: a call at least as slow as the second slowest is the only
  // one that can change either, or the first start (worst_ns is 0 until two calls are among them).
  // One test, not two (summary per-call instructions <= full mode's, docs/performance.md).
  if (AW_UNLIKELY(d >= r->worst_ns[trace::kSummaryWorstExemplars - 1])) note_worst(r, d, start);
  r->last_start_ns = start;
  std::atomic_signal_fence(std::memory_order_seq_cst);
#if defined(__x86_64__)
  // The count below kMaxCount = 2^31 is its low 32 bits (little-endian, high half zero): one add
  // whose sign says it reached kMaxCount, not a test before the call is counted (one instruction of
  // the idle synchronization's summary-mode figure, docs/performance.md).
  static_assert(kMaxCount == uint64_t{1} << 31);
  using Low = uint32_t __attribute__((may_alias));
  Low* const low = reinterpret_cast<Low*>(&r->count);
  const uint32_t n = *low + 1;
  *low = n;
  return static_cast<int32_t>(n) < 0;
#else
  return ++r->count >= kMaxCount;
#endif
}
// The same for the slot's completed call, which ended at `end`.
inline void fold_into(trace::SiteSummaryRecord* r, char* p, uint32_t size, uint64_t end) noexcept {
  const uint64_t start = reinterpret_cast<const trace::CallHead*>(p)->start_ns;
  const uint64_t d = end >= start ? end - start : 0;  // clocks of two CPUs a few ns apart
  release(p, size);
  if (AW_UNLIKELY(count_into(r, start, d, bucket_of(d)))) summary_full(r);
}
}  // namespace detail

// Where the calling thread's call record of `type` (`size` bytes) is published in summary mode: its
// slot (Padding, body zero), or nullptr (the call takes an appended record: no slot could be made).
// `*gen` gets the trace generation, as reserve_active's.
inline __attribute__((always_inline)) char* slot(trace::RecordType type, uint32_t size, uint32_t* gen) noexcept {
  const uint32_t g = trace_writer::generation();
  *gen = g;
  const thread_buffer::detail::State& s = thread_buffer::detail::tl_state;
  // No test of s.lost_count nor of the block: note_lost and a new block clear the slots (slot_slow
  // reports the losses first).
  char* p = detail::slots().slot[static_cast<unsigned>(type)];
  if (AW_UNLIKELY(s.key != g || !p)) return detail::slot_slow(type, size, g);
  return p;
}
// Whether the call record at `p` is the calling thread's slot for its type, in its current block.
inline bool is_slot(const char* p) noexcept {
  const uint16_t type = reinterpret_cast<const trace::RecordHeader*>(p)->type;
  return type < trace::kRecordTypeLimit && detail::slots().slot[type] == p;
}

// Summary mode's common call, before its record is completed: when `p` is the thread's slot of
// `type` (in flight), its call blocked kFoldMinNs <= d < the stack threshold (g_fold_range_ns) and
// matches the summary its call site's last call went to, and that call site's calls take no stack
// after the call unless they block (Slots::site_ra), the call is counted there and the slot
// released, without the stack policy's test or the completion's stores, which a record released at
// once does not need (summary per-call instructions <= full mode's, docs/performance.md). False,
// with nothing changed but the record's result, for every other call: the caller completes it and
// calls after_call. With the flight recorder's ring no site entry has its caller (fold_slow's
// `quiet` is false there): every call is completed, for the ring's copy, and the wrapper needs no
// mode test first (2 instructions of the idle synchronization's summary-mode figure,
// docs/performance.md; the ring's calls pay 2 more).
inline __attribute__((always_inline)) bool fold_in_flight(char* p, trace::RecordType type, int32_t result,
                                                          uint64_t end) noexcept {
  detail::Slots& t = detail::slots();
  // Not the slot (an appended record), or the thread left the slot's block during the call.
  if (p != t.slot[static_cast<unsigned>(type)]) return false;
  const uint32_t size = trace::record_info(static_cast<uint16_t>(type)).fixed;
  auto* h = reinterpret_cast<trace::CallHead*>(p);
  const uint64_t ra = h->end_ns;  // in flight: the caller
  const uint32_t site = detail::site_of(ra);
  const uint64_t start = h->start_ns;
  const uint64_t d = end - start;
  if (t.site_ra[site] != ra || d - kFoldMinNs >= g_fold_range_ns.load(std::memory_order_relaxed)) return false;
  trace::SiteSummaryRecord* r = t.sites[site];
  // The result stored (the slot is released or completed next), the flags compared as completed:
  // without kFlagInFlight. A summary in a site entry with its `ra` holds fewer than kMaxCount calls.
  h->result = result;
  if (AW_UNLIKELY(!detail::same_untimed(r->call, p, size / 8, trace::kFlagInFlight))) return false;
  detail::release(p, size);
  if (AW_UNLIKELY(detail::count_into(r, start, d, detail::double_bucket(d)))) detail::summary_full(r);
  return true;
}

// The calling thread's call record at `p` (published, completed: result, end time and stack set,
// kFlagInFlight cleared, the flight recorder's copy made), `ra` its caller: when it is the thread's
// slot (so in the thread's current block), folded into its signature's
// summary or moved out as a record of its own. Called from the wrapper after the real call returned
// (no reservation of this thread open). Inline: a call from a site already seen is compared with the
// summary the site cache names and counted without a call (summary mode's per-call instructions,
// docs/performance.md).
inline __attribute__((always_inline)) void after_call(char* p, trace::RecordType type, uint64_t ra, uint64_t end,
                                                      bool quiet) noexcept {
  detail::Slots& t = detail::slots();
  // Not the slot (an appended record), or the thread left the slot's block during the call: the
  // call keeps its record where it is.
  if (p != t.slot[static_cast<unsigned>(type)]) return;
  const uint32_t size = trace::record_info(static_cast<uint16_t>(type)).fixed;
  trace::SiteSummaryRecord* r = t.sites[detail::site_of(ra)];
  if (AW_UNLIKELY(!detail::same_untimed(r->call, p, size / 8) || r->count >= detail::kMaxCount))
    return detail::fold_slow(p, size, ra, quiet);
  detail::fold_into(r, p, size, end);
}

}  // namespace asyncwatch::site_summary
