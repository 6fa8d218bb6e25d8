#include "dynamic_symbols.h"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace asyncwatch::dynamic_symbols {
namespace {

// The System V and GNU hash functions of the ELF gABI and of GNU's DT_GNU_HASH.
uint32_t sysv_hash(const char* name) {
  uint32_t h = 0;
  for (auto* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) {
    h = (h << 4) + *p;
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

uint32_t gnu_hash(const char* name) {
  uint32_t h = 5381;
  for (auto* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) h = h * 33 + *p;
  return h;
}

// glibc relocates these d_ptr entries in place when it loads an object; other loaders (musl)
// and the vDSO leave them as link-time addresses.
uint64_t relocated(uint64_t base, uint64_t ptr) { return ptr < base ? ptr + base : ptr; }

}  // namespace

Object::Object(uint64_t base, const void* dynamic, const char* name) noexcept : base_(base), name_(name ? name : "") {
  for (auto* d = static_cast<const ElfW(Dyn)*>(dynamic); d && d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab_ = reinterpret_cast<const void*>(relocated(base, d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab_ = reinterpret_cast<const char*>(relocated(base, d->d_un.d_ptr)); break;
      case DT_STRSZ: strsz_ = d->d_un.d_val; break;
      case DT_GNU_HASH: gnu_hash_ = reinterpret_cast<const uint32_t*>(relocated(base, d->d_un.d_ptr)); break;
      case DT_HASH: sysv_hash_ = reinterpret_cast<const uint32_t*>(relocated(base, d->d_un.d_ptr)); break;
      default: break;
    }
  }
}

bool Object::matches(uint32_t index, const char* name, Symbol* out) const noexcept {
  const ElfW(Sym)& s = static_cast<const ElfW(Sym)*>(symtab_)[index];
  if (s.st_name >= strsz_ || s.st_shndx == SHN_UNDEF || s.st_value == 0) return false;
  unsigned type = ELF64_ST_TYPE(s.st_info);
  if (type == STT_TLS) return false;
  size_t room = strsz_ - s.st_name;
  size_t len = strlen(name);
  if (len >= room || std::memcmp(strtab_ + s.st_name, name, len + 1) != 0) return false;
  out->address = base_ + s.st_value;
  out->size = s.st_size;
  out->is_data = type == STT_OBJECT;
  return true;
}

bool Object::find(const char* name, Symbol* out) const noexcept {
  if (!usable()) return false;
  if (gnu_hash_) {
    // nbuckets, symoffset, bloom words, bloom shift; bloom[]; buckets[]; chain[]
    uint32_t nbuckets = gnu_hash_[0], symoffset = gnu_hash_[1], bloom_size = gnu_hash_[2], bloom_shift = gnu_hash_[3];
    if (nbuckets == 0 || bloom_size == 0) return false;
    auto* bloom = reinterpret_cast<const ElfW(Addr)*>(gnu_hash_ + 4);
    const uint32_t* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    constexpr unsigned kBits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(h / kBits) % bloom_size];
    ElfW(Addr) mask = (ElfW(Addr)(1) << (h % kBits)) | (ElfW(Addr)(1) << ((h >> bloom_shift) % kBits));
    if ((word & mask) != mask) return false;
    uint32_t index = buckets[h % nbuckets];
    if (index < symoffset) return false;
    for (;; ++index) {
      uint32_t h2 = chain[index - symoffset];
      if ((h | 1) == (h2 | 1) && matches(index, name, out)) return true;
      if (h2 & 1) return false;  // end of this bucket's chain
    }
  }
  // nbucket, nchain; bucket[]; chain[]
  uint32_t nbucket = sysv_hash_[0], nchain = sysv_hash_[1];
  if (nbucket == 0) return false;
  const uint32_t* bucket = sysv_hash_ + 2;
  const uint32_t* chain = bucket + nbucket;
  for (uint32_t i = bucket[sysv_hash(name) % nbucket], steps = 0; i != STN_UNDEF && i < nchain && steps < nchain;
       i = chain[i], ++steps) {
    if (matches(i, name, out)) return true;
  }
  return false;
}

bool for_each_object(bool (*visit)(const Object&, void*), void* arg) noexcept {
  struct Context {
    bool (*visit)(const Object&, void*);
    void* arg;
  } context{visit, arg};
  return dl_iterate_phdr(
             [](dl_phdr_info* info, size_t, void* data) -> int {
               auto* c = static_cast<Context*>(data);
               const void* dynamic = nullptr;
               for (int i = 0; i < info->dlpi_phnum; ++i) {
                 if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
                   dynamic = reinterpret_cast<const void*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
                 }
               }
               if (!dynamic) return 0;
               Object object(info->dlpi_addr, dynamic, info->dlpi_name);
               return c->visit(object, c->arg) ? 1 : 0;
             },
             &context) != 0;
}

}  // namespace asyncwatch::dynamic_symbols
