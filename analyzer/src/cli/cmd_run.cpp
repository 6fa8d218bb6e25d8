// asyncwatch run [--sim] [-o DIR] [report options] -- PROGRAM ARGS...
// Runs the program with libasyncwatch.so preloaded (its children inherit the environment),
// passes on its exit status, then reports every trace it wrote. A program that never touched
// CUDA writes no trace: one line says so, and its exit status passes on unchanged. A program
// whose CUDA runtime is linked into it (nvcc's default) writes none either when that runtime found
// no driver to load, or (with --sim) could not start on the simulator: exit 4, as for a trace in
// which no call succeeded (no_driver_status).
// Without -o, the traces go to a new directory asyncwatch-PROGRAM-TIME-XXXXXX (mkdtemp: an
// unpredictable suffix, mode 0700), never to a path that existed before; the directory must be
// the same one when the program ends (an attacker who swapped it would choose the report).
#include "findings/analysis.h"
#include "cli/commands.h"
#include "diagnostics.h"
#include "report/output_file.h"
#include "read/trace_reader.h"
#include "symbols/cuda_linkage.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <set>

namespace asyncwatch {

namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

// The *.awtrace names in the directory open as `dir_fd`.
std::set<std::string> traces_in(int dir_fd) {
  std::set<std::string> out;
  int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return out;
  if (DIR* d = fdopendir(fd)) {
    rewinddir(d);  // the descriptor shares its offset with dir_fd: start from the beginning
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 8 && n.compare(n.size() - 8, 8, ".awtrace") == 0) out.insert(n);
    }
    closedir(d);
  } else {
    close(fd);
  }
  return out;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// A file-name-safe, bounded form of the program's name for the default directory.
std::string name_for_directory(const std::string& program) {
  std::string base = program.substr(program.rfind('/') + 1), out;
  for (char c : base.substr(0, 64))
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out.empty() || out[0] == '.' ? "program" + out : out;
}

// mkdir -p of the directories above `path` (mode 0755, as the directory itself): `run -o a/b`.
void make_parents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string parent = path.substr(0, slash);
    if (!parent.empty() && parent.back() != '/' && mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return;
  }
}

std::string prepend_path(const std::string& first, const char* existing, char sep) {
  if (!existing || !*existing) return first;
  return first + sep + existing;
}

// Whether this machine's loader finds a CUDA driver, asked in a child (nothing of the driver is
// loaded into asyncwatch): the environment is the program's but for LD_PRELOAD.
bool driver_loadable() {
  std::cout.flush();
  std::cerr.flush();
  pid_t child = fork();
  if (child < 0) return true;  // cannot tell: say nothing
  if (child == 0) _exit(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) ? 0 : 1);
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return true;
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

// No trace was written: kExitNoDevice, said on stderr, when the program loads the CUDA driver
// itself (the static runtime) and could not have reached one; else 0.
int no_driver_status(const RunArgs& args) {
  const std::string& program = args.command.front();
  const CudaLinkage linkage = cuda_linkage(program_path(program));
  if (!linkage.static_runtime()) return 0;
  if (args.sim) {
    print_error(
        fmt::format("{} has NVIDIA's CUDA runtime linked into it (nvcc's default, -cudart static), which does not "
                    "run on the simulator: no CUDA call succeeded. Build it with -cudart shared (CMake: "
                    "CUDA_RUNTIME_LIBRARY Shared) for `run --sim`, which then supplies the runtime",
                    program));
    return kExitNoDevice;
  }
  if (driver_loadable()) return 0;
  print_error(
      fmt::format("{} has the CUDA runtime linked into it (nvcc's default), and no CUDA driver (libcuda.so.1) can be "
                  "loaded here: no CUDA call succeeded; nothing is reported for that reason, not because the program "
                  "is fine. On a machine without a GPU, build it with -cudart shared and use `asyncwatch run --sim`",
                  program));
  return kExitNoDevice;
}

// --capture-range's values: what the library accepts (preload/src/config.cpp reads the variable).
bool valid_capture_range(const std::string& v) {
  return v == "cudaProfilerApi" || (v.rfind("nvtx:", 0) == 0 && v.size() > 5);
}

// --delay / --duration: seconds, a non-negative decimal below 10^7 (as the library reads them).
bool valid_seconds(const std::string& v, bool zero_ok) {
  if (v.empty() || v[0] == '-' || v[0] == '+' || std::isspace(static_cast<unsigned char>(v[0]))) return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);
  return !errno && *end == 0 && d >= 0 && d < 1e7 && (zero_ok || d > 0);
}

// A full trace this large is worth a line saying how to bound it.
constexpr uint64_t kLargeTraceBytes = 1ull << 30;

}  // namespace

int cmd_run(const RunArgs& args) {
  // Everything the report needs is checked before the program runs (a typo in --fail-on must not
  // cost a whole run).
  if (!validate_report_args(args.report)) return kExitInvalid;
  if (!args.capture_range.empty() && !valid_capture_range(args.capture_range)) {
    print_error(
        fmt::format("run: unknown --capture-range '{}' (expected cudaProfilerApi or nvtx:NAME)", args.capture_range));
    return kExitInvalid;
  }
  if (!args.delay.empty() && !valid_seconds(args.delay, true)) {
    print_error(fmt::format("run: invalid --delay '{}' (expected seconds, e.g. 30 or 2.5)", args.delay));
    return kExitInvalid;
  }
  uint64_t trace_limit = 0;
  if (!args.trace_limit.empty() && !trace::parse_trace_limit(args.trace_limit.c_str(), &trace_limit)) {
    print_error(fmt::format("run: invalid --trace-limit '{}' (expected a size from 1M to 16G, e.g. 64M, 256M or 1G)",
                            args.trace_limit));
    return kExitInvalid;
  }
  if (!args.duration.empty() && !valid_seconds(args.duration, false)) {
    print_error(fmt::format("run: invalid --duration '{}' (expected seconds above 0, e.g. 60 or 2.5)", args.duration));
    return kExitInvalid;
  }
  const std::string dir = exe_dir();
  std::string preload =
      std::getenv("ASYNCWATCH_PRELOAD_LIB") ? std::getenv("ASYNCWATCH_PRELOAD_LIB") : dir + "/../lib/libasyncwatch.so";
  if (!exists(preload)) {
    std::cerr << fmt::format(
        "asyncwatch run: the preload library {} does not exist (build libasyncwatch.so, or set "
        "ASYNCWATCH_PRELOAD_LIB)\n",
        preload);
    return kExitInvalid;
  }
  std::string sim_dir;
  if (args.sim) {
    sim_dir = std::getenv("ASYNCWATCH_SIM_DIR") ? std::getenv("ASYNCWATCH_SIM_DIR") : dir + "/../lib/asyncwatch/sim";
    if (!exists(sim_dir + "/libcuda.so.1")) {
      std::cerr << fmt::format(
          "asyncwatch run: the simulated CUDA runtime is not in {} (no libcuda.so.1 there; build "
          "it with -DASYNCWATCH_BUILD_SIM=ON, or set ASYNCWATCH_SIM_DIR)\n",
          sim_dir);
      return kExitInvalid;
    }
  }

  std::string program = args.command.front();
  std::string out_dir = args.output_dir;
  bool created_dir = false;
  int dir_fd = -1;
  if (out_dir.empty()) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    std::string templ = fmt::format("asyncwatch-{}-{}-XXXXXX", name_for_directory(program), stamp);
    if (!mkdtemp(templ.data())) {
      print_error(fmt::format("run: cannot create a trace directory {} here: {}", templ, std::strerror(errno)));
      return kExitInvalid;
    }
    out_dir = templ;
    created_dir = true;
    dir_fd = open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0) {
      print_error(fmt::format("run: {}: cannot open the trace directory: {}", out_dir, std::strerror(errno)));
      return kExitInvalid;
    }
  } else {
    try {
      make_parents(out_dir);
      dir_fd = open_output_directory(out_dir, &created_dir);
    } catch (const OutputError& e) {
      print_error(fmt::format("run: cannot use the trace directory {}", e.what()));
      return kExitInvalid;
    }
  }
  struct stat dir_st {};
  fstat(dir_fd, &dir_st);
  // The program may change directory: it gets an absolute path.
  std::string program_out_dir = out_dir;
  if (out_dir[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) program_out_dir = std::string(cwd) + "/" + out_dir;
  }
  const std::set<std::string> before = traces_in(dir_fd);

  if (args.sim)
    print_error(fmt::format("{} runs on the simulated CUDA driver and runtime ({}), no GPU", program, sim_dir));

  // The parent ignores ^C and ^\ while the program runs (like system()): the program gets them.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);

  std::cout.flush();
  std::cerr.flush();
  // A close-on-exec pipe tells the parent whether exec succeeded (the child writes errno to it
  // only when execvp fails), so a program that could not start is not taken for one that made
  // no CUDA calls.
  int exec_pipe[2] = {-1, -1};
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) exec_pipe[0] = exec_pipe[1] = -1;
  const diagnostics::Timer program_timer;
  pid_t child = fork();
  if (child < 0) {
    std::cerr << fmt::format("asyncwatch run: fork failed: {}\n", std::strerror(errno));
    return kExitInvalid;
  }
  if (child == 0) {
    if (exec_pipe[0] >= 0) close(exec_pipe[0]);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("LD_PRELOAD", prepend_path(preload, std::getenv("LD_PRELOAD"), ':').c_str(), 1);
    setenv("ASYNCWATCH_OUTPUT_DIR", program_out_dir.c_str(), 1);
    if (args.sim) setenv("LD_LIBRARY_PATH", prepend_path(sim_dir, std::getenv("LD_LIBRARY_PATH"), ':').c_str(), 1);
    if (args.gpu_times) setenv("ASYNCWATCH_GPU_TIMES", "1", 1);
    if (args.summary) setenv("ASYNCWATCH_SUMMARY", "1", 1);
    if (!args.trace_limit.empty()) setenv("ASYNCWATCH_TRACE_LIMIT", args.trace_limit.c_str(), 1);
    if (!args.capture_range.empty()) setenv("ASYNCWATCH_CAPTURE_RANGE", args.capture_range.c_str(), 1);
    if (!args.delay.empty()) setenv("ASYNCWATCH_DELAY", args.delay.c_str(), 1);
    if (!args.duration.empty()) setenv("ASYNCWATCH_DURATION", args.duration.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    std::fprintf(stderr, "asyncwatch run: cannot run %s: %s\n", argv[0], std::strerror(err));
    if (exec_pipe[1] >= 0) {
      ssize_t ignored = write(exec_pipe[1], &err, sizeof err);
      (void)ignored;
    }
    _exit(err == ENOENT ? 127 : 126);
  }
  bool exec_failed = false;
  if (exec_pipe[1] >= 0) {
    close(exec_pipe[1]);
    int err = 0;
    ssize_t n;
    while ((n = read(exec_pipe[0], &err, sizeof err)) < 0 && errno == EINTR) {}
    exec_failed = n > 0;
    close(exec_pipe[0]);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << fmt::format("asyncwatch run: waitpid failed: {}\n", std::strerror(errno));
      return kExitInvalid;
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  int program_status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  if (diagnostics::verbose())
    diagnostics::step(fmt::format("{} ended with status {} after {:.0f} ms; traces in {}", program, program_status,
                                  program_timer.ms(), out_dir));
  if (WIFSIGNALED(status))
    print_error(fmt::format("{} was killed by signal {} ({})", program, WTERMSIG(status), strsignal(WTERMSIG(status))));

  // The traces are read through the same directory: one that was replaced meanwhile is refused.
  struct stat now_st {};
  if (stat(out_dir.c_str(), &now_st) != 0 || !same_file(now_st, dir_st)) {
    print_error(
        fmt::format("run: the trace directory {} was replaced while the program ran: its traces are not "
                    "reported",
                    out_dir));
    close(dir_fd);
    return program_status != 0 ? program_status : kExitInvalid;
  }
  std::vector<std::string> paths, foreign;
  for (const auto& name : traces_in(dir_fd)) {
    if (before.count(name)) continue;
    // Another user's trace in a directory others may write to: not the program's to report.
    struct stat st {};
    if (!args.report.allow_foreign_traces && fstatat(dir_fd, name.c_str(), &st, 0) == 0 && foreign_trace(st)) {
      foreign.push_back(fmt::format("{}/{} (uid {})", out_dir, name, st.st_uid));
      continue;
    }
    paths.push_back(out_dir + "/" + name);
  }
  close(dir_fd);
  say_foreign_traces(foreign);
  if (paths.empty() && !foreign.empty()) {
    print_error("run: no trace of yours to report");
    return program_status != 0 ? program_status : kExitInvalid;
  }
  if (paths.empty()) {
    if (created_dir && args.output_dir.empty()) rmdir(out_dir.c_str());  // our default directory, still empty
    if (exec_failed) return program_status;                              // the child said why
    if (int no_driver = no_driver_status(args)) return program_status != 0 ? program_status : no_driver;
    std::cerr << "asyncwatch: the program made no CUDA calls (no trace was written)\n";
    return program_status;
  }
  print_error(fmt::format("{} in {}", paths.size() == 1 ? "1 trace" : fmt::format("{} traces", paths.size()), out_dir));
  uint64_t trace_bytes = 0;
  for (const auto& p : paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0) trace_bytes += static_cast<uint64_t>(st.st_size);
  }
  if (trace_bytes >= kLargeTraceBytes && !args.summary && args.trace_limit.empty() && args.capture_range.empty() &&
      args.delay.empty() && args.duration.empty())
    print_error(fmt::format(
        "{} {:.1f} GiB: for a trace that grows with the call sites, not the run, add --summary; to keep the "
        "last part of the run in full and the whole run's summary, --trace-limit SIZE (e.g. 256M); to record part "
        "of a long run, mark it with cudaProfilerStart/Stop and add --capture-range cudaProfilerApi, or use "
        "--delay/--duration SECONDS",
        paths.size() == 1 ? "the trace is" : "the traces are", static_cast<double>(trace_bytes) / (1ull << 30)));
  ReportArgs report_args = args.report;
  if (report_args.output.empty() && report_args.format != "text") {
    // The program's standard output is its own: a machine-readable report goes to a file.
    report_args.output =
        out_dir + "/report." + (report_args.format == "codequality" ? "codequality.json" : report_args.format);
  }
  ProgramExit program_exit;
  program_exit.pid = static_cast<uint64_t>(child);
  program_exit.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  program_exit.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  int report_status = produce_report(report_args, paths, {}, &program_exit);
  if (report_args.output != args.report.output && report_status != kExitInvalid)
    print_error(fmt::format("report written to {}", report_args.output));
  if (program_status != 0) return program_status;
  return report_status;
}

}  // namespace asyncwatch
