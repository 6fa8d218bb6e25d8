#include "module_map.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "asyncwatch/trace_format.h"
#include "common.h"
#include "loaded_object.h"
#include "trace/thread_buffer.h"
#include "trace/trace_writer.h"

namespace asyncwatch::module_map {
namespace {

using namespace asyncwatch::trace;

struct Known {
  uint64_t low, high;
};
std::mutex& map_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::vector<Known>& known() {
  static std::vector<Known>* k = new std::vector<Known>;
  return *k;
}
uint64_t g_own_low = 0, g_own_high = 0;

struct Found {
  std::string path;
  uint64_t bias, low, high;
  uint8_t build_id[20];
  uint8_t build_id_len;
};

int collect(dl_phdr_info* info, size_t, void* arg) {
  auto* out = static_cast<std::vector<Found>*>(arg);
  Found f{};
  f.bias = info->dlpi_addr;
  f.low = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      f.low = std::min<uint64_t>(f.low, info->dlpi_addr + ph.p_vaddr);
      f.high = std::max<uint64_t>(f.high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE && !f.build_id_len) {
      const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
      const char* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const char* name = p + sizeof(ElfW(Nhdr));
        const char* desc = name + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
          f.build_id_len = static_cast<uint8_t>(std::min<uint32_t>(n->n_descsz, 20));
          memcpy(f.build_id, desc, f.build_id_len);
          break;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
      }
    }
  }
  if (f.low == UINT64_MAX) return 0;
  const char* name = info->dlpi_name;
  if (!name || !*name) {
    // The main executable has an empty name here. The trace's header has its path (the file
    // thread read it): a readlink of /proc/self/exe less on the first call (~90 us on the VM).
    if (const char* exe = trace_writer::executable_path()) {
      f.path = exe;
    } else {
      char buf[PATH_MAX];
      ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
      f.path = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    }
    if (f.path.empty() && f.bias == 0) return 0;
  } else {
    f.path = name;
  }
  out->push_back(std::move(f));
  return 0;
}

}  // namespace

void write_new_modules() noexcept {
  try {
    std::vector<Found> found;
    dl_iterate_phdr(collect, &found);
    std::lock_guard<std::mutex> lock(map_mutex());
    for (const Found& f : found) {
      bool seen = false;
      for (const Known& k : known()) seen = seen || (k.low == f.low && k.high == f.high);
      if (seen) continue;
      ModuleRecord r{};
      r.h.type = static_cast<uint16_t>(RecordType::Module);
      uint16_t len = static_cast<uint16_t>(std::min<size_t>(f.path.size(), 4096));
      r.path_len = len;
      r.build_id_len = f.build_id_len;
      r.load_bias = f.bias;
      r.low = f.low;
      r.high = f.high;
      memcpy(r.build_id, f.build_id, sizeof r.build_id);
      if (thread_buffer::write2(&r, sizeof r, f.path.data(), len)) known().push_back({f.low, f.high});
    }
  } catch (...) {}
}

bool covered(uint64_t addr) noexcept {
  std::lock_guard<std::mutex> lock(map_mutex());
  for (const Known& k : known())
    if (addr >= k.low && addr < k.high) return true;
  return false;
}

void init_own_range() noexcept {
  // The object whose loaded segments hold this function (no dladdr: its symbol search walks our
  // whole dynamic symbol table).
  LoadedObject o;
  if (!find_loaded_object(reinterpret_cast<const void*>(&init_own_range), &o)) return;
  g_own_low = o.low;
  g_own_high = o.high;
}

// Called from our dlsym during the TSan runtime's start-up (see AW_NO_SANITIZE_EARLY).
AW_NO_SANITIZE_EARLY bool is_own_address(uint64_t addr) noexcept { return addr >= g_own_low && addr < g_own_high; }

void reset() noexcept {
  new (&map_mutex()) std::mutex;
  known().clear();
}

}  // namespace asyncwatch::module_map
