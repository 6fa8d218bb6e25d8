// Analyzer throughput: generates a synthetic trace (if missing), then times
// `asyncwatch report` (JSON) and `asyncwatch timeline` on it, pinned to one core, and prints
// records/second and the child's peak RSS (getrusage ru_maxrss). Asserts nothing about time.
//   asyncwatch_bench --asyncwatch PATH --generator PATH [--dir DIR] [--records N] [--short]
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace {

struct Result {
  double seconds = 0;
  long max_rss_kib = 0;
  int status = 0;
};

Result run(const std::vector<std::string>& argv, bool quiet) {
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
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string asyncwatch, generator, dir = ".";
  uint64_t records = 20'000'000;
  bool short_run = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--asyncwatch") asyncwatch = next();
    else if (a == "--generator") generator = next();
    else if (a == "--dir") dir = next();
    else if (a == "--records") records = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--short") short_run = true;
  }
  if (short_run) records = 500'000;
  if (asyncwatch.empty() || generator.empty()) {
    std::fprintf(stderr, "usage: %s --asyncwatch PATH --generator PATH [--dir DIR] [--records N] [--short]\n", argv[0]);
    return 2;
  }
  mkdir(dir.c_str(), 0755);
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
  std::printf("trace %s: %llu records, %.1f MiB\n", trace.c_str(), n, static_cast<double>(st.st_size) / (1 << 20));
  int failures = 0;
  for (const char* what : {"report", "timeline"}) {
    std::vector<std::string> cmd = {asyncwatch, what};
    if (std::string(what) == "report") {
      cmd.push_back("--format");
      cmd.push_back("json");
    }
    cmd.push_back(trace);
    for (int rep = 0; rep < 2; ++rep) {  // the first run may read from disk; the second from the page cache
      Result r = run(cmd, true);
      if (r.status != 0) {
        std::printf("%s: exit status %d\n", what, r.status);
        ++failures;
        break;
      }
      std::printf("%-8s run %d: %.2f s, %.1f million records/s, peak RSS %.1f MiB\n", what, rep + 1, r.seconds,
                  static_cast<double>(n) / r.seconds / 1e6, static_cast<double>(r.max_rss_kib) / 1024.0);
    }
  }
  return failures ? 1 : 0;
}
