// spdlog is compiled here only (header-only, with the fmt the analyzer links): one translation unit
// pays its compile time.
#include "diagnostics.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

namespace asyncwatch::diagnostics {

namespace {
std::atomic<bool> g_verbose{false};
std::shared_ptr<spdlog::logger> g_logger;
}  // namespace

void init(bool verbose) {
  // stderr unbuffered and mutex-guarded: the lines of parallel workers do not interleave.
  g_logger = std::make_shared<spdlog::logger>("asyncwatch", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  g_logger->set_pattern("asyncwatch: [%l] %v");
  g_logger->set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  g_verbose.store(verbose, std::memory_order_relaxed);
}

bool verbose() { return g_verbose.load(std::memory_order_relaxed); }

void step(const std::string& line) {
  if (verbose() && g_logger) g_logger->debug("{}", line);
}

}  // namespace asyncwatch::diagnostics
