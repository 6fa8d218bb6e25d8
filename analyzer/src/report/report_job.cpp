#include "report/report_job.h"

#include "report/report_html_timeline.h"

#include "read/trace_reader.h"
#include "diagnostics.h"
#include "symbols/debuginfo.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <set>
#include <thread>
#include <utility>

namespace asyncwatch {

std::vector<std::string> unique_traces(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const auto& p : paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) continue;
    out.push_back(p);
  }
  return out;
}

bool ReportSelection::keeps(const ProcessSummary& p) const {
  if (!pids.empty() && std::find(pids.begin(), pids.end(), p.pid) == pids.end()) return false;
  if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), p.rank) == ranks.end()) return false;
  return true;
}

namespace {
// One trace's outcome, in its slot: written by one worker, read after every worker joined.
struct Slot {
  std::optional<ProcessResult> result;
  std::optional<UnreadableTrace> error;
  std::optional<TraceMarks> marks;  // when asked for
};

void analyze_into(Slot& slot, const std::string& path, const Options& options, bool with_marks, bool keep) noexcept {
  const diagnostics::Timer timer;
  try {
    if (with_marks) {
      TraceMarks m;
      m.trace = path;
      std::shared_ptr<TraceFile> file = TraceFile::open(path, options.limits);
      // A kept trace's picture is drawn from this walk (the picture's groups); else it is walked again.
      if (keep) m.picture = PictureWalk::make(*file, m.marks, options.limits.pending_callbacks);
      slot.result = m.picture ? m.picture->analyze(*file, options, &m.marks) : analyze_trace(*file, options, &m.marks);
      if (keep) m.file = std::move(file);
      for (const auto& f : slot.result->findings) m.keys.push_back(f.key);
      slot.marks = std::move(m);
    } else {
      slot.result = analyze_trace(path, options);
    }
    if (diagnostics::verbose())
      diagnostics::step(fmt::format("{}: pid {}, {} records, {} findings, analysed in {:.0f} ms", path,
                                    slot.result->process.pid, slot.result->process.records,
                                    slot.result->findings.size(), timer.ms()));
  } catch (const TraceError& e) {
    slot.error = unreadable_trace(path, e);
  } catch (const std::bad_alloc& e) {
    slot.error = unreadable_trace(path, e);
  } catch (const std::exception& e) {  // a worker must not take the process down with it
    slot.error = unreadable_trace(path, e);
  }
}
}  // namespace

Report analyze_job(const std::vector<std::string>& paths, const Options& given, std::vector<UnreadableTrace> unreadable,
                   const ReportSelection& selection, unsigned jobs, std::vector<TraceMarks>* marks) {
  // One debug information budget for the whole report, whatever the number of traces.
  Options options = given;
  if (!options.debug_budget)
    options.debug_budget =
        make_debug_info_budget(options.limits.debug_info_module_bytes, options.limits.debug_info_total_bytes);
  std::vector<Slot> slots(paths.size());
  unsigned n = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  n = static_cast<unsigned>(std::min<size_t>(n, paths.size()));
  const bool keep = paths.size() <= kKeptTraces;
  const diagnostics::Timer timer;
  if (diagnostics::verbose())
    diagnostics::step(
        fmt::format("{} trace{} on {} thread{}", paths.size(), paths.size() == 1 ? "" : "s", n, n == 1 ? "" : "s"));
  if (n <= 1) {
    for (size_t i = 0; i < paths.size(); ++i) analyze_into(slots[i], paths[i], options, marks != nullptr, keep);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < n; ++t)
      workers.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < paths.size();)
          analyze_into(slots[i], paths[i], options, marks != nullptr, keep);
      });
    for (auto& w : workers) w.join();
  }
  // Merged in the order of the paths, whatever order they finished in.
  std::vector<ProcessResult> results;
  for (auto& s : slots) {
    if (marks && s.marks) marks->push_back(std::move(*s.marks));
    if (s.error)
      unreadable.push_back(std::move(*s.error));
    else if (s.result && selection.keeps(s.result->process))
      results.push_back(std::move(*s.result));
  }
  if (!selection.rules.empty())
    for (auto& r : results)
      r.findings.erase(std::remove_if(r.findings.begin(), r.findings.end(),
                                      [&](const Finding& f) {
                                        return std::find(selection.rules.begin(), selection.rules.end(), f.id) ==
                                               selection.rules.end();
                                      }),
                       r.findings.end());
  if (!selection.ranges.empty())
    for (auto& r : results)
      r.findings.erase(std::remove_if(r.findings.begin(), r.findings.end(),
                                      [&](const Finding& f) {
                                        for (const auto& name : selection.ranges)
                                          if (f.ranges.count(name)) return false;
                                        return true;
                                      }),
                       r.findings.end());
  std::stable_sort(results.begin(), results.end(), [](const ProcessResult& a, const ProcessResult& b) {
    return a.process.start_realtime_ns < b.process.start_realtime_ns;
  });
  Report report = build_report(std::move(results), options);
  report.unreadable = std::move(unreadable);
  if (diagnostics::verbose())
    diagnostics::step(fmt::format("{} process{} reported, {} unreadable, {:.0f} ms in all", report.processes.size(),
                                  report.processes.size() == 1 ? "" : "es", report.unreadable.size(), timer.ms()));
  return report;
}

}  // namespace asyncwatch
