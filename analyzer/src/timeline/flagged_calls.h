// The flagged calls of one trace by thread and start time (the analysis' CallMarks), for the
// timeline and the HTML report's picture: a sorted vector per thread, looked up by binary search.
// (A hash of (thread, start) took a third of the timeline's time on the synthetic benchmark
// trace, docs/performance.md.) Lookups of one thread in a row reuse its vector.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace asyncwatch {

template <class V>
class FlaggedCalls {
 public:
  FlaggedCalls() = default;
  FlaggedCalls(const FlaggedCalls&) = delete;  // last_ points into by_thread_ (a move keeps its nodes)
  FlaggedCalls& operator=(const FlaggedCalls&) = delete;
  FlaggedCalls(FlaggedCalls&&) = default;
  FlaggedCalls& operator=(FlaggedCalls&&) = default;
  void add(uint32_t tid, uint64_t start_ns, V value) {
    by_thread_[tid].emplace_back(start_ns, value);
    ++size_;
    sorted_ = false;
  }
  // The value of the call of `tid` that started at `start_ns`, null when it is not flagged.
  const V* find(uint32_t tid, uint64_t start_ns) {
    if (!sorted_) sort();
    if (!last_ || last_tid_ != tid) {
      auto it = by_thread_.find(tid);
      if (it == by_thread_.end()) return nullptr;
      last_ = &it->second;
      last_tid_ = tid;
    }
    auto it = std::lower_bound(last_->begin(), last_->end(), start_ns,
                               [](const std::pair<uint64_t, V>& e, uint64_t t) { return e.first < t; });
    return it != last_->end() && it->first == start_ns ? &it->second : nullptr;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void sort() {
    for (auto& [tid, v] : by_thread_)
      std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    sorted_ = true;
    last_ = nullptr;
  }
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, V>>> by_thread_;
  std::vector<std::pair<uint64_t, V>>* last_ = nullptr;
  uint32_t last_tid_ = 0;
  size_t size_ = 0;
  bool sorted_ = true;
};

}  // namespace asyncwatch
