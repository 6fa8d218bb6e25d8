// What the analysis keeps per group of flagged calls during the pass (a group: one rule, cause,
// API, kernel and call stack), and the call sites the groups are merged by in finish().
#pragma once

#include "events/duration_stats.h"
#include "events/streams.h"
#include "findings/impact.h"
#include "findings/rules.h"
#include "symbols/call_site.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace asyncwatch::analysis {

constexpr uint32_t kGraphKernel = events::StreamTable::kGraphKernel;
constexpr size_t kMaxWaitedKernels = 64;     // distinct kernels a finding names as waited for
constexpr size_t kMaxRangesPerGroup = 64;    // distinct NVTX ranges a finding names
constexpr uint32_t kMaxRangeDomains = 64;    // NVTX domains followed (the library makes at most 32)
constexpr size_t kMaxRangeDepth = 256;       // push ranges open on one thread that are followed
constexpr size_t kMaxOpenRanges = 4096;      // start/end ranges open at once that are followed
constexpr size_t kMaxThreadsPerGroup = 256;  // threads a group keeps its blocked time for (shares of wall)
constexpr size_t kMaxRepeatKeys = 4096;      // distinct sizes/addresses a group remembers (implicit-sync)

// 16 bytes without padding, in this order: the first 8 and the last 8 are each one 64-bit word
// (compared and hashed as two words: observe builds, hashes and compares a key per grouped call).
struct GroupKey {
  uint8_t id;
  uint8_t cause;
  int8_t direction;  // -1 = none
  int8_t memory;     // -1 = none
  uint16_t api;      // Api id as recorded
  uint16_t driver_fn;
  uint32_t kernel;
  uint32_t site;  // stack id during the pass
  uint64_t word(size_t i) const {
    uint64_t w;
    std::memcpy(&w, reinterpret_cast<const char*>(this) + 8 * i, sizeof w);
    return w;
  }
  bool operator==(const GroupKey& o) const { return word(0) == o.word(0) && word(1) == o.word(1); }
};
static_assert(sizeof(GroupKey) == 16 && offsetof(GroupKey, kernel) == 8);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GroupKey's words");
struct GroupKeyHash {
  // (id << 56) ^ (cause << 48) ^ (direction << 40) ^ (memory << 32) ^ api ^ (driver_fn << 16), mixed with
  // the kernel and the site, from the two words: those four bytes are word 0's low half, byte-swapped.
  size_t operator()(const GroupKey& k) const {
    const uint64_t w0 = k.word(0), w1 = k.word(1);
    uint64_t h = __builtin_bswap64(w0 & 0xffffffffu) ^ ((w0 >> 32) & 0xffffu) ^ ((w0 >> 48) << 16);
    h ^= ((w1 & 0xffffffffu) * 0x9e3779b97f4a7c15ull) ^ ((w1 >> 32) * 0xc2b2ae3d27d4eb4full);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Launches waited for, by kernel name id: at most kMaxWaitedKernels ids (add() refuses more).
// Open addressing in a table grown at 3/4 load (an explicit synchronization adds each kernel
// its stream ran since it was last idle: a hash-map look-up each was most of its cost; at half
// load these tables were the largest part of a pass with 100 k call sites: docs/performance.md).
// 8-byte slots (a 32-bit count; a count past it goes on in `high_`, exact) and the slots in use in
// a bitmask: half the lines of 16-byte slots, each a cache miss at random per kernel (the JSON
// report's records per second).
class WaitedKernels {
 public:
  bool add(uint32_t id, uint64_t n) {
    if (__builtin_expect(size_ >= limit_, 0)) {  // full: refuse new ids at kMaxWaitedKernels, else grow
      if (size_ >= kMaxWaitedKernels) return find_add(id, n, false);
      grow();
    }
    return find_add(id, n, true);
  }
  // Adds each kernel of `t` (add() for each, in its order; the rest, refused, go to *others). Ids
  // already held, the common case, are found at their home slot without add()'s tests.
  void add_all(const KernelTally& t, uint64_t* others) {
    if (__builtin_expect(slots_.empty(), 0)) {
      t.each([&](uint32_t id, uint64_t n) {
        if (!add(id, n)) *others += n;
      });
      return;
    }
    Slot* slots = slots_.data();
    size_t mask = slots_.size() - 1;
    t.each([&](uint32_t id, uint64_t n) {
      const size_t i = (id * 2654435761u) & mask;
      Slot& s = slots[i];
      if (__builtin_expect(used(i) && s.id == id, 1)) {
        count(s, n);
        return;
      }
      if (!add(id, n)) *others += n;
      slots = slots_.data();  // add() may have grown the table
      mask = slots_.size() - 1;
    });
  }
  size_t size() const { return size_; }
  template <class F>
  void each(F&& f) const {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (used(i)) f(slots_[i].id, slots_[i].n + high(slots_[i].id));
  }

 private:
  struct Slot {
    uint32_t id = 0;
    uint32_t n = 0;  // the count's part below 2^32 (the rest in high_)
  };
  static constexpr size_t kMaxSlots = 128;  // kMaxWaitedKernels at 3/4 load, a power of two
  static_assert(kMaxWaitedKernels * 4 / 3 <= kMaxSlots && kMaxWaitedKernels <= kMaxSlots * 3 / 4);
  static bool bit(const uint64_t* mask, size_t i) { return (mask[i >> 6] >> (i & 63)) & 1; }
  bool used(size_t i) const { return bit(used_, i); }
  uint64_t high(uint32_t id) const {
    if (!high_) return 0;
    auto it = high_->find(id);
    return it == high_->end() ? 0 : it->second;
  }
  void count(Slot& s, uint64_t n) {
    if (__builtin_expect(n > UINT32_MAX - s.n, 0)) {  // past 32 bits: the count goes on in high_
      if (!high_) high_ = std::make_unique<std::unordered_map<uint32_t, uint64_t>>();
      uint64_t& h = (*high_)[s.id];
      h += s.n;
      h += n;  // (wraps as the 64-bit count would)
      s.n = 0;
      return;
    }
    s.n += static_cast<uint32_t>(n);
  }
  bool find_add(uint32_t id, uint64_t n, bool may_insert) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = (id * 2654435761u) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!used(i)) {
        if (!may_insert) return false;
        used_[i >> 6] |= uint64_t{1} << (i & 63);
        s = Slot{id, 0};
        count(s, n);
        ++size_;
        return true;
      }
      if (s.id == id) {
        count(s, n);
        return true;
      }
    }
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const uint64_t old_used[2] = {used_[0], used_[1]};
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    used_[0] = used_[1] = 0;
    size_ = 0;
    limit_ = static_cast<uint32_t>(std::min(kMaxWaitedKernels, slots_.size() * 3 / 4));
    for (size_t j = 0; j < old.size(); ++j)
      if (bit(old_used, j)) find_add(old[j].id, old[j].n, true);  // (its high_ part stays under its id)
  }
  std::vector<Slot> slots_;  // power of two, never full (grown at 3/4 load, kMaxSlots at most)
  uint32_t size_ = 0;
  uint32_t limit_ = 0;         // add() grows the table (or refuses new ids) at this size: one test per call
  uint64_t used_[2] = {0, 0};  // bit i: slots_[i] holds a kernel
  std::unique_ptr<std::unordered_map<uint32_t, uint64_t>> high_;  // id -> its count's part past 32 bits
};

// tid -> blocked ns, bounded (the first kMaxThreadsPerGroup threads): the first kInline in the
// group itself, most groups having a few threads (a vector's entries were a cache miss a call
// apart from the group: the JSON report's records per second), the rest in a vector sorted by tid.
class ThreadBlocked {
 public:
  static constexpr uint32_t kInline = 4;
  __attribute__((always_inline)) void add(uint32_t tid, uint64_t ns) {
    for (uint32_t i = 0; i < inline_n_; ++i)
      if (tids_[i] == tid) {
        ns_[i] += ns;
        return;
      }
    add_more(tid, ns);
  }
  size_t size() const { return inline_n_ + more_.size(); }
  template <class F>
  void each(F&& f) const {  // by tid, ascending (as the one sorted vector was)
    std::pair<uint32_t, uint64_t> first[kInline];
    for (uint32_t i = 0; i < inline_n_; ++i) first[i] = {tids_[i], ns_[i]};
    std::sort(first, first + inline_n_);
    uint32_t i = 0;
    for (const auto& [tid, ns] : more_) {
      for (; i < inline_n_ && first[i].first < tid; ++i) f(first[i].first, first[i].second);
      f(tid, ns);
    }
    for (; i < inline_n_; ++i) f(first[i].first, first[i].second);
  }

 private:
  void add_more(uint32_t tid, uint64_t ns) {
    if (inline_n_ < kInline) {  // (the vector is empty until the inline entries are full)
      tids_[inline_n_] = tid;
      ns_[inline_n_++] = ns;
      return;
    }
    auto t = std::lower_bound(more_.begin(), more_.end(), tid,
                              [](const std::pair<uint32_t, uint64_t>& e, uint32_t id) { return e.first < id; });
    if (t != more_.end() && t->first == tid)
      t->second += ns;
    else if (size() < kMaxThreadsPerGroup)
      more_.insert(t, {tid, ns});
  }
  uint32_t tids_[kInline] = {};
  uint64_t ns_[kInline] = {};
  uint32_t inline_n_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> more_;
};

// The fields observe() updates for every call first, side by side (with the key the group cache
// compares, about 4 lines); the rest after them. The groups are out of the caches between their
// calls: spread over the group, and with the threads' times apart, they were about 8 misses a
// call (the JSON report's records per second, docs/performance.md). Not aligned to a line:
// alignas(64) made no fewer misses (callgrind's cache model) and cost 160 bytes a group.
struct Group {
  GroupKey key{};  // its key in the map (ProcessAnalyzer::group's cache holds only the pointer)
  uint64_t count = 0;
  uint64_t bytes = 0;
  DurationStats blocked;
  uint64_t evidence_checked = 0;
  uint64_t completed_at_return = 0;
  uint64_t drained = 0;
  uint64_t at_threshold = 0;
  uint64_t event_waits = 0;
  uint32_t stack_id = 0;  // a stack that shows the call site
  uint64_t waited_others = 0;
  ThreadBlocked thread_blocked;
  impact::Sink sink;  // what fixing the calls would save end to end (impact.h); its owner is `serial`
  WaitedKernels waited;
  uint32_t serial = 0;                 // order of creation (CallMark::finding before finish maps it)
  uint32_t cause_serial = UINT32_MAX;  // sink.cause's owner, read before the groups are freed (finish)
  uint64_t outstanding_max = 0;
  uint64_t pending_copies = 0, pending_copy_bytes = 0;  // the most of one call (first-launch)
  bool context_creation_visible = false;
  bool ended_cleanly = true;
  // NVTX range name id -> calls made inside it (bounded); implicit-sync: the addresses freed
  // (frees) seen, and how many calls repeated one (a free of one of them, an allocation made again). Made on first use: most groups have
  // neither (two empty hash maps in every group were 112 bytes).
  std::unique_ptr<std::unordered_map<uint32_t, uint64_t>> ranges;
  std::unique_ptr<std::unordered_map<uint64_t, uint32_t>> repeat_keys;
  uint64_t repeated = 0;
  // The first call's graph memcpy node (blocking-launch of a graph), for building the finding; the
  // other fields of that call are in the key (not the whole Observation: groups can be 100 k+).
  uint64_t graph_pageable_nodes = 0;
  uint64_t graph_memory_nodes = 0;
  GraphMemcpyNode graph_node;
  ConcurrentCall concurrent;  // the first call's (blocking-launch other-thread-call)
};

// A call site: the frame, and the library function it called (module empty when none).
struct Site {
  Frame frame;
  Frame via;
  bool user = true;
  uint32_t python_lender = 0;             // the frame is a Python frame borrowed from another thread (Finding)
  const char* framework_phase = nullptr;  // made inside a framework's compilation (framework_phase)
};

struct SiteRef {
  uint32_t site = 0;            // 0 = unknown
  uint32_t api_override = 0;    // interned runtime API name, 0 = none
  bool chevron_launch = false;  // the stack shows nvcc's launch stub: kernel<<<...>>>
};

}  // namespace asyncwatch::analysis
