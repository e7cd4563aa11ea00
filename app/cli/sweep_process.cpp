#include "cli/sweep_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

namespace kiln::cli::sweep {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void onInterrupt(int) {
  g_interrupted = 1;
}

// Only async-signal-safe calls between fork and exec.
[[noreturn]] void execChild(const std::vector<std::string>& argv, int out, int err, bool newGroup,
                            pid_t parent) {
  if (newGroup) setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (out >= 0) dup2(out, 1);
  if (err >= 0) dup2(err, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const char message[] = "kiln sweep: cannot start a child process\n";
  (void)!write(2, message, sizeof message - 1);
  _exit(127);
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

void installInterruptHandlers() {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and sees the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() {
  return g_interrupted != 0;
}

bool sleepUnlessInterrupted(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (interrupted()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !interrupted();
}

Result<pid_t> spawn(const std::vector<std::string>& argv, const std::string& stdoutPath,
                    const std::string& stderrPath, bool newGroup) {
  if (argv.empty()) return invalidArgument("nothing to run");
  int out = -1, err = -1;
  if (!stdoutPath.empty())
    out = ::open(stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (!stderrPath.empty())
    err = ::open(stderrPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if ((!stdoutPath.empty() && out < 0) || (!stderrPath.empty() && err < 0)) {
    const std::string path = out < 0 && !stdoutPath.empty() ? stdoutPath : stderrPath;
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
    return Status(StatusCode::kIoError, path + ": cannot open (" + strerror(errno) + ")");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) execChild(argv, out, err, newGroup, parent);
  if (out >= 0) ::close(out);
  if (err >= 0) ::close(err);
  if (pid < 0) return Status(StatusCode::kIoError, std::string("fork: ") + strerror(errno));
  if (newGroup) setpgid(pid, pid);  // also here, so killGroup works before the child runs
  return pid;
}

void killGroup(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 40; ++i) {  // two seconds to finish writing, then SIGKILL
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // anything it started and left behind
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

int waitFor(pid_t pid, bool stopWhenInterrupted) {
  for (;;) {
    int status;
    const pid_t r = waitpid(pid, &status, 0);
    if (r == pid) return exitCodeOf(status);
    if (r < 0 && errno != EINTR) return -1;
    if (stopWhenInterrupted && interrupted()) return -1;
  }
}

Result<Captured> capture(const std::vector<std::string>& argv, double timeoutSeconds) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) return Status(StatusCode::kIoError, "pipe failed");
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    ::close(outPipe[0]);
    ::close(outPipe[1]);
    return Status(StatusCode::kIoError, "pipe failed");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) execChild(argv, outPipe[1], errPipe[1], true, parent);
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  if (pid < 0) {
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    return Status(StatusCode::kIoError, std::string("fork: ") + strerror(errno));
  }
  Captured result;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open = 2;
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timedOut = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 200))) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (result.timedOut) {
    killGroup(pid);
    result.exitCode = -1;
    return result;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exitCode = exitCodeOf(status);
  return result;
}

std::string findProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

std::string lastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

std::string selfExecutable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "kiln" : self.string();
}

}  // namespace kiln::cli::sweep
