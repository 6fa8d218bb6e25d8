#include "stream_engine.h"

#include <sys/prctl.h>

#include <algorithm>

#include "host_wait.h"
#include "sim_config.h"

namespace aw_sim {
namespace {

constexpr unsigned kNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING

}  // namespace

void wait_for_dependency(const Dependency& d) {
  if (!d.stream || d.stream->completed() >= d.seq) return;
  std::unique_lock<std::mutex> lock(progress_mutex());
  progress_cv().wait(lock, [&] { return d.stream->completed() >= d.seq; });
}

Stream::Stream(Kind kind, unsigned flags, int priority, StreamTable* table)
    : kind_(kind), flags_(flags), priority_(priority), table_(table) {}

int Stream::device() const { return table_->device(); }

Stream::~Stream() = default;

bool Stream::synchronizes_with_legacy() const {
  return kind_ == Kind::PerThread || (kind_ == Kind::Created && !(flags_ & kNonBlocking));
}

void Stream::start_worker() {
  // The worker owns a reference: a destroyed stream still finishes its queued work.
  std::thread([self = shared_from_this()] { self->run_worker(); }).detach();
}

uint64_t Stream::enqueue(StreamOp op) {
  std::lock_guard<std::mutex> order(enqueue_mutex_);
  std::vector<Dependency> implicit = table_->implicit_dependencies(*this);
  op.deps.insert(op.deps.end(), implicit.begin(), implicit.end());
  // Bounded launch queue: the caller blocks while the stream holds queue_depth pending operations.
  const uint64_t depth = config().queue_depth;
  spin_until([&] { return enqueued_.load() - completed_.load() < depth; });
  op.enqueue_ns = now_ns();
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(op));
    seq = enqueued_.fetch_add(1) + 1;
  }
  work_ready_.notify_one();
  return seq;
}

void Stream::host_wait(uint64_t seq) const {
  spin_until([&] { return completed_.load() >= seq; });
}

void Stream::host_synchronize() {
  if (kind_ == Kind::Legacy) {
    // Synchronizing the legacy stream waits for earlier work of every blocking stream too: a marker
    // enqueued on the legacy stream carries exactly those dependencies.
    StreamOp marker;
    marker.what = "legacy stream synchronize";
    host_wait(enqueue(std::move(marker)));
    return;
  }
  host_wait(enqueued_.load());
}

std::shared_ptr<CaptureSession> Stream::capture() const {
  std::lock_guard<std::mutex> lock(capture_mutex_);
  return capture_;
}

void Stream::retire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    retiring_ = true;
  }
  work_ready_.notify_one();
}

uint64_t Stream::end_ns(uint64_t seq) const {
  if (seq == 0 || seq > completed_.load() || completed_.load() - seq >= kEndRing) return 0;
  return ends_[seq % kEndRing].load();
}

void Stream::run_worker() {
  // The worker stands for the GPU: its sleeps should end close to on time (default slack: 50 us).
  // 10 us keeps completions of 200 us kernels within 5% while still batching completions of
  // kernels shorter than a sleep system call costs.
  prctl(PR_SET_TIMERSLACK, 10000UL, 0UL, 0UL, 0UL);
  uint64_t device_clock = 0;  // simulated end of the previous operation
  for (;;) {
    StreamOp* op = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return !queue_.empty() || retiring_; });
      if (queue_.empty()) return;
      op = &queue_.front();  // stays valid: deque push_back does not move elements
    }
    uint64_t ready = op->enqueue_ns;
    for (const Dependency& d : op->deps) {
      wait_for_dependency(d);
      if (d.stream) ready = std::max(ready, d.stream->end_ns(d.seq));
    }
    // Everything `start` depends on has already been published, so start <= now: no sleep here.
    const uint64_t start = std::max(device_clock, ready);
    uint64_t end = start + op->duration_ns;
    if (op->start_delay_ns) sleep_until(start + op->start_delay_ns);
    if (op->body) {
      const uint64_t body_start = now_ns();
      running_op_start_ns_.store(start);
      op->body();
      // Real work (a copy slower than the model, a long host function) extends the operation.
      end = std::max(end, start + op->start_delay_ns + (now_ns() - body_start));
    } else {
      end = std::max(end, start + op->start_delay_ns);
    }
    sleep_until(end);  // returns at once, without a system call, when `end` has passed
    device_clock = end;
    const uint64_t seq = completed_.load() + 1;
    ends_[seq % kEndRing].store(end);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.pop_front();
    }
    completed_.fetch_add(1);
    notify_progress();
  }
}

// ---- StreamTable ----

namespace {
StreamTable** tables() {
  // One table per possible device, leaked: detached workers outlive static destruction.
  static StreamTable** t = [] {
    auto** out = new StreamTable*[kMaxDevices];
    for (int i = 0; i < kMaxDevices; ++i) out[i] = new StreamTable(i);
    return out;
  }();
  return t;
}
}  // namespace

StreamTable& stream_table(int ordinal) { return *tables()[ordinal]; }

std::shared_ptr<Stream> find_stream(const void* handle) {
  for (int i = 0; i < config().device_count; ++i)
    if (auto s = tables()[i]->find(handle)) return s;
  return nullptr;
}

void synchronize_all_devices() {
  for (int i = 0; i < config().device_count; ++i) tables()[i]->synchronize_all();
}

std::shared_ptr<Stream> StreamTable::legacy() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!legacy_) {
    legacy_ = std::make_shared<Stream>(Stream::Kind::Legacy, 0, 0, this);
    legacy_->start_worker();
  }
  return legacy_;
}

namespace {
// Retires this thread's default streams (one per device) when the thread exits.
struct PerThreadStreamHolder {
  std::shared_ptr<Stream> streams[kMaxDevices];
  ~PerThreadStreamHolder() {
    for (auto& stream : streams) {
      if (!stream) continue;
      stream->table().forget_per_thread(stream.get());
      stream->retire();
    }
  }
};
thread_local PerThreadStreamHolder t_per_thread;
}  // namespace

std::shared_ptr<Stream> StreamTable::per_thread() {
  std::shared_ptr<Stream>& slot = t_per_thread.streams[device_];
  if (!slot) {
    auto s = std::make_shared<Stream>(Stream::Kind::PerThread, 0, 0, this);
    s->start_worker();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      streams_.push_back(s);
    }
    slot = s;
  }
  return slot;
}

std::shared_ptr<Stream> StreamTable::create(unsigned flags, int priority) {
  auto s = std::make_shared<Stream>(Stream::Kind::Created, flags, priority, this);
  s->start_worker();
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(s);
  return s;
}

std::shared_ptr<Stream> StreamTable::find(const void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : streams_)
    if (s.get() == handle && s->kind() == Stream::Kind::Created) return s;
  return nullptr;
}

bool StreamTable::destroy(const void* handle) {
  std::shared_ptr<Stream> victim;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(streams_.begin(), streams_.end(), [&](const std::shared_ptr<Stream>& s) {
      return s.get() == handle && s->kind() == Stream::Kind::Created;
    });
    if (it == streams_.end()) return false;
    victim = *it;
    streams_.erase(it);
  }
  victim->retire();
  return true;
}

void StreamTable::forget_per_thread(Stream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.erase(
      std::remove_if(streams_.begin(), streams_.end(), [&](const std::shared_ptr<Stream>& x) { return x.get() == s; }),
      streams_.end());
}

std::vector<std::shared_ptr<Stream>> StreamTable::all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> out = streams_;
  if (legacy_) out.push_back(legacy_);
  return out;
}

std::vector<Dependency> StreamTable::implicit_dependencies(const Stream& s) {
  std::vector<Dependency> deps;
  std::lock_guard<std::mutex> lock(mutex_);
  if (s.kind() == Stream::Kind::Legacy) {
    // Work on the legacy stream waits for all earlier work in blocking streams.
    for (const auto& other : streams_)
      if (other->synchronizes_with_legacy() && !other->idle()) deps.push_back({other, other->enqueued()});
  } else if (s.synchronizes_with_legacy() && legacy_ && !legacy_->idle()) {
    // Work on a blocking stream waits for earlier work on the legacy stream.
    deps.push_back({legacy_, legacy_->enqueued()});
  }
  return deps;
}

void StreamTable::synchronize_all() {
  for (const auto& s : all()) {
    const uint64_t target = s->enqueued();
    s->host_wait(target);
  }
}

}  // namespace aw_sim
