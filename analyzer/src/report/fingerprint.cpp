#include "report/fingerprint.h"

#include "report/source_lines.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <fmt/format.h>

namespace asyncwatch {

namespace {
std::string absolute(const std::string& dir) {
  char buf[PATH_MAX];
  if (realpath(dir.c_str(), buf)) return buf;
  if (!dir.empty() && dir[0] == '/') return dir;
  if (!getcwd(buf, sizeof buf)) return dir;
  return std::string(buf) + "/" + dir;
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// FNV-1a, 64 bits: fixed for good (fingerprints in users' code-scanning history depend on it).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

std::string source_root(const std::string& dir) {
  if (!dir.empty()) return absolute(dir);
  std::string d = absolute(".");
  while (!d.empty()) {
    struct stat st {};
    if (stat((d + "/.git").c_str(), &st) == 0) return d;
    if (d == "/") break;
    auto slash = d.rfind('/');
    d = slash == 0 ? "/" : d.substr(0, slash);
  }
  return {};
}

std::string path_below(const std::string& path, const std::string& root) {
  if (root.empty() || path.empty() || path[0] != '/') return {};
  std::string prefix = root.back() == '/' ? root : root + "/";
  if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) return path.substr(prefix.size());
  return {};
}

std::string source_read_root(const std::string& root) { return root.empty() ? absolute(".") : root; }

std::string finding_fingerprint(const Finding& f, const std::string& root, SourceLines* lines) {
  std::string key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}", rule_info(f.id).name, static_cast<int>(f.cause), f.api, f.kernel);
  if (f.call_site_known) {
    const Frame& s = f.call_site;
    if (!s.file.empty()) {
      std::string rel = path_below(s.file, root);
      std::string context;
      if (lines) {
        context = lines->line(s.file, s.line);
      } else {
        SourceLines own(root);
        context = own.line(s.file, s.line);
      }
      key += fmt::format("\x1f{}\x1f{}\x1f{}", rel.empty() ? base_name(s.file) : rel, s.function,
                         !context.empty() ? context
                         : s.has_line()   ? fmt::format("line {}", s.line)
                                          : fmt::format("+{:x}", s.offset));  // line 0: each call instruction
    } else {
      // No function name either (a stripped module): its offset, the same in every process of that build.
      key += fmt::format("\x1f{}\x1f{}", base_name(s.module),
                         s.function.empty() ? fmt::format("{:x}", s.offset) : s.function);
    }
    if (!f.via.module.empty()) key += fmt::format("\x1f{}", f.via.function);
  }
  return fmt::format("{:016x}", fnv1a(key));
}

}  // namespace asyncwatch
