// Test-only: runs the asyncwatch command (or any program) as a child, with its output captured,
// and runs code as an unprivileged user (the attacker of the reliability tests).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace asyncwatch::testing {

struct CommandResult {
  int status = -1;  // exit status; 128 + signal when killed; -1 when it could not run
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct CommandOptions {
  std::string cwd;               // "" = this process's
  std::vector<std::string> env;  // NAME=VALUE added to (or replacing in) the environment
  int stdout_fd = -1;            // >= 0: the child's stdout (not captured)
  int timeout_s = 60;            // then SIGKILL
};

inline std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

inline CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& o = {}) {
  CommandResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  if (pipe2(err, O_CLOEXEC) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(o.stdout_fd >= 0 ? o.stdout_fd : out[1], 1);
    dup2(err[1], 2);
    if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(126);
    for (const auto& e : o.env) {
      auto eq = e.find('=');
      setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  // Read both pipes while the child runs (a full pipe would block it); a watchdog kills it late.
  std::thread watchdog([&] {
    for (int i = 0; i < o.timeout_s * 10; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      siginfo_t si{};
      if (waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid) return;
    }
    r.timed_out = true;
    kill(pid, SIGKILL);
  });
  std::thread err_reader([&] { r.err = read_all(err[0]); });
  r.out = read_all(out[0]);
  err_reader.join();
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  watchdog.join();
  close(out[0]);
  close(err[0]);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  return r;
}

inline CommandResult asyncwatch_command(const std::vector<std::string>& args, const CommandOptions& o = {}) {
  std::vector<std::string> argv{ASYNCWATCH_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, o);
}

constexpr uid_t kNobody = 65534;

// Runs `fn` in a child process as uid/gid 65534 (nobody); its return value is the child's
// success. Needs root: "" when it ran, else why it could not (for GTEST_SKIP).
inline std::string as_unprivileged_user(const std::function<bool()>& fn, bool* ok) {
  *ok = false;
  if (geteuid() != 0) return "needs root to run the attacker as another user (uid 65534)";
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(77);
    _exit(fn() ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) return "cannot switch to uid 65534 here (setuid failed)";
  *ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return "";
}

inline std::string read_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<cannot open " + path + ": " + std::strerror(errno) + ">";
  std::string s = read_all(fd);
  close(fd);
  return s;
}

inline void write_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return;
  if (write(fd, text.data(), text.size()) < 0) {}
  fchmod(fd, mode);
  close(fd);
}

}  // namespace asyncwatch::testing
