// Every string from a trace (names, paths, messages that quote them) goes through html_text() on
// its way out; the page's own markup is written around it. No script: the tooltips are SVG
// <title>s and the bars of flagged calls link to their finding, so the page reads the same with
// JavaScript off.
#include "report/report_html.h"

#include "report/ascii_words.h"

#include "findings/rules.h"
#include "report/format.h"
#include "symbols/names.h"
#include "report/printable.h"
#include "report/reports.h"
#include "report/simulated.h"
#include "symbols/call_site.h"

#include <asyncwatch/trace_format.h>

#include <cmath>
#include <fmt/format.h>

namespace asyncwatch {

std::string html_text(std::string_view text) {
  std::string s = printable(text);
  using namespace ascii_words;
  if (no_word(s, [](uint64_t w) {
        return has_byte(w, '&') | has_byte(w, '<') | has_byte(w, '>') | has_byte(w, '"') | has_byte(w, '\'');
      }))
    return s;  // nothing to escape (most text)
  // The runs between escaped characters appended whole (a character at a time cost half as much
  // again: the HTML report's time over the JSON report's, docs/performance.md).
  std::string o;
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char* entity;
    switch (s[i]) {
      case '&': entity = "&amp;"; break;
      case '<': entity = "&lt;"; break;
      case '>': entity = "&gt;"; break;
      case '"': entity = "&quot;"; break;
      case '\'': entity = "&#39;"; break;
      default: continue;
    }
    if (o.empty()) o.reserve(s.size() + 16);
    o.append(s, run, i - run);
    o += entity;
    run = i + 1;
  }
  if (run == 0) return s;  // nothing to escape
  o.append(s, run, std::string::npos);
  return o;
}

namespace {

const char* severity_class(Severity s) {
  return s == Severity::Error ? "sev-error" : s == Severity::Warning ? "sev-warning" : "sev-note";
}

// The colours: one table, for the CSS and the legend.
struct Swatch {
  const char* css_class;
  const char* colour;
  const char* legend;
};
constexpr Swatch kSwatches[] = {
    {"call", "#adb5bd", "call"},
    {"sev-error", "#e03131", "flagged: error"},
    {"sev-warning", "#f76707", "flagged: warning"},
    {"sev-note", "#1098ad", "flagged: note"},
    {"gpu-kernel", "#2b8a3e", "kernel (device)"},
    {"gpu-copy", "#5f3dc4", "copy (device)"},
    {"gpu-memset", "#66a80f", "memset (device)"},
    {"gpu-host-function", "#ae3ec9", "host function (device)"},
    {"gpu-unknown", "#868e96", "other (device)"},
};

const char* gpu_class(uint8_t op) {
  switch (static_cast<trace::GpuOp>(op)) {
    case trace::GpuOp::Kernel: return "gpu-kernel";
    case trace::GpuOp::Copy: return "gpu-copy";
    case trace::GpuOp::Memset: return "gpu-memset";
    case trace::GpuOp::HostFunction: return "gpu-host-function";
    default: return "gpu-unknown";
  }
}

void write_style(std::ostream& out) {
  out << "<style>\n"
         "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1280px;"
         "padding:16px 24px;color:#212529;background:#fff}\n"
         "h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #dee2e6}"
         "h3{font-size:15px;margin:0 0 6px;font-weight:600}\n"
         "code,pre,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,monospace;font-size:12.5px}\n"
         "pre{background:#f8f9fa;padding:6px 8px;overflow-x:auto;margin:4px 0}\n"
         "table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px 2px 0;text-align:left;"
         "vertical-align:top}th{border-bottom:1px solid #ced4da}td.num,th.num{text-align:right}\n"
         ".severity-counts{list-style:none;padding:0;display:flex;gap:18px;margin:4px 0}\n"
         ".finding{border-left:4px solid #adb5bd;padding:6px 12px;margin:12px 0;background:#fcfcfd}\n"
         ".finding.sev-error{border-color:#e03131}.finding.sev-warning{border-color:#f76707}"
         ".finding.sev-note{border-color:#1098ad}\n"
         ".finding p{margin:3px 0}.sevname.sev-error{color:#c92a2a}.sevname.sev-warning{color:#d9480f}"
         ".sevname.sev-note{color:#0b7285}.rule{color:#495057}.fix{color:#2b8a3e}\n"
         "svg.timeline{max-width:100%;height:auto;display:block;margin:4px 0}\n"
         "svg text{font:11px system-ui,sans-serif;fill:#343a40}svg .axis line{stroke:#dee2e6}"
         "svg .lane-bg{fill:#f8f9fa}\n";
  for (const auto& s : kSwatches) out << fmt::format("svg .{}{{fill:{}}}", s.css_class, s.colour);
  out << "\n.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12px;margin:2px 0 6px}"
         ".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}\n"
         ".note{color:#495057}\n"
         "</style>\n";
}

std::string pid_text(const ProcessSummary& p) {
  return p.rank >= 0 ? fmt::format("pid {} (rank {})", p.pid, p.rank) : fmt::format("pid {}", p.pid);
}

// A round step for about 8 ticks over `length` ns.
uint64_t tick_step(uint64_t length) {
  double raw = static_cast<double>(length) / 8.0;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return std::max<uint64_t>(1, static_cast<uint64_t>(m * p));
  return static_cast<uint64_t>(10 * p);
}

std::string bar_title(const PictureBar& b, const PictureLane& lane, const Report& report) {
  if (lane.stream) {
    const char* op = trace::gpu_op_text(static_cast<trace::GpuOp>(b.kind));
    if (b.calls == 1)
      return fmt::format("{} ran {} on the device, at {}", op, format_duration(b.busy_ns), format_duration(b.start_ns));
    return fmt::format("{} {} operations ran {} on the device, {} to {}", b.calls, op, format_duration(b.busy_ns),
                       format_duration(b.start_ns), format_duration(b.end_ns));
  }
  if (b.finding >= 0) {
    const Finding& f = report.findings[static_cast<size_t>(b.finding)];
    const RuleInfo& rule = rule_info(f.id);
    std::string site = location_text(f);
    if (site.empty()) site = "(call site unknown)";
    if (b.calls == 1)
      return fmt::format("{}: {} {} at {} [{}], {} (finding #{})", b.label, rule.hooks.time_verb,
                         format_duration(b.busy_ns), format_duration(b.start_ns), rule.name, site, b.finding + 1);
    return fmt::format("{} calls [{}], {}, {} {} in all, {} to {} (finding #{}); the longest: {}, {}", b.calls,
                       rule.name, site, rule.hooks.time_verb, format_duration(b.busy_ns), format_duration(b.start_ns),
                       format_duration(b.end_ns), b.finding + 1, b.label, format_duration(b.label_ns));
  }
  if (b.finding == PixelLane::kSeveralFindings)
    return fmt::format("{} flagged calls of several findings, {} in all, {} to {}; the longest: {}, {}", b.calls,
                       format_duration(b.busy_ns), format_duration(b.start_ns), format_duration(b.end_ns), b.label,
                       format_duration(b.label_ns));
  if (b.calls == 1)
    return fmt::format("{}: {} at {}", b.label, format_duration(b.busy_ns), format_duration(b.start_ns));
  return fmt::format("{} calls, {} in calls, {} to {}; the longest: {}, {}", b.calls, format_duration(b.busy_ns),
                     format_duration(b.start_ns), format_duration(b.end_ns), b.label, format_duration(b.label_ns));
}

constexpr double kLabelWidth = 230, kAxisHeight = 26, kLaneHeight = 16, kLaneGap = 6, kGroupGap = 18;

void write_picture(std::ostream& out, const ProcessPicture& pic, const Report& report, size_t index) {
  if (!pic.error.empty()) {
    out << "<p class=\"note\">no timeline: the trace could not be read again: " << html_text(pic.error) << "</p>\n";
    return;
  }
  if (pic.lanes.empty()) {
    out << "<p class=\"note\">no timeline: the trace has no calls</p>\n";
    return;
  }
  bool any_stream = false;
  for (const auto& l : pic.lanes) any_stream |= l.stream;
  const double width = kLabelWidth + pic.width + 20;
  double height = kAxisHeight + static_cast<double>(pic.lanes.size()) * (kLaneHeight + kLaneGap) + 4;
  if (any_stream) height += kGroupGap;
  out << fmt::format(
      "<svg class=\"timeline\" id=\"timeline-{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"timeline of {}\">\n",
      index, width, height, width, height, html_text(pid_text(report.processes[index - 1])));
  // The time axis: round ticks from the process start.
  const uint64_t step = tick_step(pic.length_ns);
  out << "<g class=\"axis\">";
  for (uint64_t t = 0; t <= pic.length_ns; t += step) {
    double x = kLabelWidth + static_cast<double>(t) / static_cast<double>(pic.length_ns) * pic.width;
    out << fmt::format("<line x1=\"{:.1f}\" y1=\"{:.0f}\" x2=\"{:.1f}\" y2=\"{:.0f}\"/>", x, kAxisHeight - 6, x,
                       height);
    out << fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>", x, kAxisHeight - 10,
                       t ? format_duration(t) : std::string("0"));
    if (step > pic.length_ns - t) break;
  }
  out << "</g>\n";
  double y = kAxisHeight;
  bool in_streams = false;
  for (const auto& lane : pic.lanes) {
    if (lane.stream && !in_streams) {
      in_streams = true;
      out << fmt::format("<text class=\"group-label\" x=\"4\" y=\"{:.0f}\">GPU, where the work ran:</text>\n",
                         y + kGroupGap - 6);
      y += kGroupGap;
    }
    out << fmt::format("<g class=\"lane {}\">", lane.stream ? "stream-lane" : "host-lane");
    out << fmt::format("<text x=\"4\" y=\"{:.0f}\">{}</text>", y + kLaneHeight - 4,
                       html_text(shorten_middle(lane.name, 36)));
    out << fmt::format("<rect class=\"lane-bg\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>",
                       kLabelWidth, y, pic.width, kLaneHeight);
    for (const auto& b : lane.bars) {
      std::string cls = lane.stream ? std::string("bar gpu ") + gpu_class(b.kind)
                        : b.finding == -1
                            ? std::string("bar call")
                            : std::string("bar flagged ") + severity_class(static_cast<Severity>(b.severity));
      std::string rect = fmt::format(
          "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\"><title>{}</title></rect>",
          cls, kLabelWidth + b.x0, y + (b.finding == -1 || lane.stream ? 2 : 0), b.x1 - b.x0,
          kLaneHeight - (b.finding == -1 || lane.stream ? 4 : 0), html_text(bar_title(b, lane, report)));
      if (b.finding >= 0)
        out << fmt::format("<a href=\"#finding-{}\">{}</a>", b.finding + 1, rect);
      else
        out << rect;
    }
    out << "</g>\n";
    y += kLaneHeight + kLaneGap;
  }
  out << "</svg>\n";
  out << "<div class=\"legend\">";
  for (const auto& s : kSwatches)
    if (any_stream || std::string_view(s.css_class).substr(0, 4) != "gpu-")
      out << fmt::format("<span><i style=\"background:{}\"></i>{}</span>", s.colour, s.legend);
  out << "</div>\n";
  if (pic.lanes_not_drawn)
    out << fmt::format("<p class=\"note\">{} with fewer calls not drawn (at most {} threads and {} streams)</p>\n",
                       plural(pic.lanes_not_drawn, "lane", "lanes"), kMaxHostLanes, kMaxStreamLanes);
}

void write_overlap(std::ostream& out, const ProcessSummary& p) {
  if (!p.gpu_times) return;
  if (p.gpu_overlap.empty()) {
    for (const auto& l : gpu_overlap_lines(p.gpu_overlap, p.gpu_times))
      out << "<p class=\"note\">" << html_text(l) << "</p>\n";
    return;
  }
  out << "<table class=\"overlap\"><thead><tr><th>stream</th><th class=\"num\">operations</th>"
         "<th class=\"num\">GPU busy</th><th class=\"num\">first to last</th><th>while the host waited in</th>"
         "<th class=\"num\">calls</th><th class=\"num\">host waited</th><th class=\"num\">stream busy</th>"
         "<th class=\"num\">stream idle</th></tr></thead><tbody>\n";
  for (const auto& s : p.gpu_overlap) {
    const uint64_t span = s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0;
    std::string head =
        fmt::format("<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                    html_text(s.stream), s.spans, format_duration(s.busy_ns), format_duration(span));
    if (s.rules.empty()) out << "<tr>" << head << "<td colspan=\"5\">no flagged call on this stream</td></tr>\n";
    for (size_t i = 0; i < s.rules.size(); ++i) {
      const RuleOverlap& r = s.rules[i];
      out << "<tr" << (r.gpu_busy_ns > r.gpu_idle_ns ? " class=\"lost-overlap\"" : "") << ">"
          << (i == 0 ? head : std::string("<td colspan=\"4\"></td>"))
          << fmt::format(
                 "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                 "<td class=\"num\">{}</td></tr>\n",
                 rule_info(r.rule).name, r.calls, format_duration(r.host_blocked_ns), format_duration(r.gpu_busy_ns),
                 format_duration(r.gpu_idle_ns));
    }
  }
  out << "</tbody></table>\n";
  // The same figures in the text report's words (one definition: timeline/gpu_overlap.h).
  out << "<pre class=\"overlap-text\">";
  for (const auto& l : gpu_overlap_lines(p.gpu_overlap, p.gpu_times)) out << html_text(l) << '\n';
  out << "</pre>\n";
}

// `kinds`: the frames' kinds, kept across findings (their stacks share frames: classifying each
// anew was two fifths of the findings' part of the page, docs/performance.md).
void write_finding(std::ostream& out, const Finding& f, const Report& report, size_t n, const CauseIndex& causes,
                   FrameKindMemo& kinds) {
  const RuleInfo& rule = rule_info(f.id);
  const Severity sev = finding_severity(f);
  out << fmt::format("<article class=\"finding {}\" id=\"finding-{}\">\n", severity_class(sev), n);
  std::string where = location_text(f);
  std::string missing = missing_call_site_text(f);
  out << fmt::format("<h3>#{} {}<span class=\"sevname {}\">{}</span>: {}{} <span class=\"rule\">[{}]</span></h3>\n", n,
                     where.empty() ? "" : "<span class=\"mono loc\">" + html_text(where) + "</span>: ",
                     severity_class(sev), severity_name(sev), html_text(finding_message(f)),
                     missing.empty() ? "" : " (" + html_text(missing) + ")", rule.name);
  out << "<p class=\"stats\">" << html_text(finding_stats_text(f)) << "</p>\n";
  out << "<p class=\"impact\">impact: " << html_text(impact_text(f, causes)) << "</p>\n";
  if (std::string e = evidence_text(f); !e.empty()) out << "<p class=\"evidence\">" << html_text(e) << "</p>\n";
  if (rule.hooks.text_lines) {
    std::vector<std::string> lines;
    rule.hooks.text_lines(lines, f);
    for (const auto& l : lines) out << "<p class=\"detail\">" << html_text(l) << "</p>\n";
  }
  if (std::string r = ranges_text(f); !r.empty()) out << "<p class=\"ranges\">" << html_text(r) << "</p>\n";
  if (f.call_site_known)
    out << "<p class=\"call-site\">call site: <span class=\"mono\">" << html_text(call_site_line_text(f))
        << "</span></p>\n";
  out << "<p class=\"fix\">fix: " << html_text(rule.help) << "</p>\n";
  if (!f.stack.empty()) {
    size_t hidden = 0;
    std::vector<const Frame*> frames = shown_frames(f, report, &hidden, &kinds);
    out << "<details class=\"stack\" open><summary>"
        << (hidden ? fmt::format("stack ({} library and runtime frames not shown; --stacks full)", hidden)
                   : std::string("stack"))
        << "</summary><pre>";
    for (const Frame* fr : frames)
      out << html_text(fmt::format("#{:<2} {} {}", static_cast<size_t>(fr - f.stack.data()), frame_address_text(*fr),
                                   frame_text(*fr)))
          << '\n';
    out << "</pre></details>\n";
  }
  if (report.processes.size() > 1) {
    std::string per;
    for (const auto& p : f.processes)
      per += fmt::format("{}{} ({}, {})", per.empty() ? "" : ", ",
                         p.rank >= 0 ? fmt::format("pid {} (rank {})", p.pid, p.rank) : fmt::format("pid {}", p.pid),
                         plural(p.count, "call", "calls"), format_duration(p.blocked_ns_total));
    out << "<p class=\"processes\">processes: " << html_text(per) << "</p>\n";
  }
  out << "</article>\n";
}

}  // namespace

void write_report_html(std::ostream& out, const Report& report, const std::vector<ProcessPicture>& pictures) {
  std::string title = "asyncwatch report";
  if (!report.processes.empty()) {
    const std::string& exe = report.processes.front().executable;
    title += ": " + exe.substr(exe.rfind('/') + 1);
    if (report.processes.size() > 1) title += fmt::format(" and {} more processes", report.processes.size() - 1);
  }
  if (report_simulated(report)) title += " (simulated, no GPU)";
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"asyncwatch " ASYNCWATCH_VERSION "\">\n"
      << "<title>" << html_text(title) << "</title>\n";
  write_style(out);
  out << "</head>\n<body>\n<h1>" << html_text(title) << "</h1>\n";

  // The summary: what the text report's last line says, and the findings by severity.
  size_t by_severity[3] = {};
  for (const auto& f : report.findings) ++by_severity[static_cast<size_t>(finding_severity(f))];
  out << "<section id=\"summary\">\n<p class=\"summary-line\"><b>summary:</b> " << html_text(summary_text(report))
      << "</p>\n";
  out << fmt::format(
      "<ul class=\"severity-counts\"><li class=\"count-error\">{} error{}</li><li class=\"count-warning\">{} "
      "warning{}</li><li class=\"count-note\">{} note{}</li>{}</ul>\n",
      by_severity[2], by_severity[2] == 1 ? "" : "s", by_severity[1], by_severity[1] == 1 ? "" : "s", by_severity[0],
      by_severity[0] == 1 ? "" : "s",
      report.findings_not_shown
          ? fmt::format("<li>{} not shown (--top)</li>", plural(report.findings_not_shown, "finding", "findings"))
          : std::string());
  if (!report.baseline.empty()) {
    size_t known = 0;
    for (const auto& f : report.findings) known += f.in_baseline;
    out << "<p class=\"baseline\">"
        << html_text(fmt::format("baseline: {} of {} shown in {}, {} new", known,
                                 plural(report.findings.size(), "finding", "findings"), report.baseline,
                                 report.findings.size() - known))
        << "</p>\n";
  }
  for (const auto& u : report.unreadable)
    out << "<p class=\"unreadable\">"
        << html_text(fmt::format("{} could not be read: {}", display_path(u.trace), u.error)) << "</p>\n";
  if (!report.findings.empty()) {
    const CauseIndex causes(report);
    out << "<table class=\"findings-table\"><thead><tr><th class=\"num\">#</th><th>severity</th><th>rule</th>"
           "<th class=\"num\">calls</th><th class=\"num\">blocked</th><th class=\"num\">impact</th>"
           "<th class=\"num\">of run</th><th>site</th></tr></thead><tbody>\n";
    size_t n = 0;
    for (const auto& f : report.findings) {
      ++n;
      std::string site = location_text(f);
      if (site.empty()) site = "(unknown)";
      if (f.in_baseline) site += " (in baseline)";
      size_t cause_rank = 0;
      if (causes.cause(f, &cause_rank)) site += fmt::format(" (waited for #{})", cause_rank);
      out << fmt::format(
          "<tr class=\"{}\"><td class=\"num\"><a href=\"#finding-{}\">{}{}</a></td><td>{}</td><td>{}</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"mono\">{}</td></tr>\n",
          severity_class(finding_severity(f)), n, cause_rank ? "^" : "", n, severity_name(finding_severity(f)),
          rule_info(f.id).name, f.count, format_duration(f.blocked.total()), format_duration(f.impact_ns),
          fmt::format("{:.1f}%", 100.0 * f.impact_share), html_text(shorten_middle(site, 100)));
    }
    out << "</tbody></table>\n";
  }
  out << "</section>\n";

  // A section per process: its header, notes, timeline and overlap figures.
  out << "<section id=\"processes\">\n";
  for (size_t i = 0; i < report.processes.size(); ++i) {
    const ProcessSummary& p = report.processes[i];
    out << fmt::format("<div class=\"process\" id=\"process-{}\">\n", i + 1);
    out << "<h2>" << html_text(pid_text(p)) << ' '
        << html_text(shorten_middle(p.command_line.empty() ? p.executable : p.command_line, 160)) << "</h2>\n";
    out << "<p class=\"process-head\">"
        << html_text(fmt::format("trace {}, wall time {}{}{}", display_path(p.trace), format_duration(p.wall_ns),
                                 p.device.empty() ? "" : ", device " + p.device, p.simulated ? " (simulated)" : ""))
        << "</p>\n";
    if (p.signal) out << fmt::format("<p class=\"note\">note: killed by signal {}</p>\n", p.signal);
    if (!p.notes.empty()) {
      out << "<details class=\"notes\"><summary>" << plural(p.notes.size(), "note", "notes") << "</summary><ul>";
      for (const auto& n : p.notes) out << "<li>" << html_text(n) << "</li>";
      out << "</ul></details>\n";
    }
    if (i < pictures.size()) write_picture(out, pictures[i], report, i + 1);
    write_overlap(out, p);
    out << "</div>\n";
  }
  out << "</section>\n";

  out << "<section id=\"findings\">\n<h2>" << plural(report.findings.size(), "finding", "findings") << "</h2>\n";
  size_t n = 0;
  const CauseIndex causes(report);
  FrameKindMemo kinds;
  for (const auto& f : report.findings) write_finding(out, f, report, ++n, causes, kinds);
  out << "</section>\n";
  out << "<footer class=\"note\"><p>asyncwatch " ASYNCWATCH_VERSION
         " &middot; docs/findings.md describes the rules, docs/timeline.md this page</p></footer>\n</body>\n</html>\n";
}

}  // namespace asyncwatch
