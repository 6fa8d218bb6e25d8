#include "site_summary.h"

#include <atomic>
#include <cstddef>
#include <cstring>

#include "flight_ring.h"
#include "thread_buffer.h"

namespace asyncwatch::site_summary {

std::atomic<bool> g_enabled{false};

namespace {

using namespace asyncwatch::trace;
using thread_buffer::detail::tl_state;

inline void compiler_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// A thread's signatures: open addressing on the record's hash. The summaries it points at are in the
// block `block`; when the thread moves to another block they are left as they are (a reader adds up
// the summaries of one signature) and the index starts again.
constexpr uint32_t kSlots = 256;
constexpr uint32_t kProbes = 16;
// A summary takes no more calls than its 32-bit histogram counts can hold; the next goes to a new one.
constexpr uint64_t kMaxCount = uint64_t{1} << 31;

// A signature's summary is made by its kSummaryFirstExemplars-th call (the first calls are exemplars):
// a call made once (an allocation, whose address is in its record) costs no summary.
struct Slot {
  SiteSummaryRecord* rec;  // the summary, nullptr while its calls are exemplars
  const char* first;       // the first exemplar's record, in the index's block (free slot: both null)
  uint32_t hash;
  uint32_t seen;  // exemplars kept
};
struct Index {
  const char* block;
  uint32_t generation;
  Slot slots[kSlots];
};
AW_TLS_SHARED Index tl_index;

// Word loops rather than memcpy/memcmp/memset: records are a few 8-byte words, and the library calls
// of a variable size cost more than the loops (callgrind, docs/performance.md).
inline uint64_t word_at(const void* p, uint32_t i) noexcept {
  uint64_t w;
  __builtin_memcpy(&w, static_cast<const char*>(p) + 8 * i, 8);
  return w;
}
// Whether the records at `a` and `b` (`n` words) are the same but for their times (words 3 and 4).
inline bool same_untimed(const void* a, const void* b, uint32_t n) noexcept {
  uint64_t diff = (word_at(a, 0) ^ word_at(b, 0)) | (word_at(a, 1) ^ word_at(b, 1)) | (word_at(a, 2) ^ word_at(b, 2));
  for (uint32_t i = 5; i < n; ++i) diff |= word_at(a, i) ^ word_at(b, i);
  return diff == 0;
}

// The index's hash of a call record: its head's words but the times (type, size, api, driver
// function, flags, result, stack, stream kind) and the first two of its body (stream or handle, and
// bytes, kernel or repeat), read in place: every call record has them (56 bytes at least), and
// records alike in those but not in the rest only probe further (same_untimed decides). Five fixed
// words instead of a loop over all of them and a copy of the record: part of the cut from 599 to
// the figure in docs/performance.md (a launch's fold, callgrind).
inline uint32_t hash_of(const void* p) noexcept {
  static_assert(sizeof(SyncRecord) >= 7 * 8 && sizeof(StreamCreateRecord) >= 7 * 8 && sizeof(CaptureRecord) >= 7 * 8);
  uint64_t h = (word_at(p, 0) ^ 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
  h = (h ^ word_at(p, 1) ^ (word_at(p, 2) << 7)) * 0xc4ceb9fe1a85ec53ull;
  h = (h ^ word_at(p, 5) ^ (word_at(p, 6) << 13)) * 0xff51afd7ed558ccdull;
  return static_cast<uint32_t>(h >> 32);
}

// A new summary of the signature of the record at `call` (`size` bytes) in the thread's block;
// nullptr when there is no room. The reservation may move the thread to a new block: the index then
// starts again there.
SiteSummaryRecord* create(const char* call, uint32_t size) noexcept {
  // Copied first: the reservation may retire the block `call` is in, and its segment may then go.
  alignas(8) char key[kSummaryCallBytes];
  memcpy(key, call, size);
  auto* head = reinterpret_cast<CallHead*>(key);
  head->start_ns = head->end_ns = 0;  // the signature has no times
  uint32_t gen;
  char* p = thread_buffer::reserve_active(sizeof(SiteSummaryRecord), &gen);
  if (!p) return nullptr;
  auto* r = reinterpret_cast<SiteSummaryRecord*>(p);
  memcpy(r->call, key, size);  // the rest of the reservation is zero (fresh file space)
  thread_buffer::commit(p, RecordType::SiteSummary, sizeof(SiteSummaryRecord));
  return r;
}

// The record at `p` (`size` bytes, completed) out of the block: the bytes handed back when nothing
// was written after it, else Padding. The header goes first, so a kill leaves either the record or
// nothing of it; the bytes are zero again before they can be handed out (the write protocol's
// fresh-space rule, thread_buffer.h).
void erase(char* p, uint32_t size) noexcept {
  auto& s = tl_state;
  auto& c = s.level[0];
  s.open = 1;  // a signal handler's writes meanwhile go to level 1
  compiler_fence();
  const bool last = p + size == c.block + c.used;
  RecordHeader h{static_cast<uint16_t>(last ? RecordType::None : RecordType::Padding),
                 static_cast<uint16_t>(last ? 0 : size)};
  uint32_t word;
  memcpy(&word, &h, sizeof word);
  __atomic_store_n(reinterpret_cast<uint32_t*>(p), word, __ATOMIC_RELEASE);
  compiler_fence();
  __atomic_store_n(reinterpret_cast<uint32_t*>(p) + 1, 0u, __ATOMIC_RELAXED);  // the rest of the first word
  for (uint32_t i = 8; i < size; i += 8) {
    const uint64_t zero = 0;
    __builtin_memcpy(p + i, &zero, 8);
  }
  compiler_fence();
  if (last) c.used -= size;
  compiler_fence();
  s.open = 0;
}

}  // namespace

void fold(CallHead* rec) noexcept {
  flight_ring::after_call(rec);  // the flight recorder's raw copy, before the record may be folded away
  auto& s = tl_state;
  char* const p = reinterpret_cast<char*>(rec);
  const uint32_t size = rec->h.size;
  char* const block = s.level[0].block;
  // Only a record of the thread's current block, outside any reservation (not a signal handler's
  // call nested in another), of a size the summary holds.
  if (s.open || !block || p < block || p + size > block + s.level[0].used || size > kSummaryCallBytes || size % 8)
    return;
  Index& ix = tl_index;
  if (ix.block != block || ix.generation != s.generation) {
    memset(ix.slots, 0, sizeof ix.slots);
    ix.block = block;
    ix.generation = s.generation;
  }
  const uint64_t start = rec->start_ns, end = rec->end_ns;
  const uint64_t d = end >= start ? end - start : 0;
  // The record is compared without its times (CallHead's words 3 and 4).
  static_assert(offsetof(CallHead, start_ns) == 24 && offsetof(CallHead, end_ns) == 32);
  const uint32_t words = size / 8;
  if (words < 7) return;  // not a call record of the table (hash_of reads 7 words)
  const uint32_t h = hash_of(p);
  Slot* slot = nullptr;
  for (uint32_t i = 0, at = h; i < kProbes; ++i, ++at) {
    Slot& c = ix.slots[at % kSlots];
    if (!c.rec && !c.first) {
      c = Slot{nullptr, p, h, 1};  // the signature's first call: an exemplar
      return;
    }
    if (c.hash == h && same_untimed(c.rec ? reinterpret_cast<const char*>(c.rec->call) : c.first, p, words)) {
      slot = &c;
      break;
    }
  }
  if (!slot) return;  // the index is full here: the call keeps its record
  if (!slot->rec || slot->rec->count >= kMaxCount) {
    // An exemplar (and the summary made after the last of them), or a full summary's successor
    // (this call keeps its record: the new summary comes after it).
    if (!slot->rec && ++slot->seen < kSummaryFirstExemplars) return;
    SiteSummaryRecord* r = create(p, size);
    if (!r) return;
    if (s.level[0].block != ix.block) {
      // The thread moved to a new block (the summary is there): the index starts again with it.
      memset(ix.slots, 0, sizeof ix.slots);
      ix.block = s.level[0].block;
      ix.slots[h % kSlots] = Slot{r, nullptr, h, kSummaryFirstExemplars};
      return;
    }
    slot->rec = r;
    return;
  }
  erase(p, size);
  // The counts, the count last: a kill in between leaves a histogram that holds one call more than
  // `count` (readers accept it), never a call counted that the histogram lacks.
  SiteSummaryRecord* r = slot->rec;
  ++r->histogram[summary_bucket(d)];
  r->total_ns += d;
  if (d > r->max_ns) r->max_ns = d;
  if (d > r->worst_ns[kSummaryWorstExemplars - 1] || !r->worst_start_ns[kSummaryWorstExemplars - 1]) {
    uint32_t i = kSummaryWorstExemplars - 1;  // slowest first: the call takes its place among them
    for (; i > 0 && (d > r->worst_ns[i - 1] || !r->worst_start_ns[i - 1]); --i) {
      r->worst_ns[i] = r->worst_ns[i - 1];
      r->worst_start_ns[i] = r->worst_start_ns[i - 1];
    }
    r->worst_ns[i] = d;
    r->worst_start_ns[i] = start;
  }
  if (!r->first_start_ns) r->first_start_ns = start;
  r->last_start_ns = start;
  compiler_fence();
  ++r->count;
}

}  // namespace asyncwatch::site_summary
