// Streams as in-order queues, each executed by its own worker thread (the simulated GPU engine).
// Cross-stream ordering (legacy default stream, cuStreamWaitEvent) is expressed as dependencies:
// an operation does not start before each (stream, sequence number) it depends on has completed.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace aw_sim {

class Stream;
class StreamTable;
struct CaptureSession;
struct SimGraphNode;

struct Dependency {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;  // completed when stream->completed() >= seq
};

// One unit of work: `body` runs on the worker ("driver thread"); the operation then occupies the
// stream until `duration_ns` after it started (time the GPU would spend).
//
// Timing (the stream's "device clock"): an operation starts, in simulated time, at
//   start = max(end of the previous operation of this stream, enqueue time, end of each dependency)
// and ends at start + max(duration_ns, start_delay_ns + the real time `body` took). Its completion is
// published when the real clock reaches its end; the worker sleeps only when that end is still
// ahead, so wake-up latency never accumulates into the simulated timeline.
struct StreamOp {
  std::string what;
  std::function<void()> body;
  uint64_t duration_ns = 0;
  // Time between the stream reaching the operation and `body` starting (host functions: the driver
  // thread's wake-up latency). Counts towards duration_ns.
  uint64_t start_delay_ns = 0;
  std::vector<Dependency> deps;
  uint64_t enqueue_ns = 0;  // set by Stream::enqueue
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  enum class Kind { Legacy, PerThread, Created };

  Stream(Kind kind, unsigned flags, int priority, StreamTable* table);
  ~Stream();

  Kind kind() const { return kind_; }
  // The context (device) the stream belongs to.
  StreamTable& table() const { return *table_; }
  int device() const;
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  // Blocking streams (and per-thread default streams) synchronize with the legacy stream.
  bool synchronizes_with_legacy() const;

  // Appends `op`; blocks (spinning) while the queue holds config().queue_depth operations.
  // Returns the operation's sequence number. Legacy-stream dependencies are added here.
  uint64_t enqueue(StreamOp op);

  uint64_t enqueued() const { return enqueued_.load(); }
  uint64_t completed() const { return completed_.load(); }
  // Simulated end time of completed operation `seq` (0 if it is too old to be remembered).
  uint64_t end_ns(uint64_t seq) const;
  // Simulated start time of the operation whose body is running (valid inside a body; event records
  // timestamp with it). A member rather than a thread_local: worker threads touch no TLS of this
  // dlopen'ed library (LeakSanitizer misreads dynamic TLS blocks at exit).
  uint64_t running_op_start_ns() const { return running_op_start_ns_.load(); }
  bool idle() const { return completed() == enqueued(); }
  // Spin until operation `seq` has completed.
  void host_wait(uint64_t seq) const;
  // Spin until everything enqueued so far (plus, for the legacy stream, what it depends on) completed.
  void host_synchronize();

  // Stream capture: while the stream takes part in a capture session, work is recorded into the
  // session's graph as nodes depending on capture_deps() instead of being queued.
  std::shared_ptr<CaptureSession> capture() const;
  // Runs f(session, deps) with the capture state locked; f may change both.
  template <class F>
  auto with_capture(F f) {
    std::lock_guard<std::mutex> lock(capture_mutex_);
    return f(capture_, capture_deps_);
  }

  // Lets the worker finish what is queued, then exit (cuStreamDestroy does not wait).
  void retire();

  void start_worker();

 private:
  void run_worker();

  const Kind kind_;
  const unsigned flags_;
  const int priority_;
  StreamTable* const table_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<StreamOp> queue_;
  std::mutex enqueue_mutex_;  // keeps sequence numbers in queue order
  std::atomic<uint64_t> enqueued_{0};
  std::atomic<uint64_t> completed_{0};
  bool retiring_ = false;
  mutable std::mutex capture_mutex_;
  std::shared_ptr<CaptureSession> capture_;
  std::vector<SimGraphNode*> capture_deps_;
  // End times of the last kEndRing completed operations, indexed by sequence number.
  std::atomic<uint64_t> running_op_start_ns_{0};
  static constexpr uint64_t kEndRing = 4096;
  std::unique_ptr<std::atomic<uint64_t>[]> ends_ { new std::atomic<uint64_t>[ kEndRing ]() };
};

// All live streams of one context (device), used for legacy-stream semantics and ctx synchronize.
class StreamTable {
 public:
  explicit StreamTable(int device) : device_(device) {}
  int device() const { return device_; }
  std::shared_ptr<Stream> legacy();
  std::shared_ptr<Stream> per_thread();  // this host thread's default stream
  std::shared_ptr<Stream> create(unsigned flags, int priority);
  // Looks up a handle returned by create(); nullptr if unknown.
  std::shared_ptr<Stream> find(const void* handle);
  bool destroy(const void* handle);
  std::vector<std::shared_ptr<Stream>> all();
  // Dependencies an operation enqueued now into `s` must honour (legacy stream rules).
  std::vector<Dependency> implicit_dependencies(const Stream& s);
  void forget_per_thread(Stream* s);
  // Spin until every stream has finished what was enqueued before this call.
  void synchronize_all();

 private:
  const int device_;
  std::mutex mutex_;
  std::shared_ptr<Stream> legacy_;
  std::vector<std::shared_ptr<Stream>> streams_;  // created and per-thread streams
};

// The stream table of device `ordinal`'s (primary) context.
StreamTable& stream_table(int ordinal);
// A created stream of any context, by handle; nullptr if unknown.
std::shared_ptr<Stream> find_stream(const void* handle);
// Spin until every stream of every context has finished what was enqueued before this call.
void synchronize_all_devices();

// Wakes workers waiting for dependencies; called after any operation completes.
void wait_for_dependency(const Dependency& d);  // sleeping wait, used by workers

}  // namespace aw_sim
