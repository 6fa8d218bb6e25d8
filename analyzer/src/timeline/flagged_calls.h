// The flagged calls of one trace by thread and start time (the analysis' CallMarks), for the
// timeline and the HTML report's picture: a sorted vector per thread, looked up by binary search.
// (A hash of (thread, start) took a third of the timeline's time on the synthetic benchmark
// trace, docs/performance.md.)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace asyncwatch {

template <class V>
class FlaggedCalls {
 public:
  FlaggedCalls() = default;
  FlaggedCalls(const FlaggedCalls&) = delete;  // recent_ points into by_thread_ (a move keeps its nodes)
  FlaggedCalls& operator=(const FlaggedCalls&) = delete;
  FlaggedCalls(FlaggedCalls&&) = default;
  FlaggedCalls& operator=(FlaggedCalls&&) = default;
  struct Thread;
  void add(uint32_t tid, uint64_t start_ns, V value) {
    // The marks come in walk order: runs of one thread (no hash look-up each).
    if (!adding_ || adding_tid_ != tid) {
      adding_ = &by_thread_[tid];
      adding_tid_ = tid;
    }
    adding_->calls.emplace_back(start_ns, value);
    ++size_;
    sorted_ = false;
  }
  // The value of the call of `tid` that started at `start_ns`, null when it is not flagged. A
  // thread's calls asked for in time order (a walk of the trace) each cost a step from the last
  // answer, not a search; an earlier one is searched for.
  const V* find(uint32_t tid, uint64_t start_ns) {
    if (!sorted_) sort();
    return find(thread(tid), start_ns);
  }
  // The flagged calls of `tid` (null: none), for a caller that keeps its own per-thread state and
  // asks find(thread, start) without looking the thread up each time (the HTML picture).
  Thread* calls_of(uint32_t tid) {
    if (!sorted_) sort();
    auto it = by_thread_.find(tid);
    return it == by_thread_.end() ? nullptr : &it->second;
  }
  // Inline: once per call of a walk (the HTML report's time over the JSON report's); the common
  // case, the call at or before the thread's next flagged one, costs two comparisons.
  __attribute__((always_inline)) static const V* find(Thread* t, uint64_t start_ns) {
    if (!t) return nullptr;
    const auto& v = t->calls;
    const size_t i = t->next;
    if (i < v.size() && v[i].first >= start_ns && (i == 0 || v[i - 1].first < start_ns))
      return v[i].first == start_ns ? &v[i].second : nullptr;
    return find_stepping(t, start_ns);
  }
  static const V* find_stepping(Thread* t, uint64_t start_ns) {
    const auto& v = t->calls;
    size_t i = t->next;
    if (i > v.size() || (i > 0 && v[i - 1].first >= start_ns)) i = 0;  // earlier than the last answer
    for (size_t steps = 0; i < v.size() && v[i].first < start_ns; ++i)
      if (++steps == 8) {
        i = static_cast<size_t>(
            std::lower_bound(v.begin() + static_cast<std::ptrdiff_t>(i), v.end(), start_ns,
                             [](const std::pair<uint64_t, V>& e, uint64_t s) { return e.first < s; }) -
            v.begin());
        break;
      }
    t->next = i;
    return i < v.size() && v[i].first == start_ns ? &v[i].second : nullptr;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  struct Thread {
    std::vector<std::pair<uint64_t, V>> calls;  // by start
    size_t next = 0;                            // the index of the last answer (a walk goes on from it)
  };

 private:
  // The thread's calls; the last few threads asked for are kept in a small array (a walk of the
  // trace switches threads at nearly every record: a hash look-up each was most of find's cost).
  Thread* thread(uint32_t tid) {
    for (const Recent& r : recent_)
      if (r.used && r.tid == tid) return r.thread;
    auto it = by_thread_.find(tid);
    Thread* t = it == by_thread_.end() ? nullptr : &it->second;
    recent_[recent_next_] = Recent{tid, true, t};
    recent_next_ = (recent_next_ + 1) % kRecent;
    return t;
  }
  void sort() {
    auto by_start = [](const auto& a, const auto& b) { return a.first < b.first; };
    for (auto& [tid, t] : by_thread_) {
      // A walk's marks of one thread are in time order already: checked, not sorted again.
      if (!std::is_sorted(t.calls.begin(), t.calls.end(), by_start))
        std::stable_sort(t.calls.begin(), t.calls.end(), by_start);
      t.next = 0;
    }
    sorted_ = true;
    recent_ = {};
  }
  static constexpr size_t kRecent = 8;
  std::unordered_map<uint32_t, Thread> by_thread_;
  struct Recent {
    uint32_t tid = 0;
    bool used = false;
    Thread* thread = nullptr;  // null: the thread has no flagged call
  };
  std::array<Recent, kRecent> recent_{};
  size_t recent_next_ = 0;
  Thread* adding_ = nullptr;  // the thread add() appended to last (nodes of by_thread_ stay put)
  uint32_t adding_tid_ = 0;
  size_t size_ = 0;
  bool sorted_ = true;
};

}  // namespace asyncwatch
