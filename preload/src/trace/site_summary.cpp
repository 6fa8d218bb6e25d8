#include "site_summary.h"

#include <atomic>
#include <cstddef>
#include <cstring>

#include "thread_buffer.h"
#include "trace_writer.h"

namespace asyncwatch::site_summary {

std::atomic<uint8_t> g_mode{kOff};
std::atomic<uint64_t> g_fold_range_ns{0};
const trace::SiteSummaryRecord detail::kNoSummary{};

namespace {

using namespace asyncwatch::trace;
using detail::kMaxCount;
using detail::Slots;
using thread_buffer::detail::tl_state;

// A thread's signatures: open addressing on the record's hash, valid for the block of the thread's
// Slots (their `epoch`). The summaries and exemplars it points at are in that block; when the thread moves to
// another block they are left as they are (a reader adds up the summaries of one signature) and the
// index starts again.
constexpr uint32_t kSlots = 256;
constexpr uint32_t kProbes = 16;

// A signature's summary is made by its kSummaryFirstExemplars-th call (the first calls are exemplars):
// a call made once (an allocation, whose address is in its record) costs no summary.
struct Slot {
  SiteSummaryRecord* rec;  // the summary, nullptr while its calls are exemplars
  const char* first;       // the first exemplar's record, in the block (free slot: both null)
  uint32_t hash;
  uint32_t seen;  // exemplars kept
};
AW_TLS_SHARED Slot tl_index[kSlots];

using detail::word_at;

// The index's hash of a call record: its head's words but the times (type, size, api, driver
// function, flags, result, stack, stream kind) and the first two of its body (stream or handle, and
// bytes, kernel or repeat): every call record has them (56 bytes at least), and records alike in
// those but not in the rest only probe further (same_untimed decides).
inline uint32_t hash_of(const void* p) noexcept {
  static_assert(sizeof(SyncRecord) >= 7 * 8 && sizeof(StreamCreateRecord) >= 7 * 8 && sizeof(CaptureRecord) >= 7 * 8);
  uint64_t h = (word_at(p, 0) ^ 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
  h = (h ^ word_at(p, 1) ^ (word_at(p, 2) << 7)) * 0xc4ceb9fe1a85ec53ull;
  h = (h ^ word_at(p, 5) ^ (word_at(p, 6) << 13)) * 0xff51afd7ed558ccdull;
  return static_cast<uint32_t>(h >> 32);
}

// The thread is in a new block (or trace): its slots, site cache and index start again there.
void restart(Slots& t) noexcept {
  memset(t.slot, 0, sizeof t.slot);
  for (SiteSummaryRecord*& r : t.sites)
    r = const_cast<SiteSummaryRecord*>(&detail::kNoSummary);  // never written: no record matches it
  memset(t.site_ra, 0, sizeof t.site_ra);
  memset(tl_index, 0, sizeof tl_index);
  t.epoch = tl_state.block_epoch;
}

// A new summary of the signature `key` (`size` bytes, times zero) in the thread's block; nullptr when
// there is no room. The reservation may move the thread to a new block.
SiteSummaryRecord* create(const char* key, uint32_t size) noexcept {
  uint32_t gen;
  char* p = thread_buffer::reserve_active(sizeof(SiteSummaryRecord), &gen);
  if (!p) return nullptr;
  auto* r = reinterpret_cast<SiteSummaryRecord*>(p);
  memcpy(r->call, key, size);  // the rest of the reservation is zero (fresh file space)
  thread_buffer::commit(p, RecordType::SiteSummary, sizeof(SiteSummaryRecord));
  return r;
}

// The slot's call (`size` bytes at `p`) moved out to a record of its own at the block's end; `copy`
// gets its bytes. The slot is released first: a kill in between leaves the call out (it had not
// returned to the application), never twice. nullptr when it could not be written (counted as lost).
// The reservation may move the thread to a new block.
char* take_out(char* p, uint32_t size, char* copy) noexcept {
  memcpy(copy, p, size);
  detail::release(p, size);
  uint32_t gen;
  char* q = thread_buffer::reserve_active(size, &gen);
  if (!q) {
    thread_buffer::note_lost(thread_buffer::failure_reason());
    trace_writer::count_lost(1);
    return nullptr;
  }
  memcpy(q + sizeof(RecordHeader), copy + sizeof(RecordHeader), size - sizeof(RecordHeader));
  thread_buffer::commit(q, static_cast<RecordType>(reinterpret_cast<const RecordHeader*>(copy)->type), size);
  return q;
}

}  // namespace

char* detail::slot_slow(RecordType type, uint32_t size, uint32_t gen) noexcept {
  auto& s = tl_state;
  Slots& t = detail::slots();
  const auto i = static_cast<unsigned>(type);
  // Reserved as any record (the thread's first record of the trace sets it up, losses noted since its
  // last record are reported first: note_lost cleared the slots), published as Padding: fresh space,
  // so its bytes after the header are zero.
  uint32_t g;
  char* p = thread_buffer::reserve_active(size, &g);
  if (!p) return nullptr;
  thread_buffer::commit(p, RecordType::Padding, size);
  if (g != gen) return nullptr;  // another trace began meanwhile: the call's record is reserved afresh
  if (t.epoch != s.block_epoch) restart(t);
  t.slot[i] = p;
  return p;
}

void detail::note_worst(SiteSummaryRecord* r, uint64_t d, uint64_t start) noexcept {
  if (d > r->max_ns) r->max_ns = d;
  if (!r->first_start_ns) r->first_start_ns = start;
  if (d > r->worst_ns[kSummaryWorstExemplars - 1] || !r->worst_start_ns[kSummaryWorstExemplars - 1]) {
    uint32_t i = kSummaryWorstExemplars - 1;  // slowest first: the call takes its place among them
    for (; i > 0 && (d > r->worst_ns[i - 1] || !r->worst_start_ns[i - 1]); --i) {
      r->worst_ns[i] = r->worst_ns[i - 1];
      r->worst_start_ns[i] = r->worst_start_ns[i - 1];
    }
    r->worst_ns[i] = d;
    r->worst_start_ns[i] = start;
  }
}

void detail::fold_slow(char* p, uint32_t size, uint64_t ra, bool quiet) noexcept {
  auto& s = tl_state;
  Slots& t = detail::slots();
  alignas(8) char copy[kSummaryCallBytes];
  static_assert(offsetof(CallHead, start_ns) == 24 && offsetof(CallHead, end_ns) == 32);
  if (size > kSummaryCallBytes || size % 8 || size < 7 * 8) {  // not a call record of the table (hash_of reads 7 words)
    take_out(p, size, copy);
    return;
  }
  const uint32_t h = hash_of(p);
  Slot* c = nullptr;
  for (uint32_t i = 0, at = h; i < kProbes; ++i, ++at) {
    Slot& x = tl_index[at % kSlots];
    if (!x.rec && !x.first) {  // the signature's first call
      x = Slot{nullptr, nullptr, h, 0};
      c = &x;
      break;
    }
    if (x.hash == h && same_untimed(x.rec ? reinterpret_cast<const char*>(x.rec->call) : x.first, p, size / 8)) {
      c = &x;
      break;
    }
  }
  if (!c) {  // the index is full here: the call keeps its record
    take_out(p, size, copy);
    return;
  }
  if (c->rec && c->rec->count < kMaxCount) {
    SiteSummaryRecord* r = c->rec;
    fold_into(r, p, size, reinterpret_cast<const CallHead*>(p)->end_ns);
    if (r->count < kMaxCount) {
      t.sites[site_of(ra)] = r;
      t.site_ra[site_of(ra)] = quiet ? ra : 0;
    }
    return;
  }
  // An exemplar (and the summary made by the last of them), or a full summary's successor: the call
  // keeps its record, moved out of the slot; the new summary comes after it.
  const char* q = take_out(p, size, copy);
  if (t.epoch != s.block_epoch) {  // moved to a new block: the index starts again with it
    restart(t);
    c = &tl_index[h % kSlots];
    *c = Slot{nullptr, nullptr, h, 0};
  }
  if (!c->rec) {
    if (!c->first) {
      if (!q) {
        *c = Slot{};
        return;
      }
      c->first = q;
    }
    if (++c->seen < kSummaryFirstExemplars) return;
  }
  auto* head = reinterpret_cast<CallHead*>(copy);
  head->start_ns = head->end_ns = 0;  // the signature has no times
  SiteSummaryRecord* r = create(copy, size);
  if (!r) return;
  if (t.epoch != s.block_epoch) {
    restart(t);
    c = &tl_index[h % kSlots];
    *c = Slot{r, nullptr, h, kSummaryFirstExemplars};
  } else {
    c->rec = r;
  }
  t.sites[site_of(ra)] = r;
  t.site_ra[site_of(ra)] = quiet ? ra : 0;
}

void detail::summary_full(SiteSummaryRecord* r) noexcept {
  Slots& t = detail::slots();
  for (uint32_t i = 0; i < kSites; ++i)
    if (t.sites[i] == r) t.site_ra[i] = 0;
}

}  // namespace asyncwatch::site_summary
