#include "trace_name.h"

#include <cstdio>
#include <cstring>

namespace asyncwatch::trace_name {

void candidate(char* out, size_t cap, const char* dir, const char* name, int attempt, pid_t pid,
               uint64_t clock_ns) noexcept {
  char suffix[48];
  if (attempt <= 0)
    suffix[0] = 0;
  else if (attempt < kNumbered)
    snprintf(suffix, sizeof suffix, ".%d", attempt);
  else  // each later attempt a different clock value: a collision (another host, same pid) moves on
    snprintf(suffix, sizeof suffix, ".p%ld-%llx", static_cast<long>(pid),
             static_cast<unsigned long long>(clock_ns + static_cast<uint64_t>(attempt - kNumbered)));
  // Before the extension: asyncwatch-app-12.awtrace -> asyncwatch-app-12.1.awtrace.
  const char* dot = strrchr(name, '.');
  if (!dot || dot == name)
    snprintf(out, cap, "%s/%s%s", dir, name, suffix);
  else
    snprintf(out, cap, "%s/%.*s%s%s", dir, static_cast<int>(dot - name), name, suffix, dot);
}

}  // namespace asyncwatch::trace_name
