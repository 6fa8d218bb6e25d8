// Analyzer throughput: generates a synthetic trace (if missing, 20 M records), then times
// `asyncwatch report` (JSON, text and HTML: HTML's CPU time is printed as a multiple of JSON's)
// and `asyncwatch timeline` on it, pinned to one core, and
// prints records per second of CPU time (user + sys of the child, the honest figure on a shared
// machine) and of wall time, and the child's peak RSS (getrusage). Each report runs twice: the
// first may read the trace from disk, the second from the page cache. Then, unless
// --no-instructions, instructions per record of each report format under callgrind (valgrind;
// deterministic, unlike times on a shared machine). Asserts nothing about time.
//   asyncwatch_bench --asyncwatch PATH --generator PATH [--dir DIR] [--records N] [--short]
//                    [--no-timeline] [--no-instructions]
// --short: 500 k records, no timeline, no callgrind (the ctest bench.analyzer-short).
// --report-memory: instead, the report's peak RSS on a trace with many call sites (10 M records,
// 100 k call sites; --short: 500 k and 10 k), in each format; prints it against the 600 MiB target.
// --hostile: instead, the analyzer's memory on hostile traces (gen_trace --shape), each just under
// and just over its limit (options.h, Limits): prints peak RSS and checks the exit statuses (0
// under, 2 over: the trace is refused with its error). With --short, small limits given on the
// command line (--max-stacks, --max-call-sites) and small traces. docs/reliability.md has the
// figures of a full run.
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace {

struct Result {
  double seconds = 0;
  double cpu_seconds = 0;  // user + sys of the child
  long max_rss_kib = 0;
  int status = 0;
};

// `quiet`: stdout to /dev/null; `errors_to`: stderr to that file when not empty.
Result run(const std::vector<std::string>& argv, bool quiet, const std::string& errors_to = {}) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);  // one core
    if (quiet) {
      int fd = open("/dev/null", O_WRONLY);
      dup2(fd, 1);
    }
    if (!errors_to.empty()) {
      int fd = open(errors_to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  Result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.max_rss_kib = ru.ru_maxrss;
  r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

struct HostileCase {
  const char* shape;
  uint64_t count;   // items of the hostile part
  uint64_t normal;  // records of the normal mix after it
  std::vector<std::string> gen_args;
  std::vector<std::string> report_args;
  int expect;  // exit status of `report`
};

int run_hostile(const std::string& asyncwatch, const std::string& generator, const std::string& dir, bool short_run) {
  // Defaults of Limits: stacks 1,000,000, call sites 20,000, strings 1,000,000, modules 16,384,
  // streams 100,000, pending host functions 100,000.
  const uint64_t stacks = short_run ? 50'000 : 1'000'000, sites = short_run ? 2'000 : 20'000;
  std::vector<std::string> limits;
  if (short_run) limits = {"--max-stacks", std::to_string(stacks), "--max-call-sites", std::to_string(sites)};
  auto under = [](uint64_t limit, uint64_t slack) { return limit - slack; };
  std::vector<HostileCase> cases = {
      {"unused-stacks", under(stacks, 1000), 0, {"--stack-depth", "1"}, {}, 0},
      {"unused-stacks", stacks + 1000, 0, {"--stack-depth", "1"}, {}, 2},
      {"sparse-stacks", under(stacks, 1000), 0, {"--stack-depth", "1"}, {}, 0},
      {"call-sites", under(sites, 100), 0, {"--stack-depth", "8"}, {}, 0},
      {"call-sites", under(sites, 100), 0, {"--stack-depth", "64"}, {}, 0},
      {"call-sites", sites + 100, 0, {"--stack-depth", "8"}, {}, 2},
      {"streams", 99'000, 0, {}, {}, 0},
      {"streams", 101'000, 0, {}, {}, 2},
      {"callbacks", 99'000, 0, {}, {}, 0},
      {"callbacks", 101'000, 0, {}, {}, 2},
      {"strings", 999'000, 0, {"--string-bytes", short_run ? "8" : "200"}, {}, 0},
      {"strings", 1'001'000, 0, {"--string-bytes", "8"}, {}, 2},
      {"modules", 16'000, 0, {}, {}, 0},
      {"modules", 16'500, 0, {}, {}, 2},
  };
  if (!short_run) {
    // The shapes once found in the field: 240 MB of unused one-frame stacks (10 M), 1 M call sites.
    cases.push_back({"unused-stacks", 455'000, 0, {"--stack-depth", "64"}, {}, 0});
    cases.push_back({"unused-stacks", 10'000'000, 0, {"--stack-depth", "1"}, {}, 2});
    cases.push_back({"unused-stacks", 10'000'000, 0, {"--stack-depth", "1"}, {"--max-stacks", "11000000"}, 0});
    cases.push_back({"call-sites", 1'000'000, 0, {"--stack-depth", "8"}, {}, 2});
  }
  int failures = 0;
  for (const auto& c : cases) {
    std::string trace =
        fmt::format("{}/hostile-{}-{}-{}.awtrace", dir, c.shape, c.count, c.gen_args.empty() ? "" : c.gen_args.back());
    std::vector<std::string> gen = {generator, trace,   "--records", std::to_string(c.count + c.normal),
                                    "--shape", c.shape, "--count",   std::to_string(c.count)};
    gen.insert(gen.end(), c.gen_args.begin(), c.gen_args.end());
    if (run(gen, true).status != 0) {
      std::printf("%s: the generator failed\n", trace.c_str());
      return 1;
    }
    struct stat st {};
    stat(trace.c_str(), &st);
    std::string what =
        fmt::format("{} x {}{}", c.shape, c.count,
                    c.gen_args.empty() ? "" : " (" + c.gen_args[0].substr(2) + " " + c.gen_args[1] + ")");
    if (!c.report_args.empty()) what += " " + c.report_args[0] + " " + c.report_args[1];
    std::printf("%-58s %7.1f MiB trace:", what.c_str(), static_cast<double>(st.st_size) / (1 << 20));
    for (const char* format : {"json", "text"}) {
      std::vector<std::string> cmd = {asyncwatch, "report", "--format", format};
      cmd.insert(cmd.end(), limits.begin(), limits.end());
      cmd.insert(cmd.end(), c.report_args.begin(), c.report_args.end());
      cmd.push_back(trace);
      Result r = run(cmd, true);
      std::printf("  %s %6.2f s %7.1f MiB exit %d", format, r.seconds, static_cast<double>(r.max_rss_kib) / 1024.0,
                  r.status);
      if (r.status != c.expect) {
        std::printf(" (expected %d)", c.expect);
        ++failures;
      }
    }
    std::printf("\n");
    std::fflush(stdout);
    unlink(trace.c_str());
    unlink((trace + ".records").c_str());
  }
  return failures ? 1 : 0;
}

// The report's memory with many call sites (JSON at 10 M records with 100 k call sites
// <= 600 MiB peak RSS): a normal-mix trace whose stacks are spread over `sites` call sites, so
// that most of them have findings; `report` in each format to /dev/null, peak RSS printed.
int run_report_memory(const std::string& asyncwatch, const std::string& generator, const std::string& dir,
                      bool short_run) {
  const uint64_t records = short_run ? 500'000 : 10'000'000, sites = short_run ? 10'000 : 100'000;
  const double target_mib = 600;
  std::string trace = fmt::format("{}/sites-{}-{}.awtrace", dir, records, sites);
  if (run({generator, trace, "--records", std::to_string(records), "--call-sites", std::to_string(sites)}, true)
          .status != 0) {
    std::printf("%s: the generator failed\n", trace.c_str());
    return 1;
  }
  struct stat st {};
  stat(trace.c_str(), &st);
  std::printf("trace %s: %llu records, %llu call sites, %.1f MiB\n", trace.c_str(),
              static_cast<unsigned long long>(records), static_cast<unsigned long long>(sites),
              static_cast<double>(st.st_size) / (1 << 20));
  int failures = 0;
  for (const char* format : {"json", "sarif", "text"}) {
    Result r = run(
        {asyncwatch, "report", "--format", format, "--max-call-sites", "100000000", "--max-stacks", "100000000", trace},
        true);
    double mib = static_cast<double>(r.max_rss_kib) / 1024.0;
    std::printf("report --format %-5s %6.2f s, peak RSS %7.1f MiB (%.2f of the %.0f MiB target), exit %d\n", format,
                r.seconds, mib, mib / target_mib, target_mib, r.status);
    if (r.status != 0) ++failures;
  }
  unlink(trace.c_str());
  unlink((trace + ".records").c_str());
  return failures ? 1 : 0;
}

// Instructions of `cmd` under callgrind ("Collected : N" on its stderr), 0 when valgrind is missing
// or failed.
uint64_t instructions_of(const std::vector<std::string>& cmd, const std::string& dir) {
  const std::string log = dir + "/callgrind.log";
  std::vector<std::string> argv = {"/usr/bin/valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  Result r = run(argv, true, log);
  uint64_t n = 0;
  if (std::FILE* f = std::fopen(log.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f))
      if (const char* p = std::strstr(line, "Collected : ")) n = std::strtoull(p + 12, nullptr, 10);
    std::fclose(f);
  }
  unlink(log.c_str());
  return r.status == 0 ? n : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string asyncwatch, generator, dir = ".";
  uint64_t records = 20'000'000;
  bool short_run = false, hostile = false, report_memory = false, timeline = true, instructions = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--asyncwatch")
      asyncwatch = next();
    else if (a == "--generator")
      generator = next();
    else if (a == "--dir")
      dir = next();
    else if (a == "--records")
      records = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--short")
      short_run = true;
    else if (a == "--hostile")
      hostile = true;
    else if (a == "--report-memory")
      report_memory = true;
    else if (a == "--no-timeline")
      timeline = false;
    else if (a == "--no-instructions")
      instructions = false;
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], a.c_str());
      return 2;
    }
  }
  if (short_run) records = 500'000, timeline = false, instructions = false;
  if (asyncwatch.empty() || generator.empty()) {
    std::fprintf(stderr,
                 "usage: %s --asyncwatch PATH --generator PATH [--dir DIR] [--records N] [--short] [--no-timeline] "
                 "[--no-instructions] [--hostile | --report-memory]\n",
                 argv[0]);
    return 2;
  }
  mkdir(dir.c_str(), 0755);
  if (hostile) return run_hostile(asyncwatch, generator, dir, short_run);
  if (report_memory) return run_report_memory(asyncwatch, generator, dir, short_run);
  std::string trace = fmt::format("{}/bench-{}.awtrace", dir, records);
  struct stat st {};
  if (stat(trace.c_str(), &st) != 0 || stat((trace + ".records").c_str(), &st) != 0) {
    Result g = run({generator, trace, "--records", std::to_string(records)}, false);
    if (g.status != 0) return 1;
    std::printf("generated in %.2f s\n", g.seconds);
  }
  stat(trace.c_str(), &st);
  unsigned long long n = 0;
  if (std::FILE* f = std::fopen((trace + ".records").c_str(), "r")) {
    if (std::fscanf(f, "%llu", &n) != 1) n = 0;
    std::fclose(f);
  }
  double load[3] = {0, 0, 0};
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = 0;
    std::fclose(f);
  }
  std::printf("trace %s: %llu records, %.1f MiB; load average %.2f %.2f %.2f\n", trace.c_str(), n,
              static_cast<double>(st.st_size) / (1 << 20), load[0], load[1], load[2]);
  const double target = 20e6;  // records per second of one core (docs/performance.md)
  int failures = 0;
  struct Job {
    const char* name;
    std::vector<std::string> cmd;
  };
  std::vector<Job> jobs = {{"report --format json", {asyncwatch, "report", "--format", "json", trace}},
                           {"report --format text", {asyncwatch, "report", "--format", "text", trace}},
                           {"report --format html", {asyncwatch, "report", "--format", "html", trace}}};
  // The timelines are written to files (their sizes are printed, then they are removed).
  const std::string timeline_json = dir + "/bench-timeline.json", timeline_perfetto = dir + "/bench-timeline.pftrace";
  if (timeline) {
    // (--max-size-mib 0: no limit; the default refuses a timeline of this size)
    jobs.push_back({"timeline (JSON)",
                    {asyncwatch, "timeline", "--format", "json", "--max-size-mib", "0", "-o", timeline_json, trace}});
    jobs.push_back(
        {"timeline (Perfetto)",
         {asyncwatch, "timeline", "--format", "perfetto", "--max-size-mib", "0", "-o", timeline_perfetto, trace}});
  }
  double json_cpu = 0, html_cpu = 0;  // the last run's (page cache): HTML's target is 1.5x JSON's
  for (const auto& job : jobs) {
    const bool report = std::strncmp(job.name, "report", 6) == 0;
    for (int rep = 0; rep < (report ? 2 : 1);
         ++rep) {  // the first run may read from disk; the second from the page cache
      Result r = run(job.cmd, true);
      if (r.status != 0) {
        std::printf("%s: exit status %d\n", job.name, r.status);
        ++failures;
        break;
      }
      const double per_cpu = static_cast<double>(n) / r.cpu_seconds;
      if (std::strcmp(job.name, "report --format json") == 0) json_cpu = r.cpu_seconds;
      if (std::strcmp(job.name, "report --format html") == 0) html_cpu = r.cpu_seconds;
      std::printf("%-20s run %d: CPU %.2f s (%.1f M records/s%s), wall %.2f s (%.1f M records/s), peak RSS %.1f MiB\n",
                  job.name, rep + 1, r.cpu_seconds, per_cpu / 1e6,
                  report ? (per_cpu >= target ? ", target 20: met" : ", target 20: not met") : "", r.seconds,
                  static_cast<double>(n) / r.seconds / 1e6, static_cast<double>(r.max_rss_kib) / 1024.0);
      if (!report) {
        const std::string& out = job.cmd[job.cmd.size() - 2];  // -o FILE
        struct stat ost {};
        if (stat(out.c_str(), &ost) == 0)
          std::printf("%-20s file: %.1f MiB (%.1f bytes per record)\n", job.name,
                      static_cast<double>(ost.st_size) / (1 << 20),
                      n ? static_cast<double>(ost.st_size) / static_cast<double>(n) : 0.0);
        std::remove(out.c_str());
      }
      std::fflush(stdout);
    }
  }
  if (json_cpu > 0 && html_cpu > 0)
    std::printf("report --format html: %.2fx the JSON report's CPU time (target 1.5x: %s)\n", html_cpu / json_cpu,
                html_cpu <= 1.5 * json_cpu ? "met" : "not met");
  if (instructions) {
    for (const auto& job : jobs) {
      if (std::strncmp(job.name, "report", 6) != 0 || std::strcmp(job.name, "report --format html") == 0) continue;
      uint64_t ir = instructions_of(job.cmd, dir);
      if (ir == 0)
        std::printf("%-20s instructions: not measured (valgrind missing or failed)\n", job.name);
      else
        std::printf("%-20s callgrind: %.0f instructions per record (%.3f G in all)\n", job.name,
                    static_cast<double>(ir) / static_cast<double>(n), static_cast<double>(ir) / 1e9);
      std::fflush(stdout);
    }
  }
  return failures ? 1 : 0;
}
