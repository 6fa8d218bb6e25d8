// asyncwatch run [--sim] [-o DIR] [report options] -- PROGRAM ARGS...
// Runs the program with libasyncwatch.so preloaded (its children inherit the environment),
// passes on its exit status, then reports every trace it wrote. A program that never touched
// CUDA writes no trace: one line says so, and its exit status passes on unchanged.
#include "analysis.h"
#include "commands.h"
#include "trace_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

std::set<std::string> traces_in(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 8 && n.compare(n.size() - 8, 8, ".awtrace") == 0) out.insert(n);
    }
    closedir(d);
  }
  return out;
}

std::string prepend_path(const std::string& first, const char* existing, char sep) {
  if (!existing || !*existing) return first;
  return first + sep + existing;
}

}  // namespace

int cmd_run(const RunArgs& args) {
  const std::string dir = exe_dir();
  std::string preload = std::getenv("ASYNCWATCH_PRELOAD_LIB") ? std::getenv("ASYNCWATCH_PRELOAD_LIB")
                                                              : dir + "/../lib/libasyncwatch.so";
  if (!exists(preload)) {
    std::cerr << fmt::format("asyncwatch run: the preload library {} does not exist (build libasyncwatch.so, or set "
                             "ASYNCWATCH_PRELOAD_LIB)\n",
                             preload);
    return kExitInvalid;
  }
  std::string sim_dir;
  if (args.sim) {
    sim_dir = std::getenv("ASYNCWATCH_SIM_DIR") ? std::getenv("ASYNCWATCH_SIM_DIR") : dir + "/../lib/asyncwatch/sim";
    if (!exists(sim_dir + "/libcuda.so.1")) {
      std::cerr << fmt::format("asyncwatch run: the simulated CUDA runtime is not in {} (no libcuda.so.1 there; build "
                               "it with -DASYNCWATCH_BUILD_SIM=ON, or set ASYNCWATCH_SIM_DIR)\n",
                               sim_dir);
      return kExitInvalid;
    }
  }

  std::string program = args.command.front();
  std::string out_dir = args.output_dir;
  if (out_dir.empty()) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    std::string base = fmt::format("asyncwatch-{}-{}", program.substr(program.rfind('/') + 1), stamp);
    out_dir = base;
    for (int i = 2; exists(out_dir); ++i) out_dir = fmt::format("{}-{}", base, i);
  }
  bool created_dir = mkdir(out_dir.c_str(), 0755) == 0;
  if (!created_dir && errno != EEXIST) {
    std::cerr << fmt::format("asyncwatch run: {}: cannot create the trace directory: {}\n", out_dir, std::strerror(errno));
    return kExitInvalid;
  }
  const std::set<std::string> before = traces_in(out_dir);

  if (args.sim)
    std::cerr << fmt::format("asyncwatch: {} runs on the simulated CUDA driver and runtime ({}), no GPU\n", program,
                             sim_dir);

  // The parent ignores ^C and ^\ while the program runs (like system()): the program gets them.
  struct sigaction ignore {}, old_int{}, old_quit{};
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
    setenv("ASYNCWATCH_OUTPUT_DIR", out_dir.c_str(), 1);
    if (args.sim) setenv("LD_LIBRARY_PATH", prepend_path(sim_dir, std::getenv("LD_LIBRARY_PATH"), ':').c_str(), 1);
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
    while ((n = read(exec_pipe[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
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
  if (WIFSIGNALED(status))
    std::cerr << fmt::format("asyncwatch: {} was killed by signal {} ({})\n", program, WTERMSIG(status),
                             strsignal(WTERMSIG(status)));

  std::vector<std::string> paths;
  for (const auto& name : traces_in(out_dir))
    if (!before.count(name)) paths.push_back(out_dir + "/" + name);
  if (paths.empty()) {
    if (created_dir && args.output_dir.empty()) rmdir(out_dir.c_str());  // our default directory, still empty
    if (exec_failed) return program_status;   // the child said why
    std::cerr << "asyncwatch: the program made no CUDA calls (no trace was written)\n";
    return program_status;
  }
  std::cerr << fmt::format("asyncwatch: {} in {}\n", paths.size() == 1 ? "1 trace" : fmt::format("{} traces", paths.size()),
                           out_dir);
  int report_status = produce_report(args.report, paths);
  if (program_status != 0) return program_status;
  return report_status;
}

}  // namespace asyncwatch
