#include "stack_capture.h"

#include <boost/stacktrace/safe_dump_to.hpp>

#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "module_map.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::stacks {
namespace {

using namespace asyncwatch::trace;

constexpr uint32_t kCacheSize = 256;  // per-thread direct-mapped cache: hash -> id
struct CacheEntry {
  uint64_t hash;
  uint32_t id;
  uint32_t generation;
};
AW_TLS CacheEntry* tl_cache;

struct Global {
  std::mutex mutex;
  uint32_t generation = 0;
  uint32_t next_id = 1;
  std::unordered_map<uint64_t, std::vector<std::pair<std::vector<uint64_t>, uint32_t>>> by_hash;
};
Global& global() {
  static Global* g = new Global;  // leaked: used during exit
  return *g;
}

uint64_t hash_frames(const uint64_t* f, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint32_t i = 0; i < n; ++i) {
    h ^= f[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

uint32_t intern_slow(const uint64_t* frames, uint32_t depth, uint64_t h, uint32_t gen) {
  bool new_module = false;
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(global().mutex);
    if (global().generation != gen) {
      global().by_hash.clear();
      global().next_id = 1;
      global().generation = gen;
    }
    auto& bucket = global().by_hash[h];
    for (auto& [fr, fid] : bucket) {
      if (fr.size() == depth && std::equal(fr.begin(), fr.end(), frames)) return fid;
    }
    id = global().next_id++;
    bucket.emplace_back(std::vector<uint64_t>(frames, frames + depth), id);
    StackRecord r{};
    r.h.type = static_cast<uint16_t>(RecordType::Stack);
    r.stack_id = id;
    r.depth = depth;
    thread_buffer::write2(&r, sizeof r, frames, depth * 8);
  }
  // A frame outside every known object: a library was dlopen'ed since the map was written.
  for (uint32_t i = 0; i < depth && !new_module; ++i) new_module = !module_map::covered(frames[i]);
  if (new_module) module_map::write_new_modules();
  return id;
}

}  // namespace

uint32_t intern(const uint64_t* frames, uint32_t depth) noexcept {
  if (depth == 0) return 0;
  uint32_t gen = trace_writer::generation();
  uint64_t h = hash_frames(frames, depth);
  if (!tl_cache) {
    tl_cache = static_cast<CacheEntry*>(calloc(kCacheSize, sizeof(CacheEntry)));
    if (!tl_cache) return 0;
  }
  CacheEntry& e = tl_cache[h % kCacheSize];
  if (e.hash == h && e.generation == gen) return e.id;
  uint32_t id;
  try {
    id = intern_slow(frames, depth, h, gen);
  } catch (...) {
    return 0;
  }
  e = CacheEntry{h, id, gen};
  return id;
}

uint32_t capture_call_site() noexcept {
  boost::stacktrace::detail::native_frame_ptr_t raw[kMaxStackDepth + 16];
  std::size_t n = boost::stacktrace::detail::this_thread_frames::collect(raw, kMaxStackDepth + 16, 0);
  uint64_t frames[kMaxStackDepth];
  uint32_t depth = 0;
  std::size_t i = 0;
  // Drop our own frames (this function, the wrapper); the first frame left is the caller of
  // the intercepted function: the application, the runtime, or a framework.
  while (i < n && module_map::is_own_address(reinterpret_cast<uint64_t>(raw[i]))) ++i;
  for (; i < n && depth < kMaxStackDepth; ++i) {
    if (!raw[i]) break;
    frames[depth++] = reinterpret_cast<uint64_t>(raw[i]);
  }
  return intern(frames, depth);
}

}  // namespace asyncwatch::stacks
