// One OpenSSH connection for all the ssh calls of one `kiln --remote` (docs/scale-out.md):
// a master ssh (ControlMaster) that this process starts as its own child, whose control
// socket the version check, the uploads, the command and the fetches then use as clients,
// so a remote build authenticates once instead of once per file. Nothing outlives kiln:
// the master is a child in a process group of its own (Ctrl-C at the terminal does not
// reach it), killed by stop() or when kiln dies (PR_SET_PDEATHSIG), and its socket lives
// in a private folder (mode 0700, under $XDG_RUNTIME_DIR or the temporary folder) that
// stop() removes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kiln::cli {

class SshMaster {
 public:
  SshMaster() = default;
  SshMaster(const SshMaster&) = delete;
  SshMaster& operator=(const SshMaster&) = delete;
  ~SshMaster() { stop(); }

  // Starts `ssh OPTIONS -M -N HOST` (`sshArgv` is the ssh command up to and including
  // the host) and waits until its control socket is there, which OpenSSH creates once
  // the connection is authenticated. False when ssh ends first (a refused host key, no
  // route, a failed login: `error` is its last stderr line) or does not come up within
  // `timeoutSeconds`; nothing is then left behind.
  bool start(std::vector<std::string> sshArgv, double timeoutSeconds, std::string* error);
  // What a client adds to its ssh options to go through the master: ControlPath and
  // ControlMaster=no (empty before start). A client whose master has died connects on
  // its own (ssh falls back when the socket does not answer).
  std::vector<std::string> clientOptions() const;
  // Ends the master (SIGTERM, then SIGKILL), reaps it and removes the private folder.
  void stop();
  bool running() const { return m_pid > 0; }

 private:
  pid_t m_pid = -1;
  std::string m_dir, m_socket;
};

// Whether kiln --remote shares one connection: yes unless KILN_REMOTE_REUSE=0.
bool sshReuseEnabled();

}  // namespace kiln::cli
