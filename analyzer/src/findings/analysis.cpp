#include "findings/analysis.h"

#include "findings/process_analyzer.h"
#include "report/printable.h"
#include "symbols/names.h"

#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <iterator>
#include <memory>
#include <optional>
#include <unordered_map>

namespace asyncwatch {

using namespace trace;

std::string cuda_env_value(const std::string& env, const std::string& name) {
  size_t pos = 0;
  while (pos < env.size()) {
    size_t end = env.find(';', pos);
    if (end == std::string::npos) end = env.size();
    std::string item = env.substr(pos, end - pos);
    if (item.size() > name.size() && item.compare(0, name.size(), name) == 0 && item[name.size()] == '=')
      return item.substr(name.size() + 1);
    pos = end + 1;
  }
  return {};
}

bool foreign_trace(const struct stat& st) { return st.st_uid != geteuid(); }

void say_foreign_traces(const std::vector<std::string>& foreign) {
  if (foreign.empty()) return;
  std::string list;
  for (const auto& f : foreign) list += (list.empty() ? "" : ", ") + f;
  std::fprintf(stderr, "%s\n",
               printable(fmt::format("asyncwatch: skipped {} owned by another user: {} (--allow-foreign-traces "
                                     "reads them)",
                                     foreign.size() == 1 ? "1 trace" : fmt::format("{} traces", foreign.size()), list))
                   .c_str());
}

TraceInputs expand_trace_inputs(const std::vector<std::string>& inputs, bool allow_foreign) {
  TraceInputs out;
  for (const auto& in : inputs) {
    struct stat st {};
    if (stat(in.c_str(), &st) != 0) {
      out.unreadable.push_back({in, std::strerror(errno)});
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      out.paths.push_back(in);
      continue;
    }
    DIR* d = opendir(in.c_str());
    if (!d) {
      out.unreadable.push_back({in, fmt::format("cannot read the directory: {}", std::strerror(errno))});
      continue;
    }
    std::vector<std::string> found;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 8 && name.compare(name.size() - 8, 8, ".awtrace") == 0) {
        std::string path = in + (in.back() == '/' ? "" : "/") + name;
        struct stat fst {};
        if (!allow_foreign && stat(path.c_str(), &fst) == 0 && foreign_trace(fst)) {
          out.foreign.push_back(fmt::format("{} (uid {})", path, fst.st_uid));
          continue;
        }
        found.push_back(std::move(path));
      }
    }
    closedir(d);
    if (found.empty()) {
      bool skipped = !out.foreign.empty();
      out.unreadable.push_back(
          {in, skipped ? "the directory holds no .awtrace files of yours" : "the directory holds no .awtrace files"});
      continue;
    }
    std::sort(found.begin(), found.end());
    out.paths.insert(out.paths.end(), found.begin(), found.end());
  }
  return out;
}

bool no_usable_device_error(int32_t result) {
  switch (result) {
    case 3:
    case 34:
    case 35:
    case 46:
    case 100:
    case 802:
    case 803:
    case 804: return true;
    default: return false;
  }
}

UnreadableTrace unreadable_trace(const std::string& path, const std::exception& e) {
  std::string what = e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e)) what = "not enough memory to analyze it";
  const std::string prefix = path + ": ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  return {path, what};
}

std::string kernel_display_name(const std::string& mangled) {
  // "void (anonymous namespace)::reduce<float>(float*, int)" -> "(anonymous namespace)::reduce<float>":
  // the return type and the argument list go, namespaces, classes and template arguments stay.
  return name_without_signature(demangle(mangled.c_str()));
}

using analysis::ProcessAnalyzer;

ProcessResult analyze_trace(const std::string& path, const Options& options, std::vector<CallMark>* marks) {
  auto trace = TraceFile::open(path, options.limits);
  return analyze_trace(*trace, options, marks);
}

ProcessResult analyze_trace(TraceFile& trace, const Options& options, std::vector<CallMark>* marks) {
  trace.index_blocks();
  ProcessAnalyzer analyzer(trace, options, marks);
  analyzer.run();
  return analyzer.finish();
}

Report build_report(std::vector<ProcessResult> results, const Options& options) {
  Report report;
  report.options = options;
  // One process: its findings are merged already; several: merged by key, in process order.
  FindingSet set;
  std::vector<Finding> merged;
  if (results.size() == 1) merged = std::move(results[0].findings);
  std::unordered_map<uint64_t, uint64_t> recorded_wall;  // pid -> wall time less paused time
  for (auto& r : results) {
    recorded_wall[r.process.pid] = r.process.wall_ns - r.process.paused_ns;
    if (results.size() > 1) {
      for (auto& f : r.findings) set.add(std::move(f));
      std::vector<Finding>().swap(r.findings);
    }
    Summary& s = report.summary;
    s.async_calls += r.process.async_calls;
    s.async_calls_async += r.process.async_calls_async;
    s.async_calls_blocking += r.process.async_calls_blocking;
    s.blocked_ns_total = saturating_add(s.blocked_ns_total, r.process.blocked_ns_total);
    report.processes.push_back(std::move(r.process));
  }
  if (results.size() > 1) merged = set.take();
  // Group-level thresholds; kept in place (moved within the vector).
  size_t kept = 0;
  for (auto& f : merged) {
    if (auto reported = rule_info(f.id).hooks.reported; reported && !reported(f, options)) continue;
    // Shares of wall time per thread: a thread's calls never overlap, so each is at most 1.
    f.threads = f.thread_blocked.size();
    f.share_of_wall = 0;
    for (const auto& [thread, ns] : f.thread_blocked) {
      auto w = recorded_wall.find(thread >> 32);
      if (w != recorded_wall.end() && w->second)
        f.share_of_wall = std::max(f.share_of_wall, static_cast<double>(ns) / static_cast<double>(w->second));
    }
    f.share_of_wall = std::min(f.share_of_wall, 1.0);
    // The impact's share of the run: of the recorded wall time of the processes that made the calls.
    uint64_t wall = 0;
    for (const auto& p : f.processes)
      if (auto w = recorded_wall.find(p.pid); w != recorded_wall.end()) wall += w->second;
    f.impact_share = wall ? std::min(1.0, static_cast<double>(f.impact_ns) / static_cast<double>(wall)) : 0;
    std::sort(f.processes.begin(), f.processes.end(),
              [](const PerProcess& a, const PerProcess& b) { return a.pid < b.pid; });
    if (&merged[kept] != &f) merged[kept] = std::move(f);
    ++kept;
  }
  merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(kept), merged.end());
  report.findings = std::move(merged);
  rank_findings(report.findings);
  report.summary.findings = report.findings.size();
  return report;
}

Report analyze_traces(const std::vector<std::string>& paths, const Options& options,
                      std::vector<UnreadableTrace> unreadable) {
  std::vector<ProcessResult> results;
  for (const auto& p : paths) {
    try {
      results.push_back(analyze_trace(p, options));
    } catch (const TraceError& e) {
      unreadable.push_back(unreadable_trace(p, e));
    } catch (const std::bad_alloc& e) {
      unreadable.push_back(unreadable_trace(p, e));
    }
  }
  std::stable_sort(results.begin(), results.end(), [](const ProcessResult& a, const ProcessResult& b) {
    return a.process.start_realtime_ns < b.process.start_realtime_ns;
  });
  Report report = build_report(std::move(results), options);
  report.unreadable = std::move(unreadable);
  return report;
}

}  // namespace asyncwatch
