// Every string that comes from a trace (or a path) goes through printable() on its way out:
// a name in a trace must not drive the terminal. The colour escapes are ours, added around.
#include "call_site.h"
#include "findings/rules.h"
#include "format.h"
#include "names.h"
#include "printable.h"
#include "reports.h"

#include <unistd.h>

#include <climits>
#include <fmt/format.h>

namespace asyncwatch {

namespace {
struct Colours {
  const char* bold = "";
  const char* warning = "";
  const char* note = "";
  const char* error = "";
  const char* dim = "";
  const char* reset = "";
};
Colours colours(bool on) {
  Colours c;
  if (on) {
    c.bold = "\033[1m";
    c.warning = "\033[1;35m";
    c.note = "\033[1;36m";
    c.error = "\033[1;31m";
    c.dim = "\033[2m";
    c.reset = "\033[0m";
  }
  return c;
}

std::string cwd_prefix() {
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf)) return {};
  std::string s = buf;
  if (s.empty() || s.back() != '/') s += '/';
  return s;
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string percent(double share) { return fmt::format("{:.1f}%", share * 100.0); }
}  // namespace

std::string display_path(const std::string& path) {
  static const std::string prefix = cwd_prefix();
  if (!prefix.empty() && path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0)
    return path.substr(prefix.size());
  return path;
}

std::string location_text(const Finding& f) {
  if (!f.call_site_known) return {};
  if (!f.call_site.file.empty()) return fmt::format("{}:{}", display_path(f.call_site.file), f.call_site.line);
  // No source line: the function and its module ("cusparseSpMV (libcusparse.so.12)"), or the
  // module and the offset in it; never "??".
  return frame_name_text(f.call_site);
}

std::string missing_call_site_text(const Finding& f) {
  if (f.call_site_known) return {};
  if (f.stack.empty()) return "call site not recorded; set ASYNCWATCH_STACKS=all to record it";
  return "call site unknown: no frame of the stack is outside the CUDA runtime";
}

std::string call_site_line_text(const Finding& f) {
  if (!f.call_site_known) return {};
  std::string s = frame_text(f.call_site);
  if (!f.via.module.empty()) s += ", via " + frame_name_text(f.via);
  if (!f.call_site_is_user_code) s += " (no frame of the stack is in the program's own code; see --user-code)";
  return s;
}

std::string frame_text(const Frame& f) {
  if (f.function.empty() && f.file.empty()) return frame_name_text(f);  // "libcuda.so.1+0x2a3f0"
  std::string s = f.function.empty() ? "(unknown function)" : shorten_middle(f.function, kDisplayNameMax);
  if (!f.file.empty()) s += fmt::format(" at {}:{}", display_path(f.file), f.line);
  if (!f.module.empty())
    s += fmt::format(" ({})", basename_of(f.module));
  if (f.inlined) s += " [inlined]";
  return s;
}

void write_report_text(std::ostream& out, const Report& report, const TextStyle& style) {
  Colours c = colours(style.colour);
  for (const auto& p : report.processes) {
    out << fmt::format("{}asyncwatch:{} pid {} {} ({}), wall time {}{}{}\n", c.bold, c.reset, p.pid,
                       printable(p.command_line.empty() ? p.executable : p.command_line),
                       printable(display_path(p.trace)), format_duration(p.wall_ns),
                       p.device.empty() ? "" : ", device " + printable(p.device), p.simulated ? " (simulated)" : "");
    for (const auto& n : p.notes) out << fmt::format("  {}note:{} {}\n", c.note, c.reset, printable(n));
    for (const auto& l : gpu_overlap_lines(p.gpu_overlap, p.gpu_times)) out << "  " << printable(l) << '\n';  // issue 18
  }
  for (const auto& u : report.unreadable)
    out << fmt::format("{}asyncwatch:{} {}note:{} {} could not be read: {}\n", c.bold, c.reset, c.note, c.reset,
                       printable(display_path(u.trace)), printable(u.error));
  if (!report.processes.empty() || !report.unreadable.empty()) out << '\n';
  for (const auto& f : report.findings) {
    const RuleInfo& rule = rule_info(f.id);
    const char* sc = rule.severity == Severity::Error ? c.error : rule.severity == Severity::Warning ? c.warning : c.note;
    std::string where = location_text(f);
    std::string missing = missing_call_site_text(f);
    out << fmt::format("{}{}{}:{} {}{} {}[{}]{}\n", where.empty() ? "" : c.bold + printable(where) + ":" + c.reset + " ",
                       sc, severity_name(rule.severity), c.reset, printable(finding_message(f)),
                       missing.empty() ? "" : " (" + missing + ")", c.dim, rule.name, c.reset);
    std::string stats = plural(f.count, "call", "calls");
    if (f.bytes) stats += ", " + format_bytes(f.bytes);
    stats += fmt::format(", {} {} (min {}, median {}, max {}), {} of wall time", rule.hooks.time_verb,
                         format_duration(f.blocked.total()), format_duration(f.blocked.min()),
                         format_duration(f.blocked.median()), format_duration(f.blocked.max()), percent(f.share_of_wall));
    out << "    " << stats << '\n';
    if (f.evidence_checked) {
      if (f.completed_at_return == f.evidence_checked)
        out << fmt::format("    evidence: the stream had completed the copy when the call returned ({} of {} checked)\n",
                           f.completed_at_return, f.evidence_checked);
      else if (f.completed_at_return == 0)
        out << fmt::format("    evidence: the stream had not completed the copy when the call returned ({} checked)\n",
                           f.evidence_checked);
      else
        out << fmt::format("    evidence: in {} of {} checked calls the stream had completed the copy when the call "
                           "returned\n",
                           f.completed_at_return, f.evidence_checked);
    }
    if (rule.hooks.text_lines) {
      std::vector<std::string> lines;
      rule.hooks.text_lines(lines, f);
      for (const auto& l : lines) out << "    " << printable(l) << '\n';
    }
    if (f.call_site_known) out << fmt::format("    call site: {}\n", printable(call_site_line_text(f)));
    if (!f.stack.empty()) {
      out << "    stack:\n";
      for (size_t i = 0; i < f.stack.size(); ++i)
        out << fmt::format("      #{:<2} {} {}\n", i, hex(f.stack[i].address), printable(frame_text(f.stack[i])));
    }
    if (report.processes.size() > 1) {
      std::string per;
      for (const auto& p : f.processes)
        per += fmt::format("{}pid {} ({}, {})", per.empty() ? "" : ", ", p.pid, plural(p.count, "call", "calls"),
                           format_duration(p.blocked_ns_total));
      out << "    processes: " << per << '\n';
    }
    out << '\n';
  }
  const Summary& s = report.summary;
  // async_calls_blocking counts the calls that a blocking rule flagged (docs/report-json.md).
  std::string blocking = s.async_calls_blocking == 0
                             ? std::string("none flagged as blocking")
                             : fmt::format("{} flagged as blocking ({} in total)", s.async_calls_blocking,
                                           format_duration(s.blocked_ns_total));
  out << fmt::format("{}summary:{} {} asynchronous {}: {} really asynchronous, {}; {}{}\n", c.bold, c.reset,
                     s.async_calls, s.async_calls == 1 ? "call" : "calls", s.async_calls_async, blocking,
                     plural(s.findings, "finding", "findings"),
                     report.unreadable.empty()
                         ? std::string()
                         : fmt::format("; {} could not be read", plural(report.unreadable.size(), "trace", "traces")));
}

}  // namespace asyncwatch
