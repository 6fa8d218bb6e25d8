#include "log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>
#include <mutex>

namespace asyncwatch::log {
namespace {

std::mutex g_mutex;
// Not registered in spdlog's global registry: the application may use spdlog too, and ours is
// a private copy (all symbols hidden), so the two never meet.
spdlog::logger* g_logger = nullptr;
spdlog::level::level_enum g_level = spdlog::level::warn;

spdlog::logger* logger() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_logger) {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    // Leaked on purpose: messages may be written from exit paths after static destructors ran.
    g_logger = new spdlog::logger("asyncwatch", std::move(sink));
    g_logger->set_pattern("asyncwatch[%P]: %l: %v");
    g_logger->set_level(g_level);
  }
  return g_logger;
}

}  // namespace

void banner(const std::string& msg) {
  // Shown at any ASYNCWATCH_LOG level except "off"; ASYNCWATCH_QUIET=1 suppresses it upstream.
  if (g_level == spdlog::level::off) return;
  static spdlog::logger* b = [] {
    auto* l = new spdlog::logger("asyncwatch-banner", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("asyncwatch[%P]: %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  b->info(msg);
}

void init(const std::string& level) {
  g_level = spdlog::level::from_str(level);
  logger()->set_level(g_level);
}
void info(const std::string& msg) { logger()->info(msg); }
void warn(const std::string& msg) { logger()->warn(msg); }
void error(const std::string& msg) { logger()->error(msg); }

}  // namespace asyncwatch::log
