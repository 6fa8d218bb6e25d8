#include "kernel_names.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "driver_queries.h"
#include "thread_exit.h"
#include "trace/thread_buffer.h"

namespace asyncwatch::calls {

AW_TLS_SHARED NameCacheEntry* tl_kernel_names;

namespace {

using namespace asyncwatch::trace;
using namespace asyncwatch::cuda;

using FuncGetNameFn = CUresult (*)(const char**, void*);
DriverHelper<FuncGetNameFn> h_func_get_name{"cuFuncGetName"};
DriverHelper<FuncGetNameFn> h_kernel_get_name{"cuKernelGetName"};

// Behind the per-thread direct-mapped cache (kernel_names.h): one table for the process.
struct NameTable {
  std::mutex mutex;
  uint32_t generation = 0;
  uint32_t next_id = 1;
  std::unordered_map<void*, uint32_t> by_function;
  std::unordered_map<std::string, uint32_t> by_text;
  std::unordered_map<void*, bool> launched_before;  // survives a new trace: process-wide "first"
};
NameTable& names() {
  static NameTable* t = new NameTable;  // leaked: used during exit
  return *t;
}

// With the table's lock held: a new trace starts its ids again.
void start_generation(NameTable& t, uint32_t gen) {
  if (t.generation == gen) return;
  t.by_function.clear();
  t.by_text.clear();
  t.next_id = 1;
  t.generation = gen;
}

// With the table's lock held: the id of `text`, its StringRecord written when it is new.
uint32_t intern(NameTable& t, std::string text) {
  auto found = t.by_text.find(text);
  if (found != t.by_text.end()) return found->second;
  uint32_t id = t.next_id++;
  StringRecord r{};
  r.h.type = static_cast<uint16_t>(RecordType::String);
  r.string_id = id;
  r.len = static_cast<uint32_t>(std::min<size_t>(text.size(), 8192));
  thread_buffer::write2(&r, sizeof r, text.data(), r.len);
  t.by_text.emplace(std::move(text), id);
  return id;
}

}  // namespace

uint32_t kernel_name_id_slow(CUfunction f, bool* first) noexcept {
  *first = false;
  if (!f || thread_state().reentrant) return 0;
  uint32_t gen = trace_writer::generation();
  if (!tl_kernel_names) {
    tl_kernel_names = static_cast<NameCacheEntry*>(calloc(kNameCacheSize, sizeof(NameCacheEntry)));
    thread_exit::watch_this_thread();
  }
  NameCacheEntry* e = tl_kernel_names ? &tl_kernel_names[name_cache_slot(f)] : nullptr;
  if (e && e->fn == f && e->generation == gen) return e->id;
  uint32_t id = 0;
  try {
    NameTable& t = names();
    std::lock_guard<std::mutex> lock(t.mutex);
    start_generation(t, gen);
    *first = t.launched_before.emplace(f, true).second;
    auto it = t.by_function.find(f);
    if (it != t.by_function.end()) {
      id = it->second;
    } else {
      const char* name = nullptr;
      auto fn_name = h_func_get_name.get();
      if (!fn_name || fn_name(&name, f) != CUDA_SUCCESS || !name) {
        // cuLaunchKernel also accepts a CUkernel cast to CUfunction.
        auto k_name = h_kernel_get_name.get();
        name = nullptr;
        if (!k_name || k_name(&name, f) != CUDA_SUCCESS) name = nullptr;
      }
      if (name) id = intern(t, std::string(name));
      t.by_function.emplace(f, id);
    }
  } catch (...) {
    return 0;
  }
  if (e) *e = NameCacheEntry{f, id, gen};
  return id;
}

uint32_t string_id(const char* text, uint32_t len) noexcept {
  if (!text || thread_state().reentrant) return 0;
  uint32_t gen = trace_writer::generation();
  try {
    NameTable& t = names();
    std::lock_guard<std::mutex> lock(t.mutex);
    start_generation(t, gen);
    return intern(t, std::string(text, std::min<size_t>(len, 8192)));
  } catch (...) {
    return 0;
  }
}

void release_kernel_name_cache() noexcept {
  free(tl_kernel_names);
  tl_kernel_names = nullptr;
}

}  // namespace asyncwatch::calls
