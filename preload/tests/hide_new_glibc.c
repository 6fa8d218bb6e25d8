// Preloaded ahead of libasyncwatch.so by the e2e test OlderGlibcPathsGiveTheSameStacks: dlvsym finds
// neither _dl_find_object (glibc 2.35) nor __x86_get_cpuid_feature_leaf (2.33), as on glibc 2.28,
// so the library takes its dl_iterate_phdr walk and cpuid paths. Every other lookup is answered
// by libc's own dlvsym, found in libc's symbol table: a lookup of it by name would find this one
// or the library's dlsym, which itself looks up glibc's dlsym through dlvsym.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

typedef void* (*dlvsym_fn)(void*, const char*, const char*);

// The default version of NAME in libc's dynamic symbol table (its size from the GNU hash table).
static void* libc_default(const char* name) {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  struct link_map* lm = NULL;
  if (!libc || dlinfo(libc, RTLD_DI_LINKMAP, &lm) != 0) return NULL;
  const ElfW(Sym)* symtab = NULL;
  const char* strtab = NULL;
  const uint32_t* gnu_hash = NULL;
  const ElfW(Half)* versym = NULL;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    uintptr_t p = d->d_un.d_ptr < lm->l_addr ? d->d_un.d_ptr + lm->l_addr : d->d_un.d_ptr;
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)p;
    if (d->d_tag == DT_STRTAB) strtab = (const char*)p;
    if (d->d_tag == DT_GNU_HASH) gnu_hash = (const uint32_t*)p;
    if (d->d_tag == DT_VERSYM) versym = (const ElfW(Half)*)p;
  }
  if (!symtab || !strtab || !gnu_hash || !versym) return NULL;
  const uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_words = gnu_hash[2];
  const uint32_t* buckets = (const uint32_t*)((const ElfW(Addr)*)(gnu_hash + 4) + bloom_words);
  const uint32_t* chain = buckets + nbuckets;
  uint32_t n = 0;
  for (uint32_t i = 0; i < nbuckets; ++i)
    if (buckets[i] > n) n = buckets[i];
  if (n >= symoffset)
    while (!(chain[n - symoffset] & 1)) ++n;
  for (uint32_t i = 0; i <= n; ++i)
    if (symtab[i].st_value && !(versym[i] & 0x8000) && !strcmp(strtab + symtab[i].st_name, name))
      return (void*)(lm->l_addr + symtab[i].st_value);
  return NULL;
}

void* dlvsym(void* handle, const char* name, const char* version) {
  if (!strcmp(name, "_dl_find_object") || !strcmp(name, "__x86_get_cpuid_feature_leaf")) {
    static const char note[] = "hide_new_glibc: not found: ";
    (void)!write(2, note, sizeof note - 1);
    (void)!write(2, name, strlen(name));
    (void)!write(2, "\n", 1);
    return NULL;
  }
  // The library's RTLD_NEXT lookups (glibc's dlsym) mean libc's: from here they would find the library.
  if (handle == RTLD_NEXT && !strcmp(name, "dlsym")) return libc_default("dlsym");
  static dlvsym_fn real;
  if (!real) real = (dlvsym_fn)libc_default("dlvsym");
  return real ? real(handle, name, version) : NULL;
}
