#include "report/format.h"

#include <charconv>

#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch {

namespace {
std::string three_digits(double v, const char* unit) {
  if (v >= 100) return fmt::format(FMT_COMPILE("{:.0f} {}"), v, unit);
  if (v >= 10) return fmt::format(FMT_COMPILE("{:.1f} {}"), v, unit);
  return fmt::format(FMT_COMPILE("{:.2f} {}"), v, unit);
}
}  // namespace

std::string format_duration(uint64_t ns) {
  if (ns < 1000) return fmt::format(FMT_COMPILE("{} ns"), ns);
  if (ns < 1000000) return three_digits(static_cast<double>(ns) / 1e3, "us");
  if (ns < 1000000000) return three_digits(static_cast<double>(ns) / 1e6, "ms");
  return three_digits(static_cast<double>(ns) / 1e9, "s");
}

std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format(FMT_COMPILE("{} B"), bytes);
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (v == static_cast<double>(static_cast<uint64_t>(v)) && v >= 10)
    return fmt::format(FMT_COMPILE("{:.0f} {}"), v, kUnits[u]);
  return fmt::format(FMT_COMPILE("{:.1f} {}"), v, kUnits[u]);
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format(FMT_COMPILE("{} {}"), n, n == 1 ? one : many);
}

std::string hex(uint64_t v) {
  char text[2 + 16] = {'0', 'x'};  // std::to_chars writes lowercase digits, as {:x} does
  char* end = std::to_chars(text + 2, text + sizeof text, v, 16).ptr;
  return std::string(text, static_cast<size_t>(end - text));
}

}  // namespace asyncwatch
