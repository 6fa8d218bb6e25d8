// Every string that comes from a trace (or a path) goes through printable() on its way out:
// a name in a trace must not drive the terminal. The colour escapes are ours, added around.
#include "symbols/call_site.h"
#include "findings/rules.h"
#include "report/format.h"
#include "symbols/names.h"
#include "report/printable.h"
#include "report/reports.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fmt/compile.h>
#include <fmt/format.h>
#include <map>

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

std::string percent(double share) { return fmt::format(FMT_COMPILE("{:.1f}%"), share * 100.0); }

std::string pid_text(uint64_t pid, int64_t rank) {
  return rank >= 0 ? fmt::format(FMT_COMPILE("pid {} (rank {})"), pid, rank) : fmt::format(FMT_COMPILE("pid {}"), pid);
}

// The overview first, as `nsys stats` prints it: one row per finding group, in the ranking's order
// (most impact first; a finding caused by another right after it, its rank marked "^").
void summary_table(std::ostream& out, const Report& report, const Colours& c) {
  if (report.findings.empty()) return;
  const CauseIndex causes(report);
  // The rows are made twice, for the column widths and then to be written, not kept: a report can
  // have hundreds of thousands (docs/performance.md, "Report memory"). The site column is last: no width.
  struct Row {
    std::string rank, severity, rule, calls, blocked, impact, share;
  };
  auto row = [&](size_t n, const Finding& f) {
    size_t cause_rank = 0;
    causes.cause(f, &cause_rank);
    return Row{cause_rank ? fmt::format(FMT_COMPILE("^{}"), n) : std::to_string(n),
               severity_name(finding_severity(f)),
               rule_info(f.id).name,
               std::to_string(f.count),
               format_duration(f.blocked.total()),
               format_duration(f.impact_ns),
               percent(f.impact_share)};
  };
  const Row head{"#", "severity", "rule", "calls", "blocked", "impact", "of run"};
  size_t w[7] = {};
  auto widen = [&](const Row& r) {
    const std::string* cells[] = {&r.rank, &r.severity, &r.rule, &r.calls, &r.blocked, &r.impact, &r.share};
    for (size_t i = 0; i < 7; ++i) w[i] = std::max(w[i], cells[i]->size());
  };
  widen(head);
  size_t n = 0;
  for (const auto& f : report.findings) widen(row(++n, f));
  auto line = [&](const Row& r, const std::string& site, bool is_head) {
    out << fmt::format(FMT_COMPILE("{}  {:>{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {}{}\n"),
                       is_head ? c.bold : "", r.rank, w[0], r.severity, w[1], r.rule, w[2], r.calls, w[3], r.blocked,
                       w[4], r.impact, w[5], r.share, w[6], site, is_head ? c.reset : "");
  };
  line(head, "site", true);
  n = 0;
  for (const auto& f : report.findings) {
    std::string site = location_text(f);
    if (site.empty()) site = "(unknown)";
    if (f.in_baseline) site += " (in baseline)";
    size_t cause_rank = 0;
    if (causes.cause(f, &cause_rank)) site += fmt::format(FMT_COMPILE(" (waited for #{})"), cause_rank);
    line(row(++n, f), printable(shorten_middle(site, 100)), false);
  }
  if (report.findings_not_shown)
    out << fmt::format(FMT_COMPILE("  ... and {} not shown (--top)\n"),
                       plural(report.findings_not_shown, "finding", "findings"));
  out << '\n';
}

// The module a note about symbols is about ("PATH: cannot read it for symbols (...)", "PATH: build
// id X differs ...", PATH possibly "TO (mapped from FROM)": the traced FROM), "" for other notes.
std::string note_module(const std::string& note) {
  for (const char* tail : {": cannot read it for symbols", ": build id "}) {
    auto pos = note.find(tail);
    if (pos == std::string::npos) continue;
    std::string path = note.substr(0, pos);
    auto mapped = path.find(" (mapped from ");
    if (mapped != std::string::npos && path.back() == ')') path = path.substr(mapped + 14, path.size() - mapped - 15);
    return path;
  }
  return {};
}

// A module without symbols changes a result when a call site (or the library function called) is
// in it, or when it would be the user's code (its frames, without lines, then count as library
// code and the call site moves out). A system library, the CUDA runtime or asyncwatch itself is
// never the user's, symbols or not: a note about it changes nothing the text report shows.
bool note_changes_a_result(const std::string& note, const Report& report) {
  std::string module = note_module(note);
  if (module.empty()) return true;
  for (const auto& f : report.findings)
    if ((f.call_site_known && f.call_site.module == module) || f.via.module == module) return true;
  Frame probe;
  probe.module = module;
  probe.file = "source.cpp";  // as if it had symbols: classified by its path alone
  probe.line = 1;
  CallSitePolicy policy;
  policy.user_code = report.options.user_code;
  return classify_frame(probe, policy) == FrameKind::User;
}

}  // namespace

// --stacks user: the frames of the program's own code (call_site.h); every frame when none is.
std::vector<const Frame*> shown_frames(const Finding& f, const Report& report, size_t* hidden, FrameKindMemo* memo) {
  std::vector<const Frame*> all, user;
  CallSitePolicy policy;
  policy.user_code = report.options.user_code;
  policy.executable = finding_executable(f, report);
  for (const auto& fr : f.stack) {
    all.push_back(&fr);
    if ((memo ? (*memo)(fr, policy) : classify_frame(fr, policy)) == FrameKind::User) user.push_back(&fr);
  }
  *hidden = 0;
  if (report.full_stacks || user.empty()) return all;
  *hidden = all.size() - user.size();
  return user;
}
std::string finding_executable(const Finding& f, const Report& report) {
  std::string exe;
  for (const auto& p : report.processes)
    if (!f.processes.empty() && p.pid == f.processes.front().pid) exe = p.executable;
  return exe;
}

std::string finding_module(const Finding& f, const Report& report) {
  std::string module = f.call_site_known ? f.call_site.module : std::string();
  if (module.empty()) module = finding_executable(f, report);
  if (module.empty() && !report.processes.empty()) module = report.processes.front().executable;
  return module;
}

std::string display_path(const std::string& path) {
  static const std::string prefix = cwd_prefix();
  if (!prefix.empty() && path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0)
    return path.substr(prefix.size());
  return path;
}

std::string location_text(const Finding& f) {
  if (!f.call_site_known) return {};
  if (!f.call_site.file.empty())
    return f.call_site.has_line() ? fmt::format(FMT_COMPILE("{}:{}"), display_path(f.call_site.file), f.call_site.line)
                                  : display_path(f.call_site.file);  // line 0: frame_text says why
  // No source line: the function and its module ("cusparseSpMV (libcusparse.so.12)"), or the
  // module and the offset in it; never "??".
  return frame_name_text(f.call_site);
}

std::string missing_call_site_text(const Finding& f) {
  if (f.call_site_known) return {};
  if (f.stack.empty()) return "call site not recorded; set ASYNCWATCH_STACKS=all to record it";
  return "call site unknown: no frame of the stack is outside the CUDA runtime";
}

uint32_t borrowed_lender_tid(const Finding& f) {
  const uint32_t tid = f.python_lender & trace::kPythonLenderTidMask;
  return tid == trace::kPythonLenderTidUnknown ? 0 : tid;
}

std::vector<uint32_t> calling_threads(const Finding& f) {
  std::vector<uint32_t> tids;
  for (const auto& [key, ns] : f.thread_blocked) tids.push_back(static_cast<uint32_t>(key));
  std::sort(tids.begin(), tids.end());
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  return tids;
}

std::string borrowed_line_text(const Finding& f) {
  if (!f.call_site_known || !f.python_lender) return {};
  const uint32_t lender = borrowed_lender_tid(f);
  std::string s =
      lender ? fmt::format(FMT_COMPILE("the Python line of thread {}"), lender) : "the Python line of another thread";
  s += f.python_lender & trace::kPythonLenderRunning ? ", which was running Python (it may have moved on since)"
                                                     : ", which was waiting in a C call";
  std::vector<uint32_t> tids = calling_threads(f);
  if (!tids.empty()) {
    s += tids.size() == 1 ? "; the calls ran on native thread " : "; the calls ran on native threads ";
    for (size_t i = 0; i < tids.size() && i < 4; ++i) s += (i ? ", " : "") + std::to_string(tids[i]);
    if (tids.size() > 4) s += fmt::format(FMT_COMPILE(" and {} more"), tids.size() - 4);
  }
  return s;
}

std::string call_site_line_text(const Finding& f) {
  if (!f.call_site_known) return {};
  std::string s = frame_text(f.call_site);
  if (!f.via.module.empty()) s += ", via " + frame_name_text(f.via);
  if (f.python_lender) s += " (" + borrowed_line_text(f) + ")";
  if (!f.call_site_is_user_code) s += " (no frame of the stack is in the program's own code; see --user-code)";
  return s;
}

std::string frame_address_text(const Frame& f) {
  if (f.origin != FrameOrigin::Python) return hex(f.address);
  return f.borrowed ? "[py, borrowed]" : "[py]";
}

std::string frame_text(const Frame& f) {
  if (f.function.empty() && f.file.empty()) return frame_name_text(f);  // "libcuda.so.1+0x2a3f0"
  std::string s = f.function.empty() ? "(unknown function)" : shorten_middle(f.function, kDisplayNameMax);
  if (!f.file.empty())  // (line 0: Frame::has_line)
    s += f.has_line() ? fmt::format(FMT_COMPILE(" at {}:{}"), display_path(f.file), f.line)
                      : fmt::format(FMT_COMPILE(" at {} (line 0: code the compiler merged from several lines)"),
                                    display_path(f.file));
  if (!f.module.empty()) s += fmt::format(FMT_COMPILE(" ({})"), basename_of(f.module));
  if (f.inlined) s += " [inlined]";
  return s;
}

CauseIndex::CauseIndex(const Report& report) : report_(report) {
  bool any = false;
  for (const auto& f : report.findings) any = any || !f.caused_by.empty();
  if (!any) return;
  for (size_t i = 0; i < report.findings.size(); ++i) at_.emplace(report.findings[i].key, i);
}

const Finding* CauseIndex::cause(const Finding& f, size_t* rank) const {
  *rank = 0;
  if (f.caused_by.empty()) return nullptr;
  auto it = at_.find(f.caused_by);
  if (it == at_.end()) return nullptr;
  *rank = it->second + 1;
  return &report_.findings[it->second];
}

std::string impact_text(const Finding& f, const CauseIndex& causes) {
  size_t rank = 0;
  std::string out;
  if (const Finding* cause = causes.cause(f, &rank)) {
    std::string where = location_text(*cause);
    out = fmt::format(FMT_COMPILE("waited for finding #{} ({}{}), whose fix removes what it waited for; "), rank,
                      rule_info(cause->id).name, where.empty() ? "" : " at " + where);
  }
  if (f.impact_ns == 0)
    out += "fixing this saves little end to end";
  else
    out += fmt::format(FMT_COMPILE("fixing this saves about {} ({} of the run)"), format_duration(f.impact_ns),
                       percent(f.impact_share));
  if (!f.impact_basis.empty()) out += " (" + f.impact_basis + ")";
  return out;
}

std::string finding_stats_text(const Finding& f) {
  const RuleInfo& rule = rule_info(f.id);
  std::string stats = plural(f.count, "call", "calls");
  if (f.bytes) stats += ", " + format_bytes(f.bytes);
  // The share is of one thread's time (the thread that spent most in these calls): never over 100 %.
  const std::string whose =
      f.threads > 1 ? fmt::format(FMT_COMPILE("the busiest of {} threads'"), f.threads) : "its thread's";
  if (f.count > 1)
    stats += fmt::format(FMT_COMPILE(", {} {} (min {}, median {}, max {}), {} of {} wall time"), rule.hooks.time_verb,
                         format_duration(f.blocked.total()), format_duration(f.blocked.min()),
                         format_duration(f.blocked.median()), format_duration(f.blocked.max()),
                         percent(f.share_of_wall), whose);
  else
    stats += fmt::format(FMT_COMPILE(", {} {}, {} of {} wall time"), rule.hooks.time_verb,
                         format_duration(f.blocked.total()), percent(f.share_of_wall), whose);
  if (f.in_baseline) stats += " (in the baseline)";
  return stats;
}

std::string evidence_text(const Finding& f) {
  if (!f.evidence_checked) return {};
  if (f.completed_at_return == f.evidence_checked)
    return fmt::format(
        FMT_COMPILE("evidence: the stream had completed the copy when the call returned ({} of {} checked)"),
        f.completed_at_return, f.evidence_checked);
  if (f.completed_at_return == 0)
    return fmt::format(
        FMT_COMPILE("evidence: the stream had not completed the copy when the call returned ({} checked)"),
        f.evidence_checked);
  return fmt::format(
      FMT_COMPILE("evidence: in {} of {} checked calls the stream had completed the copy when the call returned"),
      f.completed_at_return, f.evidence_checked);
}

std::string ranges_text(const Finding& f) {
  if (f.ranges.empty()) return {};  // NVTX ranges, most calls first (at most 4 named)
  std::vector<std::pair<std::string, uint64_t>> r = most_first(f.ranges);
  std::string text;
  for (size_t i = 0; i < r.size() && i < 4; ++i)
    text += fmt::format(FMT_COMPILE("{}`{}` ({} of {})"), i ? ", " : "", r[i].first, r[i].second,
                        plural(f.count, "call", "calls"));
  if (r.size() > 4) text += fmt::format(FMT_COMPILE(" and {} more"), r.size() - 4);
  return fmt::format(FMT_COMPILE("in {} {}"), r.size() > 1 ? "ranges" : "range", text);
}

std::string summary_text(const Report& report) {
  const Summary& s = report.summary;
  // async_calls_blocking counts the calls that a blocking rule flagged (docs/report-json.md).
  std::string blocking = s.async_calls_blocking == 0
                             ? std::string("none flagged as blocking")
                             : fmt::format(FMT_COMPILE("{} flagged as blocking ({} in total)"), s.async_calls_blocking,
                                           format_duration(s.blocked_ns_total));
  return fmt::format(
      FMT_COMPILE("{} asynchronous {}: {} really asynchronous, {}; {}{}"), s.async_calls,
      s.async_calls == 1 ? "call" : "calls", s.async_calls_async, blocking, plural(s.findings, "finding", "findings"),
      report.unreadable.empty()
          ? std::string()
          : fmt::format(FMT_COMPILE("; {} could not be read"), plural(report.unreadable.size(), "trace", "traces")));
}

void write_report_text(std::ostream& out, const Report& report, const TextStyle& style) {
  Colours c = colours(style.colour);
  // A note said by several processes (the same module on every rank) is printed once.
  std::map<std::string, size_t> note_count;
  size_t quiet_notes = 0;  // about modules whose symbols change no result (shown with --stacks full)
  for (const auto& p : report.processes)
    for (const auto& n : p.notes) {
      if (report.full_stacks || note_changes_a_result(n, report))
        ++note_count[n];
      else
        ++quiet_notes;
    }
  for (const auto& p : report.processes) {
    out << fmt::format(FMT_COMPILE("{}asyncwatch:{} {} {} ({}), wall time {}{}{}\n"), c.bold, c.reset,
                       pid_text(p.pid, p.rank), printable(p.command_line.empty() ? p.executable : p.command_line),
                       printable(display_path(p.trace)), format_duration(p.wall_ns),
                       p.device.empty() ? "" : ", device " + printable(p.device), p.simulated ? " (simulated)" : "");
    if (p.signal) out << fmt::format(FMT_COMPILE("  {}note:{} killed by signal {}\n"), c.note, c.reset, p.signal);
    for (const auto& n : p.notes) {
      auto it = note_count.find(n);
      if (it == note_count.end()) continue;  // printed with an earlier process
      std::string others = it->second > 1 ? fmt::format(FMT_COMPILE(" (and {} more processes)"), it->second - 1) : "";
      out << fmt::format(FMT_COMPILE("  {}note:{} {}{}\n"), c.note, c.reset, printable(n), others);
      note_count.erase(it);
    }
    for (const auto& l : gpu_overlap_lines(p.gpu_overlap, p.gpu_times)) out << "  " << printable(l) << '\n';
  }
  if (quiet_notes)
    out << fmt::format(
        FMT_COMPILE("  {}note:{} {} about library modules without symbols here not shown: they change no call "
                    "site (--stacks full shows them)\n"),
        c.note, c.reset, plural(quiet_notes, "note", "notes"));
  for (const auto& u : report.unreadable)
    out << fmt::format(FMT_COMPILE("{}asyncwatch:{} {}note:{} {} could not be read: {}\n"), c.bold, c.reset, c.note,
                       c.reset, printable(display_path(u.trace)), printable(u.error));
  if (!report.processes.empty() || !report.unreadable.empty()) out << '\n';
  summary_table(out, report, c);
  const CauseIndex causes(report);
  FrameKindMemo kinds;
  for (const auto& f : report.findings) {
    const RuleInfo& rule = rule_info(f.id);
    const char* sc = finding_severity(f) == Severity::Error     ? c.error
                     : finding_severity(f) == Severity::Warning ? c.warning
                                                                : c.note;
    std::string where = location_text(f);
    std::string missing = missing_call_site_text(f);
    out << fmt::format(FMT_COMPILE("{}{}{}:{} {}{} {}[{}]{}\n"),
                       where.empty() ? "" : c.bold + printable(where) + ":" + c.reset + " ", sc,
                       severity_name(finding_severity(f)), c.reset, printable(finding_message(f)),
                       missing.empty() ? "" : " (" + missing + ")", c.dim, rule.name, c.reset);
    out << "    " << finding_stats_text(f) << '\n';
    out << "    impact: " << printable(impact_text(f, causes)) << '\n';
    if (std::string e = evidence_text(f); !e.empty()) out << "    " << e << '\n';
    if (rule.hooks.text_lines) {
      std::vector<std::string> lines;
      rule.hooks.text_lines(lines, f);
      for (const auto& l : lines) out << "    " << printable(l) << '\n';
    }
    if (std::string r = ranges_text(f); !r.empty()) out << "    " << printable(r) << '\n';
    if (f.call_site_known) out << fmt::format(FMT_COMPILE("    call site: {}\n"), printable(call_site_line_text(f)));
    if (!f.stack.empty()) {
      size_t hidden = 0;
      std::vector<const Frame*> frames = shown_frames(f, report, &hidden, &kinds);
      out << (hidden ? fmt::format(FMT_COMPILE("    stack ({} library and runtime frames not shown; --stacks full):\n"),
                                   hidden)
                     : std::string("    stack:\n"));
      for (const Frame* fr : frames)
        out << fmt::format(FMT_COMPILE("      #{:<2} {} {}\n"), static_cast<size_t>(fr - f.stack.data()),
                           frame_address_text(*fr), printable(frame_text(*fr)));
    }
    if (report.processes.size() > 1) {
      std::string per;
      for (const auto& p : f.processes)
        per += fmt::format(FMT_COMPILE("{}{} ({}, {})"), per.empty() ? "" : ", ", pid_text(p.pid, p.rank),
                           plural(p.count, "call", "calls"), format_duration(p.blocked_ns_total));
      out << "    processes: " << per << '\n';
    }
    out << '\n';
  }
  out << fmt::format(FMT_COMPILE("{}summary:{} {}\n"), c.bold, c.reset, summary_text(report));
  if (!report.baseline.empty()) {
    size_t known = 0;
    for (const auto& f : report.findings) known += f.in_baseline;
    out << fmt::format(FMT_COMPILE("{}baseline:{} {} of {} shown in {}, {} new\n"), c.bold, c.reset, known,
                       plural(report.findings.size(), "finding", "findings"), printable(report.baseline),
                       report.findings.size() - known);
  }
}

}  // namespace asyncwatch
