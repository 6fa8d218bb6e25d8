#include "read/trace_v1.h"

#include <cstring>
#include <new>
#include <fmt/format.h>

namespace asyncwatch::trace_v1 {
namespace {

using namespace asyncwatch::trace;

// The v1 layouts (trace_format.h of version 1), only as far as the adapter needs them.
struct Copy {
  RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t direction, src_memory, dst_memory, stream_kind;
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint64_t start_ns, end_ns, stream, bytes;
};
static_assert(sizeof(Copy) == 56);
struct Launch {
  RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t stream_kind, reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id, kernel_name_id, shared_mem_bytes, grid[3], block[3];
  uint64_t start_ns, end_ns, stream;
};
static_assert(sizeof(Launch) == 80);
struct HostFuncEnqueue {
  RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t stream_kind, reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id, reserved2;
  uint64_t callback_id, start_ns, end_ns, stream, user_function;
};
static_assert(sizeof(HostFuncEnqueue) == 72);
struct Sync {
  RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t stream_kind, reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id, reserved2;
  uint64_t start_ns, end_ns, handle;
};
static_assert(sizeof(Sync) == 56);
struct MemoryOp {
  RecordHeader h;
  uint16_t api, driver_fn;
  uint8_t memory, reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id, alloc_flags;
  uint64_t start_ns, end_ns, address, bytes;
};
static_assert(sizeof(MemoryOp) == 64);
struct StreamCreate {
  RecordHeader h;
  uint16_t api, driver_fn;
  int32_t result;
  uint32_t stream_flags;
  int32_t priority;
  uint64_t start_ns, end_ns, stream;
};
static_assert(sizeof(StreamCreate) == 48);
struct Capture {
  RecordHeader h;
  uint16_t api, driver_fn;
  int32_t result;
  uint32_t mode;
  uint64_t start_ns, end_ns, stream;
};
static_assert(sizeof(Capture) == 40);
struct Stack {
  RecordHeader h;
  uint32_t stack_id, depth;
};
static_assert(sizeof(Stack) == 12);
struct Lost {
  RecordHeader h;
  uint32_t reserved;
  uint64_t count;
};
static_assert(sizeof(Lost) == 16);

template <class V1>
V1 load(const uint8_t* p) {
  V1 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The head of the v2 record of `type` from the fields every v1 call record had.
template <class V2, class V1>
V2* head(uint8_t* scratch, uint16_t type, const V1& v, uint32_t flags, int32_t result, uint32_t stack_id,
         uint8_t stream_kind) {
  auto* r = new (scratch) V2{};
  r->h = RecordHeader{type, static_cast<uint16_t>(record_size_aligned(sizeof(V2)))};
  r->api = v.api;
  r->driver_fn = v.driver_fn;
  r->flags = flags & ~kFlagInFlight;  // v1 had no such bit: a v1 record is always complete
  r->result = result;
  r->stack_id = stack_id;
  r->stream_kind = stream_kind;
  r->start_ns = v.start_ns;
  r->end_ns = v.end_ns;
  return r;
}

}  // namespace

uint32_t stack_depth(const uint8_t* p) { return load<Stack>(p).depth; }

const uint8_t* to_v2(uint16_t type, uint32_t size, const uint8_t* p, uint8_t* scratch, uint32_t* v2_size,
                     std::string* error) {
  auto expect = [&](uint32_t want) {
    if (size == want) return true;
    *error = fmt::format("size {} (expected {})", size, want);
    return false;
  };
  auto done = [&](const void* r) {
    *v2_size = reinterpret_cast<const RecordHeader*>(r)->size;
    return static_cast<const uint8_t*>(r);
  };
  switch (static_cast<RecordType>(type)) {
    case RecordType::Copy:
    case RecordType::Memset: {
      if (!expect(record_size_aligned(sizeof(Copy)))) return nullptr;
      auto v = load<Copy>(p);
      auto* r = head<CopyRecord>(scratch, type, v, v.flags, v.result, v.stack_id, v.stream_kind);
      r->stream = v.stream, r->bytes = v.bytes;
      r->direction = v.direction, r->src_memory = v.src_memory, r->dst_memory = v.dst_memory;
      return done(r);
    }
    case RecordType::Launch: {
      if (!expect(record_size_aligned(sizeof(Launch)))) return nullptr;
      auto v = load<Launch>(p);
      auto* r = head<LaunchRecord>(scratch, type, v, v.flags, v.result, v.stack_id, v.stream_kind);
      r->stream = v.stream, r->kernel_name_id = v.kernel_name_id, r->shared_mem_bytes = v.shared_mem_bytes;
      std::memcpy(r->grid, v.grid, sizeof r->grid);
      std::memcpy(r->block, v.block, sizeof r->block);
      return done(r);
    }
    case RecordType::HostFuncEnqueue: {
      if (!expect(record_size_aligned(sizeof(HostFuncEnqueue)))) return nullptr;
      auto v = load<HostFuncEnqueue>(p);
      auto* r = head<HostFuncEnqueueRecord>(scratch, type, v, v.flags, v.result, v.stack_id, v.stream_kind);
      r->stream = v.stream, r->callback_id = v.callback_id, r->user_function = v.user_function;
      return done(r);
    }
    case RecordType::Sync: {
      if (!expect(record_size_aligned(sizeof(Sync)))) return nullptr;
      auto v = load<Sync>(p);
      auto* r = head<SyncRecord>(scratch, type, v, v.flags, v.result, v.stack_id, v.stream_kind);
      r->handle = v.handle, r->repeat = 1;
      return done(r);
    }
    case RecordType::MemoryOp: {
      if (!expect(record_size_aligned(sizeof(MemoryOp)))) return nullptr;
      auto v = load<MemoryOp>(p);
      auto* r = head<MemoryOpRecord>(scratch, type, v, v.flags, v.result, v.stack_id, 0);
      r->address = v.address, r->bytes = v.bytes, r->memory = v.memory, r->alloc_flags = v.alloc_flags;
      return done(r);
    }
    case RecordType::StreamCreate:
    case RecordType::StreamDestroy: {
      if (!expect(record_size_aligned(sizeof(StreamCreate)))) return nullptr;
      auto v = load<StreamCreate>(p);
      auto* r = head<StreamCreateRecord>(scratch, type, v, 0, v.result, 0, 0);
      r->stream = v.stream, r->stream_flags = v.stream_flags, r->priority = v.priority;
      return done(r);
    }
    case RecordType::Capture: {
      if (!expect(record_size_aligned(sizeof(Capture)))) return nullptr;
      auto v = load<Capture>(p);
      auto* r = head<CaptureRecord>(scratch, type, v, 0, v.result, 0, 0);
      r->stream = v.stream, r->mode = v.mode;
      return done(r);
    }
    case RecordType::Stack: {
      if (size < record_size_aligned(sizeof(Stack))) {
        *error = fmt::format("size {} is too small", size);
        return nullptr;
      }
      auto v = load<Stack>(p);
      if (v.depth > kMaxStackDepth) {
        *error = fmt::format("stack depth {} exceeds the maximum {}", v.depth, kMaxStackDepth);
        return nullptr;
      }
      if (!expect(record_size_aligned(kStackPayloadOffset + 8 * v.depth))) return nullptr;
      auto* r = new (scratch) StackRecord{};
      r->h = RecordHeader{type, static_cast<uint16_t>(record_size_aligned(sizeof(StackRecord) + 8 * v.depth))};
      r->stack_id = v.stack_id;
      r->depth = static_cast<uint16_t>(v.depth);
      std::memcpy(scratch + sizeof(StackRecord), p + kStackPayloadOffset, 8ull * v.depth);
      return done(r);
    }
    case RecordType::Lost: {
      if (!expect(record_size_aligned(sizeof(Lost)))) return nullptr;
      auto v = load<Lost>(p);
      auto* r = new (scratch) LostRecord{};
      r->h = RecordHeader{type, static_cast<uint16_t>(sizeof(LostRecord))};
      r->count = v.count;
      return done(r);
    }
    default:  // the same layout in both versions: validated as v2
      *v2_size = size;
      return p;
  }
}

}  // namespace asyncwatch::trace_v1
