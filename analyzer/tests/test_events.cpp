// The per-process event layer (analyzer/src/events/): the typed events and their dispatch, stream
// resolution, stream bookkeeping and the host-function join, which the rules and the timeline share.
#include "events/event.h"
#include "events/host_functions.h"
#include "events/streams.h"
#include "read/trace_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>
#include <unordered_map>

using namespace asyncwatch;
using namespace asyncwatch::events;
namespace tf = asyncwatch::trace;

// visit() hands each record type of the table to the event of that type, whose struct is the
// table's (read in place: the same bytes), and a type outside the table to OtherEvent.
TEST(Events, VisitDispatchesEveryRowOfTheRecordTable) {
  alignas(8) uint8_t bytes[sizeof(tf::SiteSummaryRecord)] = {};
  size_t rows = 0;
  for (uint16_t type = 0; type < tf::kRecordTypeLimit + 2; ++type) {
    const tf::RecordInfo& info = tf::record_info(type);
    RecordView r{static_cast<tf::RecordType>(type), info.fixed, bytes, 4096, 7, 0, info.fixed};
    struct Seen {
      tf::RecordType kind;
      size_t size;
      bool call, in_place;
    };
    Seen seen = visit(r, [&](const auto& e) {
      using E = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<E, OtherEvent>) {
        return Seen{E::kind, 0, false, true};
      } else {
        return Seen{E::kind, sizeof(typename E::Record), E::kCall,
                    static_cast<const void*>(&e.rec) == static_cast<const void*>(bytes)};
      }
    });
    if (info.since == 0) {  // not a row: id 0, the unassigned 25, beyond the table
      EXPECT_EQ(seen.kind, tf::RecordType::None) << type;
      continue;
    }
    ++rows;
    EXPECT_EQ(static_cast<uint16_t>(seen.kind), type);
    EXPECT_EQ(seen.size, info.struct_size) << info.name;
    EXPECT_EQ(seen.call, info.call) << info.name;
    EXPECT_TRUE(seen.in_place) << info.name;
  }
  EXPECT_EQ(rows, tf::kRecordCount);
}

// What an event derives: the stream a call is on (streams.h's key) and a copy's direction (copies.h).
TEST(Events, EventsDeriveTheStreamAndTheCopyDirection) {
  tf::CopyRecord c{};
  c.stream_kind = static_cast<uint8_t>(tf::StreamKind::PerThreadDefault);
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Pageable);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
  RecordView r{tf::RecordType::Copy, sizeof c, reinterpret_cast<const uint8_t*>(&c), 4096, 9, 0, sizeof c};
  Event<tf::RecordType::Copy> e{r, c};
  EXPECT_EQ(e.stream_key(), (uint64_t{1} << 63) | 9);
  EXPECT_EQ(e.direction(), tf::Direction::HtoD);
  static_assert(Event<tf::RecordType::BatchCopy>::kCopy && Event<tf::RecordType::GraphLaunch>::kOnStream);
  static_assert(!Event<tf::RecordType::GpuSpan>::kCall && !Event<tf::RecordType::Sync>::kOnStream);
  static_assert(is_one_of<Event<tf::RecordType::Memset>, tf::RecordType::Copy, tf::RecordType::Memset>);
}

// A copy's host side and class, computed with its direction once per event (copies.h).
TEST(Events, CopyEventsCarryTheirHostSideAndClass) {
  tf::CopyRecord c{};
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Pageable);
  RecordView r{tf::RecordType::Copy, sizeof c, reinterpret_cast<const uint8_t*>(&c), 4096, 9, 0, sizeof c};
  Event<tf::RecordType::Copy> e{r, c};
  EXPECT_EQ(e.copy.direction, tf::Direction::DtoH);
  EXPECT_EQ(e.copy.host, tf::MemoryKind::Pageable);
  EXPECT_EQ(e.copy.copy_class, copy_memory(tf::MemoryKind::Device) | copy_memory(tf::MemoryKind::Pageable));
  // Host to host: pageable when either side is, else the source; the class says host to host.
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Pinned);
  c.direction = static_cast<uint8_t>(tf::Direction::HtoH);
  CopyFacts f = copy_facts(c);
  EXPECT_EQ(f.host, tf::MemoryKind::Pageable);
  EXPECT_NE(f.copy_class & kCopyHostToHost, 0u);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Pinned);
  EXPECT_EQ(copy_facts(c).host, tf::MemoryKind::Pinned);
  // A managed side leaves the direction unknown (the managed-memory-copy rule's): no host side.
  c.direction = static_cast<uint8_t>(tf::Direction::Unknown);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Managed);
  EXPECT_EQ(copy_facts(c).direction, tf::Direction::Unknown);
  EXPECT_EQ(copy_facts(c).host, tf::MemoryKind::Unknown);
}

TEST(Events, StreamsResolveByKindThenByHandle) {
  auto k = [](tf::StreamKind kind) { return static_cast<uint8_t>(kind); };
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::LegacyDefault), 0x5000, 7).key, 0u);
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::PerThreadDefault), 0, 7).key, (uint64_t{1} << 63) | 7);
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::Explicit), 0x5000, 7).key, 0x5000u);
  // No kind recorded: the handle says (cudaStreamLegacy = 1, cudaStreamPerThread = 2).
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::Unknown), 1, 7).key, 0u);
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::Unknown), 2, 9).key, (uint64_t{1} << 63) | 9);
  EXPECT_EQ(resolve_stream(k(tf::StreamKind::Unknown), 0x6000, 9).key, 0x6000u);
  EXPECT_EQ(stream_name(resolve_stream(k(tf::StreamKind::Unknown), 0, 3)), "stream: legacy default");
  EXPECT_EQ(stream_name(resolve_stream(k(tf::StreamKind::Unknown), 2, 3)), "stream: per-thread default of tid 3");
  EXPECT_EQ(stream_name(resolve_stream(k(tf::StreamKind::Explicit), 0x5000, 3)), "stream 0x5000");
}

TEST(Events, LegacyStreamIdleIdlesBlockingStreamsOnly) {
  StreamTable t("x.awtrace", 100);
  tf::StreamCreateRecord blocking{}, non_blocking{};
  blocking.stream = 0x5000;
  non_blocking.stream = 0x6000;
  non_blocking.stream_flags = 1;  // cudaStreamNonBlocking
  t.created(blocking);
  t.created(non_blocking);
  for (uint64_t s : {uint64_t{0x5000}, uint64_t{0x6000}, uint64_t{0x5000}}) t.launched(s, 3);
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 2u);
  t.idle(0);
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 0u);
  EXPECT_EQ(t.at(0x5000).since_idle.total, 0u);
  EXPECT_EQ(t.at(0x6000).launches_since_sync, 1u);
  t.idle_all();
  EXPECT_EQ(t.at(0x6000).launches_since_sync, 0u);
}

TEST(Events, ADestroyedHandleStartsAfreshWhenReused) {
  StreamTable t("x.awtrace", 100);
  tf::StreamCreateRecord s{};
  s.stream = 0x5000;
  s.stream_flags = 1;
  t.created(s);
  t.launched(0x5000, 1);
  t.destroyed(0x5000);
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 0u);
  EXPECT_FALSE(t.at(0x5000).non_blocking);  // the new stream of that handle is not the old one
}

TEST(Events, StreamsBeyondTheLimitAreATraceError) {
  StreamTable t("x.awtrace", 2);
  t.at(1);
  t.at(2);
  EXPECT_THROW(t.at(3), TraceError);
  t.at(2);  // known streams stay usable
}

TEST(Events, HostFunctionsJoinInEitherOrder) {
  HostFunctionJoin<int> join(2);
  tf::HostFuncRunRecord run{};
  run.callback_id = 7;
  run.start_ns = 100;
  int enqueue = 0;
  EXPECT_EQ(join.enqueue(5, 50, &run), HostFunctionJoin<int>::Outcome::Waiting);
  run.callback_id = 5;
  EXPECT_EQ(join.run(run, &enqueue), HostFunctionJoin<int>::Outcome::Joined);
  EXPECT_EQ(enqueue, 50);
  // The run first (the driver's thread is ahead of the enqueuing thread in time order).
  run.callback_id = 9;
  EXPECT_EQ(join.run(run, &enqueue), HostFunctionJoin<int>::Outcome::Waiting);
  tf::HostFuncRunRecord got{};
  EXPECT_EQ(join.enqueue(9, 90, &got), HostFunctionJoin<int>::Outcome::Joined);
  EXPECT_EQ(got.callback_id, 9u);
  EXPECT_EQ(got.start_ns, 100u);
}

TEST(Events, HostFunctionsWaitingAreBounded) {
  HostFunctionJoin<int> join(2);
  tf::HostFuncRunRecord run{};
  EXPECT_EQ(join.enqueue(1, 1, &run), HostFunctionJoin<int>::Outcome::Waiting);
  EXPECT_EQ(join.enqueue(2, 2, &run), HostFunctionJoin<int>::Outcome::Waiting);
  EXPECT_EQ(join.enqueue(3, 3, &run), HostFunctionJoin<int>::Outcome::OverLimit);
  EXPECT_EQ(join.enqueue(2, 4, &run), HostFunctionJoin<int>::Outcome::Waiting);  // the same id again: replaced
  int e = 0;
  run.callback_id = 2;
  EXPECT_EQ(join.run(run, &e), HostFunctionJoin<int>::Outcome::Joined);
  EXPECT_EQ(e, 4);
}

// The pending table against a map, through growth and erasures that shift probe chains back.
TEST(Events, PendingByIdAgreesWithAMap) {
  PendingById<uint64_t> table;
  std::unordered_map<uint64_t, uint64_t> want;
  uint64_t x = 12345;
  for (int step = 0; step < 200000; ++step) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t id = (x >> 33) % 3000;  // few distinct ids: long probe chains, many erasures
    if ((x >> 20) % 3 == 0) {
      uint64_t got = 0;
      const bool present = want.count(id) != 0;
      ASSERT_EQ(table.take(id, &got), present) << step;
      if (present) {
        EXPECT_EQ(got, want[id]);
        want.erase(id);
      }
    } else {
      table.put(id, x);
      want[id] = x;
    }
    ASSERT_EQ(table.size(), want.size());
  }
  for (const auto& [id, v] : want) {
    const uint64_t* got = table.find(id);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(*got, v);
  }
}

TEST(Events, ReturnedCallsSayWhenAStreamIsIdle) {
  StreamTable t("x.awtrace", 100);
  auto busy = [&](uint64_t key) {
    tf::LaunchRecord l{};
    l.api = static_cast<uint16_t>(tf::Api::cudaLaunchKernel);
    l.kernel_name_id = 4;
    t.launch_returned(key, l, false);
  };
  tf::CopyRecord c{};
  c.direction = static_cast<uint8_t>(tf::Direction::HtoD);
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Pinned);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
  busy(0x5000);
  t.copy_returned(0x5000, c);  // a pinned HtoD copy returns at once: nothing known
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 1u);
  c.direction = static_cast<uint8_t>(tf::Direction::DtoH);
  c.src_memory = static_cast<uint8_t>(tf::MemoryKind::Device);
  c.dst_memory = static_cast<uint8_t>(tf::MemoryKind::Pageable);
  t.copy_returned(0x5000, c);  // into pageable memory: it waited for the stream
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 0u);

  tf::SyncRecord s{};
  s.api = static_cast<uint16_t>(tf::Api::cudaStreamQuery);
  s.stream_kind = static_cast<uint8_t>(tf::StreamKind::Explicit);
  s.handle = 0x5000;
  busy(0x5000);
  s.result = 600;  // cudaErrorNotReady: still busy
  t.sync_returned(s, 1);
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 1u);
  s.result = 0;
  t.sync_returned(s, 1);
  EXPECT_EQ(t.at(0x5000).launches_since_sync, 0u);

  busy(0x5000);
  busy(0x6000);
  tf::MemoryOpRecord m{};
  m.api = static_cast<uint16_t>(tf::Api::cudaFree);
  t.memory_op_returned(m);  // synchronizes the device
  EXPECT_EQ(t.at(0x5000).launches_since_sync + t.at(0x6000).launches_since_sync, 0u);
  busy(0x6000);
  t.launch_returned(0x6000, tf::LaunchRecord{}, true);  // CUDA_LAUNCH_BLOCKING=1
  EXPECT_EQ(t.at(0x6000).launches_since_sync, 0u);
}
