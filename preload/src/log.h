// The library's own messages (spdlog, header-only, to stderr). Never called on the hot path:
// only at trace open, on the first failure and for invalid settings.
#pragma once

#include <string>

namespace asyncwatch::log {

void init(const std::string& level);
// The one-line banner naming the trace file (not subject to the level, except "off").
void banner(const std::string& msg);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);

}  // namespace asyncwatch::log
