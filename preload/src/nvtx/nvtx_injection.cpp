// NVTX v3 injection (docs/configuration.md, NVTX_INJECTION64_PATH): an application built with the
// header-only nvtx3 library loads the library NVTX_INJECTION64_PATH names on its first NVTX call and
// calls its InitializeInjectionNvtx2, which fills the CORE module's function slots. The library's
// constructor sets that variable to its own path when it is unset (nvtx_injection.h), so dlopen
// returns the handle already loaded. Each range event becomes an NvtxRange record of the calling
// thread (trace_format.h); range names are interned as StringRecords, as kernel names are.
//
// Hot path: a per-thread cache of (pointer, hash) -> string id, so the name table's lock is taken
// only for a name not seen before on this thread; no allocation otherwise. An NVTX call made while
// this thread is in the library's own code or inside a real CUDA function (a signal handler's, or a
// callback's) keeps the depth it returns but is not recorded.
#include "nvtx/nvtx_injection.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "interpose/call_context.h"
#include "log.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::nvtx {
namespace {

using trace::NvtxKind;
using trace::NvtxRangeRecord;
using trace::RecordType;

// ---- the NVTX ABI this needs (nvtx3/nvtxDetail/nvtxTypes.h, nvToolsExt.h; stable since NVTX 2) ----
using FunctionPointer = void (*)();
using FunctionTable = FunctionPointer**;
enum : uint32_t { kEtidCallbacks = 1 };
enum : int { kModuleCore = 1 };
enum : unsigned {
  kCbMarkEx = 1,
  kCbMarkA = 2,
  kCbMarkW = 3,
  kCbRangeStartEx = 4,
  kCbRangeStartA = 5,
  kCbRangeStartW = 6,
  kCbRangeEnd = 7,
  kCbRangePushEx = 8,
  kCbRangePushA = 9,
  kCbRangePushW = 10,
  kCbRangePop = 11,
};
struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(int module, FunctionTable* out_table, unsigned* out_size);
};
using GetExportTable = const void* (*)(uint32_t id);
enum : int32_t { kMessageAscii = 1, kMessageUnicode = 2 };
struct EventAttributes {  // nvtxEventAttributes_v2
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;  // const char* / const wchar_t* / registered string handle
};
static_assert(sizeof(EventAttributes) == 48);

std::atomic<uint64_t> g_next_range_id{1};
AW_TLS int tl_depth;  // open push ranges of this thread

// Per-thread direct-mapped cache of interned names (the application's strings are usually
// literals: same pointer, same text; the hash catches a buffer reused for other text).
struct NameSlot {
  const void* ptr;
  uint64_t hash;
  uint32_t id;
  uint32_t generation;
};
constexpr uint32_t kNameSlots = 16;  // 384 bytes of static TLS per thread
AW_TLS NameSlot tl_names[kNameSlots];

uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Text of an ASCII (or wide: code points above 0x7f become '?') message, into buf; its length.
uint32_t message_text(const void* msg, bool wide, char* buf, uint32_t cap) noexcept {
  uint32_t n = 0;
  if (!msg) return 0;
  if (!wide) {
    const char* s = static_cast<const char*>(msg);
    while (n < cap && s[n]) ++n;
    std::memcpy(buf, s, n);
    return n;
  }
  const wchar_t* w = static_cast<const wchar_t*>(msg);
  for (; n < cap && w[n]; ++n) buf[n] = w[n] > 0 && w[n] < 0x80 ? static_cast<char>(w[n]) : '?';
  return n;
}

uint32_t name_id(const void* msg, bool wide) noexcept {
  char buf[256];
  uint32_t len = message_text(msg, wide, buf, sizeof buf);
  if (len == 0) return 0;
  uint64_t h = 1469598103934665603ull ^ (wide ? 1u : 0u);  // FNV-1a
  for (uint32_t i = 0; i < len; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  uint32_t gen = trace_writer::generation();
  NameSlot& slot = tl_names[(reinterpret_cast<uintptr_t>(msg) >> 3) % kNameSlots];
  if (slot.ptr == msg && slot.hash == h && slot.generation == gen && slot.id) return slot.id;
  uint32_t id = calls::string_id(buf, len);
  if (id) slot = NameSlot{msg, h, id, gen};
  return id;
}

// Writes one record when this thread is in the application (phase 0) and recording is on.
void record(NvtxKind kind, uint64_t range_id, const void* msg, bool wide) noexcept {
  calls::ThreadCallState& st = calls::thread_state();
  if (st.phase != 0 || st.reentrant || trace_writer::disabled_now()) return;
  if (!calls::recording()) return;
  ErrnoKeeper keep;
  calls::LibraryScope scope;  // a signal handler's CUDA call meanwhile passes through
  NvtxRangeRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::NvtxRange);
  r.h.size = sizeof r;
  r.kind = static_cast<uint8_t>(kind);
  r.range_id = range_id;
  r.name_id = msg ? name_id(msg, wide) : 0;
  r.start_ns = r.end_ns = now_ns();
  thread_buffer::write(&r);
}

const void* ex_message(const EventAttributes* a, bool* wide) noexcept {
  *wide = false;
  if (!a || a->size < sizeof(EventAttributes)) return nullptr;
  if (a->message_type == kMessageAscii) return a->message;
  if (a->message_type == kMessageUnicode) {
    *wide = true;
    return a->message;
  }
  return nullptr;  // registered string handles: not resolved (the name table is the application's)
}

int push(const void* msg, bool wide) noexcept {
  int depth = tl_depth++;
  record(NvtxKind::Push, static_cast<uint64_t>(depth), msg, wide);
  return depth;
}
int range_push_a(const char* m) noexcept { return push(m, false); }
int range_push_w(const wchar_t* m) noexcept { return push(m, true); }
int range_push_ex(const EventAttributes* a) noexcept {
  bool wide;
  const void* m = ex_message(a, &wide);
  return push(m, wide);
}
int range_pop() noexcept {
  if (tl_depth <= 0) return -1;  // unmatched pop: NVTX's documented error value, nothing recorded
  int depth = --tl_depth;
  record(NvtxKind::Pop, static_cast<uint64_t>(depth), nullptr, false);
  return depth;
}
uint64_t start(const void* msg, bool wide) noexcept {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  record(NvtxKind::Start, id, msg, wide);
  return id;
}
uint64_t range_start_a(const char* m) noexcept { return start(m, false); }
uint64_t range_start_w(const wchar_t* m) noexcept { return start(m, true); }
uint64_t range_start_ex(const EventAttributes* a) noexcept {
  bool wide;
  const void* m = ex_message(a, &wide);
  return start(m, wide);
}
void range_end(uint64_t id) noexcept { record(NvtxKind::End, id, nullptr, false); }
void mark_a(const char* m) noexcept { record(NvtxKind::Mark, 0, m, false); }
void mark_ex(const EventAttributes* a) noexcept {
  bool wide;
  const void* m = ex_message(a, &wide);
  record(NvtxKind::Mark, 0, m, wide);
}

std::atomic<bool> g_injected{false};

}  // namespace

void set_injection_path() noexcept {
  if (getenv("NVTX_INJECTION64_PATH")) return;  // the application's (or another tool's) choice wins
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&set_injection_path), &info) || !info.dli_fname || !info.dli_fname[0]) return;
  // Absolute: LD_PRELOAD may have named it relative to a directory the application leaves.
  char path[PATH_MAX];
  setenv("NVTX_INJECTION64_PATH", realpath(info.dli_fname, path) ? path : info.dli_fname, 0);
}

int initialize(const void* (*get_export_table)(uint32_t)) noexcept {
  if (!get_export_table) return 0;
  const auto* cb = static_cast<const ExportTableCallbacks*>(get_export_table(kEtidCallbacks));
  if (!cb || cb->struct_size < sizeof(ExportTableCallbacks) || !cb->get_module_function_table) return 0;
  FunctionTable table = nullptr;
  unsigned size = 0;
  if (!cb->get_module_function_table(kModuleCore, &table, &size) || !table) return 0;
  // `size` counts the slots (NVTX_CBID_CORE_SIZE); slot i points at the application's function pointer.
  auto set = [&](unsigned i, auto fn) {
    if (i < size && table[i]) *table[i] = reinterpret_cast<FunctionPointer>(fn);
  };
  set(kCbMarkEx, &mark_ex);
  set(kCbMarkA, &mark_a);
  set(kCbRangeStartEx, &range_start_ex);
  set(kCbRangeStartA, &range_start_a);
  set(kCbRangeStartW, &range_start_w);
  set(kCbRangeEnd, &range_end);
  set(kCbRangePushEx, &range_push_ex);
  set(kCbRangePushA, &range_push_a);
  set(kCbRangePushW, &range_push_w);
  set(kCbRangePop, &range_pop);
  (void)kCbMarkW;
  if (!g_injected.exchange(true)) {
    trace_writer::add_config_flags(trace::kConfigNvtx);
    log::info("NVTX injected: ranges are recorded");
  }
  return 1;
}

}  // namespace asyncwatch::nvtx

// The NVTX injection entry point (exported: exports.map).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* (*get_export_table)(uint32_t)) {
  return asyncwatch::nvtx::initialize(get_export_table);
}
