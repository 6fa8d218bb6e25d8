#include "symbols/debuginfo.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace asyncwatch {

int open_regular_file(const char* path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  // Reads of a regular file never block: the flag stays, harmless.
  return fd;
}

uint64_t debug_info_cost(Elf* elf) {
  size_t shstrndx = 0;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
  uint64_t cost = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) continue;
    const bool z = std::strncmp(name, ".zdebug_", 8) == 0;
    const bool debug = z || std::strncmp(name, ".debug_", 7) == 0;
    if (!debug && sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    uint64_t size = sh.sh_size;
    if (sh.sh_flags & SHF_COMPRESSED) {
      GElf_Chdr ch;
      if (gelf_getchdr(scn, &ch)) size = ch.ch_size;
    } else if (z && sh.sh_size >= 12) {  // "ZLIB" and the uncompressed size, big-endian
      if (Elf_Data* d = elf_rawdata(scn, nullptr); d && d->d_size >= 12) {
        const auto* p = static_cast<const unsigned char*>(d->d_buf);
        size = 0;
        for (int i = 4; i < 12; ++i) size = size << 8 | p[i];
      }
    }
    const char* base = name + (z ? 8 : 7);
    if (debug && (std::strcmp(base, "line") == 0 || std::strcmp(base, "line.dwo") == 0)) {
      size = size > UINT64_MAX / kLineTableWeight ? UINT64_MAX : size * kLineTableWeight;
    }
    cost = cost > UINT64_MAX - size ? UINT64_MAX : cost + size;
  }
  return cost;
}

bool DebugInfoBudget::charge(uint64_t cost, const std::string& module, std::string* why) {
  auto mib = [](uint64_t b) { return (b + (1u << 20) - 1) >> 20; };
  if (per_module && cost > per_module) {
    *why = fmt::format(
        "{}: its debug information would take about {} MiB, more than the analyzer's limit of {} MiB per "
        "module: not used for symbols (raise it with --max-debug-info-mib)",
        module, mib(cost), mib(per_module));
    return false;
  }
  uint64_t cur = used.load();
  do {
    if (total && (cur > total || cost > total - cur)) {
      *why = fmt::format(
          "{}: its debug information would take about {} MiB, and the report's modules already take {} of "
          "its {} MiB: not used for symbols (raise it with --max-debug-info-total-mib)",
          module, mib(cost), mib(cur), mib(total));
      return false;
    }
  } while (!used.compare_exchange_weak(cur, cur + cost));
  return true;
}

std::shared_ptr<DebugInfoBudget> make_debug_info_budget(uint64_t per_module, uint64_t total) {
  auto b = std::make_shared<DebugInfoBudget>();
  b->per_module = per_module;
  b->total = total;
  return b;
}

namespace {

std::atomic<bool> g_debuginfod{false};

// libdebuginfod, loaded on first use (the analyzer does not link it: it is asked only with
// --debuginfod).
struct Debuginfod {
  void* (*begin)() = nullptr;
  int (*find_debuginfo)(void*, const unsigned char*, int, char**) = nullptr;
  void (*end)(void*) = nullptr;
  bool ok = false;
};
const Debuginfod& debuginfod() {
  static const Debuginfod d = [] {
    Debuginfod out;
    void* h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return out;
    out.begin = reinterpret_cast<void* (*)()>(dlsym(h, "debuginfod_begin"));
    out.find_debuginfo =
        reinterpret_cast<int (*)(void*, const unsigned char*, int, char**)>(dlsym(h, "debuginfod_find_debuginfo"));
    out.end = reinterpret_cast<void (*)(void*)>(dlsym(h, "debuginfod_end"));
    out.ok = out.begin && out.find_debuginfo && out.end;
    return out;
  }();
  return d;
}

std::string dir_of(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? "." : s == 0 ? "/" : path.substr(0, s);
}

bool same_build_id(Elf* elf, const unsigned char* id, int len) {
  const void* other = nullptr;
  ssize_t n = dwelf_elf_gnu_build_id(elf, &other);
  return n == len && std::memcmp(other, id, static_cast<size_t>(len)) == 0;
}

int find_elf_none(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }

// The standard search's candidates (dwfl_standard_find_debuginfo, default path
// ":.debug:/usr/lib/debug"), each opened only when it is a regular file: the build id link
// /usr/lib/debug/.build-id/xx/yyyy.debug, then the debug link's name in the module's directory,
// its .debug subdirectory and /usr/lib/debug/DIR. The found file must have the module's build id
// (when the module has one); a dwz file (.gnu_debugaltlink: `debuglink` is not the module's own
// debug link) is found by its name only.
int find_debuginfo_safely(Dwfl_Module* mod, void** userdata, const char*, Dwarf_Addr, const char* file_name,
                          const char* debuglink, GElf_Word, char** debuginfo_file_name) {
  auto* search = static_cast<ModuleSearch*>(*userdata);
  const unsigned char* id = nullptr;
  GElf_Addr id_vaddr = 0;
  int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
  Dwarf_Addr bias = 0;
  Elf* main_elf = dwfl_module_getelf(mod, &bias);
  GElf_Word crc = 0;
  const char* own_link = main_elf ? dwelf_elf_gnu_debuglink(main_elf, &crc) : nullptr;
  const bool alt = debuglink && (!own_link || std::strcmp(own_link, debuglink) != 0);
  const std::string file = file_name ? file_name : "";
  std::vector<std::string> candidates;
  if (!alt && id_len > 0) {
    std::string hex;
    for (int i = 0; i < id_len; ++i) hex += fmt::format("{:02x}", id[i]);
    candidates.push_back("/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
  }
  std::string name = debuglink ? debuglink : file.empty() ? "" : file.substr(file.rfind('/') + 1) + ".debug";
  if (!name.empty()) {
    if (name[0] == '/') {
      candidates.push_back(name);
    } else if (!file.empty()) {
      std::string dir = dir_of(file);
      candidates.push_back(dir + "/" + name);
      candidates.push_back(dir + "/.debug/" + name);
      if (dir[0] == '/') candidates.push_back("/usr/lib/debug" + dir + "/" + name);
    }
  }
  struct stat main_st {};
  const bool have_main = !file.empty() && stat(file.c_str(), &main_st) == 0;
  for (const std::string& c : candidates) {
    int fd = open_regular_file(c.c_str());
    if (fd < 0) continue;
    struct stat st {};
    if (have_main && fstat(fd, &st) == 0 && st.st_dev == main_st.st_dev && st.st_ino == main_st.st_ino) {
      close(fd);  // the module itself
      continue;
    }
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    bool use = elf != nullptr && (alt || id_len <= 0 || same_build_id(elf, id, id_len));
    uint64_t cost = use ? debug_info_cost(elf) : 0;
    if (elf) elf_end(elf);
    if (use && search && search->budget && !search->budget->charge(cost, search->shown, &search->problem)) {
      close(fd);
      return -1;
    }
    if (!use) {
      close(fd);
      continue;
    }
    *debuginfo_file_name = strdup(c.c_str());
    return fd;
  }
  if (!alt && id_len > 0 && g_debuginfod.load() && debuginfod().ok) {
    const Debuginfod& d = debuginfod();
    void* client = d.begin();
    char* path = nullptr;
    int fd = client ? d.find_debuginfo(client, id, id_len, &path) : -1;
    if (client) d.end(client);
    struct stat st {};
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
      close(fd);
      fd = -1;
    }
    if (fd >= 0) {
      Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
      uint64_t cost = elf ? debug_info_cost(elf) : 0;
      if (elf) elf_end(elf);
      if (search && search->budget && !search->budget->charge(cost, search->shown, &search->problem)) {
        close(fd);
        free(path);
        return -1;
      }
      *debuginfo_file_name = path;
      return fd;
    }
    free(path);
  }
  return -1;
}

const Dwfl_Callbacks kSafeCallbacks = {
    find_elf_none,
    find_debuginfo_safely,
    dwfl_offline_section_address,
    nullptr,
};

}  // namespace

Dwfl* begin_dwfl() { return dwfl_begin(&kSafeCallbacks); }
void set_use_debuginfod(bool on) { g_debuginfod.store(on); }
bool use_debuginfod() { return g_debuginfod.load(); }

}  // namespace asyncwatch
