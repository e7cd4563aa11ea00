#include "cli/ssh_master.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cli/sweep_process.h"
#include "kiln/file_io.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// A Unix socket path holds at most 107 bytes; ssh adds ".XXXXXXXXXXXXXXXX" to it while
// the master binds, so the folder's path must leave room.
constexpr size_t kMaxFolderPath = 80;

// The private folder's parent: $XDG_RUNTIME_DIR (per user, 0700, cleared at logout) when
// usable, else $TMPDIR, else /tmp.
std::string runtimeParent() {
  for (const char* name : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value && *value && std::string(value).size() < kMaxFolderPath - 20 &&
        access(value, W_OK | X_OK) == 0)
      return value;
  }
  return "/tmp";
}

bool isSocket(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

}  // namespace

bool sshReuseEnabled() {
  const char* value = std::getenv("KILN_REMOTE_REUSE");
  return !value || std::string(value) != "0";
}

bool SshMaster::start(std::vector<std::string> sshArgv, double timeoutSeconds, std::string* error) {
  stop();
  std::string pattern = runtimeParent() + "/kiln-ssh-XXXXXX";
  if (!::mkdtemp(pattern.data())) {  // mode 0700
    *error = "cannot create a private folder for the ssh control socket in " + runtimeParent();
    return false;
  }
  m_dir = pattern;
  m_socket = m_dir + "/master";
  const std::string log = m_dir + "/master.log";
  const std::string host = sshArgv.back();
  sshArgv.pop_back();
  // -n: no stdin; -N: no command; ControlPersist=no: the master stays our child.
  sshArgv.insert(sshArgv.end(), {"-n", "-N", "-M", "-o", "ControlPath=" + m_socket, "-o",
                                 "ControlPersist=no", host});
  auto spawned = sweep::spawn(sshArgv, "/dev/null", log, /*newGroup=*/true);
  if (!spawned.isOk()) {
    *error = spawned.status().message();
    stop();
    return false;
  }
  m_pid = spawned.value();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (!isSocket(m_socket)) {
    int status = 0;
    const bool ended = ::waitpid(m_pid, &status, WNOHANG) == m_pid;
    if (ended || std::chrono::steady_clock::now() > deadline) {
      if (ended) m_pid = -1;
      auto text = readRegularFile(log, 1 << 16);
      const std::string line = text.isOk() ? sweep::lastLine(text.value()) : std::string();
      *error =
          ended ? (line.empty() ? "ssh exited with code " +
                                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 255)
                                : line)
                : "no connection after " + std::to_string(int(timeoutSeconds)) + " s";
      stop();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::vector<std::string> SshMaster::clientOptions() const {
  if (m_pid <= 0) return {};
  return {"-o", "ControlPath=" + m_socket, "-o", "ControlMaster=no"};
}

void SshMaster::stop() {
  if (m_pid > 0) sweep::killGroup(m_pid);
  m_pid = -1;
  if (!m_dir.empty()) {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }
  m_dir.clear();
  m_socket.clear();
}

}  // namespace kiln::cli
