#include "symbols/cuda_linkage.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace asyncwatch {

namespace {

bool contains(const Elf_Data* d, const char* needle) {
  const size_t n = std::strlen(needle) + 1;  // with its NUL: the whole string, not a prefix
  return d && d->d_buf && d->d_size >= n && memmem(d->d_buf, d->d_size, needle, n) != nullptr;
}

void read_elf(Elf* elf, CudaLinkage* out) {
  size_t shstrndx = 0;
  if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) return;
  out->readable = true;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name && (!std::strcmp(name, ".nv_fatbin") || !std::strcmp(name, ".nvFatBinSegment")))
      out->has_device_code = true;
    if (sh.sh_type == SHT_DYNAMIC) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (!d || sh.sh_entsize == 0) continue;
      for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(d, static_cast<int>(i), &dyn)) break;
        if (dyn.d_tag != DT_NEEDED) continue;
        const char* lib = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
        if (lib && !std::strncmp(lib, "libcudart.so", 12)) out->needs_shared_runtime = true;
      }
    } else if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_ALLOC) && !(sh.sh_flags & SHF_EXECINSTR) &&
               !out->loads_driver_itself) {
      // read-only data: the name the runtime passes to dlopen
      if (contains(elf_getdata(scn, nullptr), "libcuda.so.1")) out->loads_driver_itself = true;
    }
  }
}

}  // namespace

CudaLinkage cuda_linkage(const std::string& path) {
  CudaLinkage out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && elf_version(EV_CURRENT) != EV_NONE) {
    if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
      read_elf(elf, &out);
      elf_end(elf);
    }
  }
  close(fd);
  return out;
}

std::string program_path(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return program;
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= path.size();) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(start, colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = colon + 1;
  }
  return "";
}

}  // namespace asyncwatch
