// Builds the table from AW_DRIVER_HOOKS. The wrappers are declared here with the parameters the
// table gives them (driver_hook_table.inc), only to take their addresses; their definitions are in
// the driver_hooks_*.cpp files (AW_DRIVER_HOOK) and, on x86-64, their exported stubs in
// entry_stubs.cpp.
#include "hook_table.h"

#include <cstring>

#include "hook_entry.h"

namespace asyncwatch::cuda {
#define AW_HOOK_DECL(sym, ...) extern "C" AW_EXPORTED_VISIBILITY hooks::fn::sym AW_EXPORTED_NAME(sym);
AW_DRIVER_HOOKS(AW_HOOK_DECL)
#undef AW_HOOK_DECL
}  // namespace asyncwatch::cuda

namespace asyncwatch::calls {
AW_TLS_SHARED const void* tl_entry_ra;  // hook_entry.h
}

namespace asyncwatch::hooks {
namespace {

const HookInfo kTable[] = {
#define AW_HOOK_ROW(sym, api, pt, ...) \
  {#sym, trace::Api::api, pt != 0, reinterpret_cast<void*>(&cuda::AW_EXPORTED_NAME(sym))},
    AW_DRIVER_HOOKS(AW_HOOK_ROW)
#undef AW_HOOK_ROW
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kHookCount);

// The rows in the order of their names (strcmp), for a binary search: cuGetProcAddress asks for
// every entry point of the driver (about 440 at start-up), most of them not hooked.
constexpr const char* kNames[] = {
#define AW_HOOK_NAME(sym, ...) #sym,
    AW_DRIVER_HOOKS(AW_HOOK_NAME)
#undef AW_HOOK_NAME
};
constexpr int compare(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
}
struct SortedRows {
  uint16_t row[kHookCount];
};
constexpr SortedRows sorted_rows() {
  SortedRows s{};
  for (size_t i = 0; i < kHookCount; ++i) {  // insertion sort: done by the compiler
    size_t j = i;
    for (; j > 0 && compare(kNames[s.row[j - 1]], kNames[i]) > 0; --j) s.row[j] = s.row[j - 1];
    s.row[j] = static_cast<uint16_t>(i);
  }
  return s;
}
constexpr SortedRows kSorted = sorted_rows();

// The first position whose name is not less than `name`.
size_t lower_bound(const char* name) noexcept {
  size_t lo = 0, hi = kHookCount;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(kTable[kSorted.row[mid]].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

const HookInfo& info(Hook h) noexcept { return kTable[static_cast<size_t>(h)]; }

Hook find(const char* name) noexcept {
  // Cheap rejection first: every hooked name starts with "cu" followed by an upper-case letter.
  if (!name || name[0] != 'c' || name[1] != 'u' || name[2] < 'A' || name[2] > 'Z') return Hook::Count;
  size_t i = lower_bound(name);
  if (i < kHookCount && !strcmp(kTable[kSorted.row[i]].name, name)) return static_cast<Hook>(kSorted.row[i]);
  return Hook::Count;
}

bool any_starts_with(const char* prefix) noexcept {
  if (!prefix || prefix[0] != 'c' || prefix[1] != 'u') return false;
  size_t i = lower_bound(prefix);  // the names that start with it follow it
  return i < kHookCount && !strncmp(kTable[kSorted.row[i]].name, prefix, strlen(prefix));
}

}  // namespace asyncwatch::hooks
