// Builds the table from AW_DRIVER_HOOKS. The wrappers are declared here as plain functions only
// to take their addresses; their real prototypes live in the driver_hooks_*.cpp files.
#include "hook_table.h"

#include "hook_entry.h"

#include <cstring>

#define AW_HOOK_DECL(sym, api, pt) extern "C" void sym();
AW_DRIVER_HOOKS(AW_HOOK_DECL)
#undef AW_HOOK_DECL

namespace asyncwatch::calls {
AW_TLS_SHARED EntryStack tl_entry;
}

namespace asyncwatch::hooks {
namespace {

const HookInfo kTable[] = {
#define AW_HOOK_ROW(sym, api, pt) {#sym, trace::Api::api, pt != 0, reinterpret_cast<void*>(&::sym)},
    AW_DRIVER_HOOKS(AW_HOOK_ROW)
#undef AW_HOOK_ROW
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kHookCount);

}  // namespace

const HookInfo& info(Hook h) noexcept { return kTable[static_cast<size_t>(h)]; }

Hook find(const char* name) noexcept {
  // Cheap rejection first: every hooked name starts with "cu" followed by an upper-case letter.
  if (!name || name[0] != 'c' || name[1] != 'u' || name[2] < 'A' || name[2] > 'Z') return Hook::Count;
  for (size_t i = 0; i < kHookCount; ++i)
    if (!strcmp(kTable[i].name, name)) return static_cast<Hook>(i);
  return Hook::Count;
}

}  // namespace asyncwatch::hooks
