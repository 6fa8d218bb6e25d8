// NVTX v3 injection (docs/configuration.md, NVTX_INJECTION64_PATH): an application built with the
// header-only nvtx3 library loads the library NVTX_INJECTION64_PATH names on its first NVTX call and
// calls its InitializeInjectionNvtx2, which fills the CORE module's function slots. The library's
// constructor sets that variable to its own path when it is unset (nvtx_injection.h), so dlopen
// returns the handle already loaded. Each range event becomes an NvtxRange record of the calling
// thread (trace_format.h); range names are interned as StringRecords, as kernel names are.
//
// Domains (nvtxDomainCreateA/W, the CORE2 module) and registered strings (nvtxDomainRegisterStringA/W)
// are handles the application keeps: slots of two fixed pools (created rarely: once per library or
// name), never freed. A domain's ranges are named "DOMAIN::MESSAGE" and nest per domain.
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

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "loaded_object.h"
#include "config.h"
#include "interpose/call_context.h"
#include "interpose/capture_range.h"
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
enum : int { kModuleCore = 1, kModuleCore2 = 5 };
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
enum : unsigned {  // NVTX_CBID_CORE2_*
  kCb2DomainMarkEx = 1,
  kCb2DomainRangeStartEx = 2,
  kCb2DomainRangeEnd = 3,
  kCb2DomainRangePushEx = 4,
  kCb2DomainRangePop = 5,
  kCb2DomainRegisterStringA = 10,
  kCb2DomainRegisterStringW = 11,
  kCb2DomainCreateA = 12,
  kCb2DomainCreateW = 13,
  kCb2DomainDestroy = 14,
};
struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(int module, FunctionTable* out_table, unsigned* out_size);
};
using GetExportTable = const void* (*)(uint32_t id);
enum : int32_t { kMessageAscii = 1, kMessageUnicode = 2, kMessageRegistered = 3 };
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

// The pools. A handle is a slot's address; a slot is filled before its handle is returned, so the
// application's own ordering makes it visible wherever the handle is used. Full: the last slot,
// shared, unnamed (its ranges are recorded without a name: not reported).
struct Domain {
  std::atomic<uint32_t> len;  // stored (release) once the name is: 0 while being filled
  char text[60];              // the domain's name
};
struct Registered {
  std::atomic<uint32_t> len;
  char text[124];
};
constexpr uint32_t kDomains = 31;      // + 1 shared overflow slot
constexpr uint32_t kRegistered = 255;  // + 1 shared overflow slot (32 KiB of zero pages)
AW_LARGE_ZEROED Domain g_domains[kDomains + 1];
AW_LARGE_ZEROED Registered g_registered[kRegistered + 1];
std::atomic<uint32_t> g_domain_count{0};
std::atomic<uint32_t> g_registered_count{0};

AW_TLS int tl_depth;                           // open push ranges of this thread, core domain
AW_TLS int16_t tl_domain_depth[kDomains + 1];  // the same per created domain

// 0 for the core domain (a null handle), i + 1 for g_domains[i]; -1 for a handle that is not ours.
int domain_key(const void* handle) noexcept {
  if (!handle) return 0;
  auto p = reinterpret_cast<uintptr_t>(handle), first = reinterpret_cast<uintptr_t>(&g_domains[0]);
  if (p < first || p >= first + sizeof g_domains || (p - first) % sizeof(Domain)) return -1;
  return static_cast<int>((p - first) / sizeof(Domain)) + 1;
}

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

// `domain` > 0: the name is "DOMAIN::MESSAGE".
uint32_t name_id(const void* msg, bool wide, int domain) noexcept {
  char buf[256];
  uint32_t len = 0;
  if (domain > 0) {
    const Domain& d = g_domains[domain - 1];
    uint32_t n = d.len.load(std::memory_order_acquire);
    if (n == 0) return 0;  // the overflow domain: unnamed
    std::memcpy(buf, d.text, n);
    buf[n] = buf[n + 1] = ':';
    len = n + 2;
  }
  uint32_t text = message_text(msg, wide, buf + len, static_cast<uint32_t>(sizeof buf) - len);
  if (text == 0) return 0;
  len += text;
  uint64_t h = 1469598103934665603ull ^ (wide ? 1u : 0u) ^ (static_cast<uint64_t>(domain) << 40);  // FNV-1a
  for (uint32_t i = 0; i < len; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  uint32_t gen = trace_writer::generation();
  NameSlot& slot = tl_names[(reinterpret_cast<uintptr_t>(msg) >> 3) % kNameSlots];
  if (slot.ptr == msg && slot.hash == h && slot.generation == gen && slot.id) return slot.id;
  uint32_t id = calls::string_id(buf, len);
  if (id) slot = NameSlot{msg, h, id, gen};
  return id;
}

// Writes one record when this thread is in the application (phase 0) and recording is on.
void record(NvtxKind kind, uint64_t range_id, const void* msg, bool wide, int domain = 0) noexcept {
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
  r.name_id = msg ? name_id(msg, wide, domain) : 0;
  r.domain = static_cast<uint32_t>(domain);
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
  if (a->message_type == kMessageRegistered) {  // ours: a slot's text (the overflow slot: none)
    auto p = reinterpret_cast<uintptr_t>(a->message), first = reinterpret_cast<uintptr_t>(&g_registered[0]);
    if (p < first || p >= first + sizeof g_registered || (p - first) % sizeof(Registered)) return nullptr;
    const Registered& r = *reinterpret_cast<const Registered*>(a->message);
    return r.len.load(std::memory_order_acquire) ? r.text : nullptr;
  }
  return nullptr;
}

// ASYNCWATCH_CAPTURE_RANGE=nvtx:NAME: the core domain's ranges whose (narrow or registered) message
// is NAME open and close the capture range (capture_range.h), from the application's own NVTX calls.
AW_TLS uint64_t tl_capture_depths;  // bit d: this thread's push at depth d (< 64) opened one
constexpr int kCaptureIds = 64;
std::atomic<uint64_t> g_capture_ids[kCaptureIds];  // start/end ids that opened one (0: free)

bool opens_capture(const void* msg, bool wide) noexcept {
  const Config& c = config_fast();
  if (c.capture != trace::CaptureMode::Nvtx || !msg || wide) return false;
  const calls::ThreadCallState& st = calls::thread_state();
  return st.phase == 0 && !st.reentrant && !strcmp(static_cast<const char*>(msg), c.capture_nvtx_name.c_str());
}

int push(const void* msg, bool wide) noexcept {
  int depth = tl_depth++;
  if (depth < 64 && opens_capture(msg, wide)) {  // before its record: the range's push is in the trace
    tl_capture_depths |= 1ull << depth;
    capture::nvtx_range(true);
  }
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
  if (depth < 64 && (tl_capture_depths >> depth & 1)) {
    tl_capture_depths &= ~(1ull << depth);
    capture::nvtx_range(false);
  }
  return depth;
}
uint64_t start(const void* msg, bool wide) noexcept {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (opens_capture(msg, wide)) {
    for (auto& slot : g_capture_ids) {
      uint64_t none = 0;
      if (slot.compare_exchange_strong(none, id)) {
        capture::nvtx_range(true);
        break;
      }
    }
  }
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
void range_end(uint64_t id) noexcept {
  record(NvtxKind::End, id, nullptr, false);
  for (auto& slot : g_capture_ids) {
    uint64_t mine = id;
    if (id && slot.compare_exchange_strong(mine, 0)) {
      capture::nvtx_range(false);
      break;
    }
  }
}
void mark_a(const char* m) noexcept { record(NvtxKind::Mark, 0, m, false); }
void mark_ex(const EventAttributes* a) noexcept {
  bool wide;
  const void* m = ex_message(a, &wide);
  record(NvtxKind::Mark, 0, m, wide);
}

// ---- CORE2: domains and registered strings ----
// The slot of `pool` holding this text (message_text's form, as core-domain messages are read;
// the same name created or registered again: NVTX tools return the same handle), else a new one,
// else the shared overflow slot.
template <class Slot, uint32_t N>
Slot* slot_for(Slot (&pool)[N + 1], std::atomic<uint32_t>& count, const void* src, bool wide) noexcept {
  char text[sizeof(pool[0].text)];
  uint32_t len = message_text(src, wide, text, sizeof text);
  if (len == 0) return &pool[N];
  uint32_t used = std::min(count.load(std::memory_order_acquire), N);
  for (uint32_t i = 0; i < used; ++i)
    if (pool[i].len.load(std::memory_order_acquire) == len && std::memcmp(pool[i].text, text, len) == 0)
      return &pool[i];
  uint32_t i = count.fetch_add(1, std::memory_order_acq_rel);
  if (i >= N) return &pool[N];
  std::memcpy(pool[i].text, text, len);
  pool[i].len.store(len, std::memory_order_release);
  return &pool[i];
}
void* domain_create_a(const char* name) noexcept {
  return slot_for<Domain, kDomains>(g_domains, g_domain_count, name, false);
}
void* domain_create_w(const wchar_t* name) noexcept {
  return slot_for<Domain, kDomains>(g_domains, g_domain_count, name, true);
}
void domain_destroy(void*) noexcept {}  // the slot stays: records already name it
void* register_string_a(void*, const char* t) noexcept {
  return slot_for<Registered, kRegistered>(g_registered, g_registered_count, t, false);
}
void* register_string_w(void*, const wchar_t* t) noexcept {
  return slot_for<Registered, kRegistered>(g_registered, g_registered_count, t, true);
}

int domain_push_ex(void* d, const EventAttributes* a) noexcept {
  int key = domain_key(d);
  if (key == 0) return range_push_ex(a);
  if (key < 0) return -1;  // not a handle asyncwatch made: nothing recorded
  bool wide;
  const void* m = ex_message(a, &wide);
  int depth = tl_domain_depth[key - 1]++;
  record(NvtxKind::Push, static_cast<uint64_t>(depth), m, wide, key);
  return depth;
}
int domain_pop(void* d) noexcept {
  int key = domain_key(d);
  if (key == 0) return range_pop();
  if (key < 0 || tl_domain_depth[key - 1] <= 0) return -1;
  int depth = --tl_domain_depth[key - 1];
  record(NvtxKind::Pop, static_cast<uint64_t>(depth), nullptr, false, key);
  return depth;
}
uint64_t domain_start_ex(void* d, const EventAttributes* a) noexcept {
  int key = domain_key(d);
  if (key < 0) return 0;
  bool wide;
  const void* m = ex_message(a, &wide);
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  record(NvtxKind::Start, id, m, wide, key);
  return id;
}
void domain_end(void* d, uint64_t id) noexcept {
  int key = domain_key(d);
  if (key >= 0) record(NvtxKind::End, id, nullptr, false, key);
}
void domain_mark_ex(void* d, const EventAttributes* a) noexcept {
  int key = domain_key(d);
  if (key < 0) return;
  bool wide;
  const void* m = ex_message(a, &wide);
  record(NvtxKind::Mark, 0, m, wide, key);
}

std::atomic<bool> g_injected{false};

}  // namespace

void set_injection_path() noexcept {
  if (getenv("NVTX_INJECTION64_PATH")) return;  // the application's (or another tool's) choice wins
  const link_map* self = loaded_object(reinterpret_cast<void*>(&set_injection_path));
  if (!self || !self->l_name || !self->l_name[0]) return;
  const char* own = self->l_name;  // the loader's name of this library, as dladdr's dli_fname
  // Absolute: LD_PRELOAD may have named it relative to a directory the application leaves. An
  // absolute name is kept as it is (realpath would cost a readlink per component at every start).
  char path[PATH_MAX];
  const char* name = own[0] == '/' ? own : realpath(own, path) ? path : own;
  setenv("NVTX_INJECTION64_PATH", name, 0);
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
  FunctionTable table2 = nullptr;
  unsigned size2 = 0;
  if (cb->get_module_function_table(kModuleCore2, &table2, &size2) && table2) {
    auto set2 = [&](unsigned i, auto fn) {
      if (i < size2 && table2[i]) *table2[i] = reinterpret_cast<FunctionPointer>(fn);
    };
    set2(kCb2DomainMarkEx, &domain_mark_ex);
    set2(kCb2DomainRangeStartEx, &domain_start_ex);
    set2(kCb2DomainRangeEnd, &domain_end);
    set2(kCb2DomainRangePushEx, &domain_push_ex);
    set2(kCb2DomainRangePop, &domain_pop);
    set2(kCb2DomainRegisterStringA, &register_string_a);
    set2(kCb2DomainRegisterStringW, &register_string_w);
    set2(kCb2DomainCreateA, &domain_create_a);
    set2(kCb2DomainCreateW, &domain_create_w);
    set2(kCb2DomainDestroy, &domain_destroy);
  }
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
