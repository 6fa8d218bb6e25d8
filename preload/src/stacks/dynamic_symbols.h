// Exported symbols of the objects loaded in this process, read from their dynamic symbol tables
// in memory (PT_DYNAMIC: DT_SYMTAB, DT_STRTAB, DT_GNU_HASH or DT_HASH). Used instead of dlsym,
// which the library interposes and which searches one scope: this looks inside one chosen
// object, allocates nothing and calls nothing but dl_iterate_phdr.
#pragma once

#include <cstdint>

namespace asyncwatch::dynamic_symbols {

struct Symbol {
  uint64_t address;  // where it is in this process
  uint64_t size;     // st_size
  bool is_data;      // STT_OBJECT (or STT_TLS: never reported); else a function or other
};

// One loaded object's dynamic symbol table.
class Object {
 public:
  // From dl_iterate_phdr's dlpi_addr and PT_DYNAMIC (nullptr: an object without one).
  Object(uint64_t base, const void* dynamic, const char* name) noexcept;

  // The defined, non-TLS symbol `name`, exported by this object.
  bool find(const char* name, Symbol* out) const noexcept;
  const char* name() const noexcept { return name_; }
  bool usable() const noexcept { return symtab_ && strtab_ && (gnu_hash_ || sysv_hash_); }

 private:
  bool matches(uint32_t index, const char* name, Symbol* out) const noexcept;

  uint64_t base_;
  const char* name_;
  const void* symtab_ = nullptr;
  const char* strtab_ = nullptr;
  uint64_t strsz_ = 0;
  const uint32_t* gnu_hash_ = nullptr;
  const uint32_t* sysv_hash_ = nullptr;
};

// Calls visit(object, arg) for every loaded object, in load order (the executable first), until
// it returns true; returns whether one did. Takes the dynamic loader's lock (dl_iterate_phdr).
bool for_each_object(bool (*visit)(const Object&, void*), void* arg) noexcept;

}  // namespace asyncwatch::dynamic_symbols
