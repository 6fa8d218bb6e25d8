// Human-readable times and sizes for messages.
#pragma once

#include <cstdint>
#include <string>

namespace asyncwatch {

std::string format_duration(uint64_t ns);                           // "1.74 s", "570 ms", "45.0 us", "800 ns"
std::string format_bytes(uint64_t bytes);                           // "2.0 GiB", "4.0 MiB", "64 KiB", "100 B"
std::string plural(uint64_t n, const char* one, const char* many);  // "1 call", "3 calls"
std::string hex(uint64_t v);                                        // "0x401234"

}  // namespace asyncwatch
