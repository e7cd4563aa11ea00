#include "cli/remote.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "cli/args.h"
#include "cli/ssh_master.h"
#include "kiln/version.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// Relative to the remote home folder, where ssh starts the remote command.
constexpr const char* kCacheDir = ".cache/kiln-remote";
// Options whose value is a file the command writes: run remotely into the job folder,
// fetched back to the local path afterwards.
const std::set<std::string> kOutputOptions = {"-o",
                                              "--output",
                                              "--export-output",
                                              "--export-profile",
                                              "--export-times",
                                              "--save-tactics",
                                              "--save-constraints"};

volatile sig_atomic_t g_signal = 0;
void onSignal(int signal) {
  g_signal = signal;
}

// While alive, SIGINT and SIGTERM set g_signal (no SA_RESTART: a wait sees the signal);
// the previous handlers come back at destruction.
class SignalsCaught {
 public:
  SignalsCaught() {
    g_signal = 0;
    struct sigaction action = {};
    action.sa_handler = onSignal;
    sigaction(SIGINT, &action, &m_oldInt);
    sigaction(SIGTERM, &action, &m_oldTerm);
  }
  ~SignalsCaught() {
    sigaction(SIGINT, &m_oldInt, nullptr);
    sigaction(SIGTERM, &m_oldTerm, nullptr);
  }
  SignalsCaught(const SignalsCaught&) = delete;
  SignalsCaught& operator=(const SignalsCaught&) = delete;

 private:
  struct sigaction m_oldInt = {}, m_oldTerm = {};
};

std::string shellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string lastLine(const std::string& text) {
  std::istringstream stream(text);
  std::string line, last;
  while (std::getline(stream, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs argv. stdin from `inFd` (-1: /dev/null), stdout to `outFd` (-1: inherited); with
// `capture`, stdout and stderr go into it instead. Returns the exit status, 255 when the
// program could not start, 128+N when killed by signal N. With `interruptible`, a
// SIGINT/SIGTERM of ours stops the wait: the child is terminated and -1 returned.
int runProcess(const std::vector<std::string>& argv, int inFd, int outFd, std::string* capture,
               bool interruptible = false) {
  int pipeFds[2] = {-1, -1};
  if (capture && pipe(pipeFds) != 0) return 255;
  const pid_t pid = fork();
  if (pid < 0) return 255;
  if (pid == 0) {
    const int devNull = open("/dev/null", O_RDONLY);
    dup2(inFd >= 0 ? inFd : devNull, 0);
    if (capture) {
      dup2(pipeFds[1], 1);
      dup2(pipeFds[1], 2);
    } else if (outFd >= 0) {
      dup2(outFd, 1);
    }
    std::vector<char*> cargv;
    for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "kiln: cannot start %s\n", argv[0].c_str());
    _exit(255);
  }
  if (capture) {
    close(pipeFds[1]);
    std::array<char, 4096> buffer;
    ssize_t n;
    while ((n = read(pipeFds[0], buffer.data(), buffer.size())) != 0) {
      if (n > 0)
        capture->append(buffer.data(), static_cast<size_t>(n));
      else if (errno != EINTR)
        break;
    }
    close(pipeFds[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 255;
    if (interruptible && g_signal) {
      kill(pid, SIGTERM);
      waitpid(pid, &status, 0);
      return -1;
    }
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string sha256Hex(EVP_MD_CTX* context) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context, digest, &size);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

void hashFileInto(EVP_MD_CTX* context, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 1 << 16> buffer;
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0)
    EVP_DigestUpdate(context, buffer.data(), static_cast<size_t>(in.gcount()));
}

// The content hash: of the bytes for a file; of every file's relative name and bytes, in
// name order, for a folder (so a folder's hash does not depend on times or tar's order).
std::string contentHash(const fs::path& path) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  if (fs::is_directory(path)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(path))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string name = fs::relative(file, path).string();
      EVP_DigestUpdate(context.get(), name.c_str(), name.size() + 1);
      hashFileInto(context.get(), file);
    }
  } else {
    hashFileInto(context.get(), path);
  }
  return sha256Hex(context.get());
}

class Remote {
 public:
  explicit Remote(const std::string& target) : m_target(target) {
    std::string host = target;
    const size_t colon = host.rfind(':');
    if (colon != std::string::npos && host.find(']') == std::string::npos) {
      m_port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    m_host = host;
    const char* kiln = std::getenv("KILN_REMOTE_KILN");
    m_kiln = kiln && *kiln ? kiln : "kiln";
  }

  // ssh argv running `command` (one remote shell line) on the target, through the
  // connection's master once connect() started one.
  std::vector<std::string> ssh(const std::string& command) const {
    std::vector<std::string> argv = sshToHost();
    const std::vector<std::string> client = m_master.clientOptions();
    argv.insert(argv.end() - 1, client.begin(), client.end());
    argv.push_back(command);
    return argv;
  }

  // Opens the one connection the calls share (unless KILN_REMOTE_REUSE=0), or says why
  // it cannot (a refused host key, a failed login) in one line.
  bool connect() {
    if (!sshReuseEnabled()) return true;
    constexpr double kConnectSeconds = 60;  // ssh's own ConnectTimeout usually ends it first
    std::string error;
    if (m_master.start(sshToHost(), kConnectSeconds, &error)) return true;
    return fail("cannot connect: " + error), false;
  }

  // One line on stderr naming the host; returns 1.
  int fail(const std::string& message) const {
    std::fprintf(stderr, "kiln: remote %s: %s\n", m_host.c_str(), message.c_str());
    return 1;
  }

  // The remote `kiln --version` release equals ours, or says why not.
  bool checkVersion() const {
    std::string output;
    const int rc = runProcess(ssh(shellQuote(m_kiln) + " --version"), -1, -1, &output);
    if (rc == 255) return fail("cannot connect: " + lastLine(output)), false;
    if (rc != 0)
      return fail("`" + m_kiln + " --version` failed (exit " + std::to_string(rc) +
                  "): " + lastLine(output)),
             false;
    std::istringstream words(output);
    std::string program, version;
    words >> program >> version;
    if (version != kKilnVersion)
      return fail("runs kiln " + (version.empty() ? "(unknown)" : version) + ", this is kiln " +
                  kKilnVersion + ": install the same release on both"),
             false;
    return true;
  }

  // The remote path of `local` (a file or a folder) in the content-hash cache, uploading
  // it only when that hash is not there yet. Empty (after one line) on failure.
  std::string upload(const fs::path& local) {
    const bool folder = fs::is_directory(local);
    const std::string name = fs::absolute(local).lexically_normal().filename().string();
    const std::string dir = std::string(kCacheDir) + "/" + contentHash(local);
    const std::string remote = dir + "/" + (name.empty() ? "data" : name);
    const std::string marker = folder ? dir + "/.complete" : remote;
    std::string output;
    if (runProcess(ssh("test -f " + shellQuote(marker)), -1, -1, &output) == 0) {
      std::fprintf(stderr, "kiln: remote %s: %s already there (%s)\n", m_host.c_str(),
                   local.string().c_str(), dir.c_str());
      return remote;
    }
    std::fprintf(stderr, "kiln: remote %s: uploading %s\n", m_host.c_str(), local.string().c_str());
    const std::string q = shellQuote(dir);
    int rc;
    if (folder) {
      rc = uploadFolder(local, q, &output);
    } else {
      const int in = open(local.c_str(), O_RDONLY);
      rc = runProcess(ssh("mkdir -p " + q + " && cat > " + shellQuote(remote + ".part") +
                          " && mv " + shellQuote(remote + ".part") + " " + shellQuote(remote)),
                      in, -1, &output);
      if (in >= 0) close(in);
    }
    if (rc != 0) return fail("upload of " + local.string() + " failed: " + lastLine(output)), "";
    return remote;
  }

  // Fetches `remote` into `local` through a temporary file in the same folder, renamed
  // over it only when complete.
  bool fetch(const std::string& remote, const std::string& local) const {
    fs::path target(local);
    fs::path temp = target.parent_path() / ("." + target.filename().string() + ".kiln-remote");
    const int out = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) return fail("cannot write " + temp.string()), false;
    const int rc = runProcess(ssh("cat " + shellQuote(remote)), -1, out, nullptr);
    close(out);
    std::error_code error;
    if (rc == 0) fs::rename(temp, target, error);
    if (rc != 0 || error) {
      fs::remove(temp, error);
      return fail("fetching " + local + " failed (exit " + std::to_string(rc) + ")"), false;
    }
    return true;
  }

  bool remoteFileExists(const std::string& remote) const {
    std::string output;
    return runProcess(ssh("test -f " + shellQuote(remote)), -1, -1, &output) == 0;
  }

  void run(const std::string& command) const { runCaptured(command); }
  int runCaptured(const std::string& command) const {
    std::string output;
    return runProcess(ssh(command), -1, -1, &output);
  }

  const std::string& kiln() const { return m_kiln; }

 private:
  // ssh, its options, and the host (BatchMode, strict host keys, KILN_REMOTE_SSH_OPTIONS).
  std::vector<std::string> sshToHost() const {
    std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes", "-o",
                                     "StrictHostKeyChecking=yes"};
    if (const char* options = std::getenv("KILN_REMOTE_SSH_OPTIONS")) {
      std::istringstream words(options);
      for (std::string word; words >> word;) argv.push_back(word);
    }
    if (!m_port.empty()) argv.insert(argv.end(), {"-p", m_port});
    argv.push_back(m_host);
    return argv;
  }

  int uploadFolder(const fs::path& local, const std::string& quotedDir, std::string* output) {
    char tarPath[] = "/tmp/kiln-remote-XXXXXX";
    const int tar = mkstemp(tarPath);
    if (tar < 0) return 255;
    const fs::path absolute = fs::absolute(local).lexically_normal();
    fs::path folder = absolute.has_filename() ? absolute : absolute.parent_path();
    int rc = runProcess(
        {"tar", "-C", folder.parent_path().string(), "-cf", "-", folder.filename().string()}, -1,
        tar, nullptr);
    if (rc == 0) {
      lseek(tar, 0, SEEK_SET);
      rc = runProcess(ssh("mkdir -p " + quotedDir + " && tar -C " + quotedDir + " -xf - && touch " +
                          quotedDir + "/.complete"),
                      tar, -1, output);
    }
    close(tar);
    unlink(tarPath);
    return rc;
  }

  std::string m_target, m_host, m_port, m_kiln;
  SshMaster m_master;
};

// An argument that names local files: a path, or `name:path`, or a comma list of those.
// Uploads them; `rewritten` gets the argument with remote paths (itself when it names
// nothing local). False (after one line) when an upload fails.
bool rewriteInputs(Remote& remote, const std::string& arg, std::string* rewritten) {
  const size_t equals = arg.find('=');
  if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {  // --option=VALUE
    if (!rewriteInputs(remote, arg.substr(equals + 1), rewritten)) return false;
    *rewritten = arg.substr(0, equals + 1) + *rewritten;
    return true;
  }
  if (fs::exists(arg)) {
    *rewritten = remote.upload(arg);
    return !rewritten->empty();
  }
  std::string result;
  std::istringstream items(arg);
  bool first = true;
  for (std::string item; std::getline(items, item, ',');) {
    const size_t colon = item.find(':');
    if (colon != std::string::npos && fs::exists(item.substr(colon + 1))) {
      const std::string path = remote.upload(item.substr(colon + 1));
      if (path.empty()) return false;
      item = item.substr(0, colon + 1) + path;
    }
    result += (first ? "" : ",") + item;
    first = false;
  }
  *rewritten = result;
  return true;
}

std::string jobId() {
  std::random_device random;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", random(), random());
  return id;
}

}  // namespace

int runRemote(const std::string& target, std::vector<std::string> args) {
  Remote remote(target);
  // The global options that name local files travel too: plugin libraries (uploaded,
  // then loaded by the target's kiln) and trusted public keys.
  std::vector<std::pair<std::string, std::vector<std::string>>> globals = {{"plugins", {}},
                                                                           {"trust", {}}};
  for (auto& [name, lists] : globals)
    if (Status s = takeGlobalOption(&args, name, &lists); !s.isOk())
      return remote.fail(s.message());
  const std::set<std::string> commands = {"build", "run", "compare", "calibrate"};
  if (args.empty() || !commands.count(args[0]))
    return remote.fail("runs build, run, compare or calibrate, not '" +
                       (args.empty() ? std::string() : args[0]) + "'");
  // Ctrl-C or SIGTERM from here on sets g_signal instead of ending the process, so the
  // connection's master and socket folder are closed however early it comes; an upload in
  // progress finishes first, then the remote job is not started.
  SignalsCaught signals;
  if (!remote.connect() || !remote.checkVersion()) return g_signal ? 130 : 1;

  const std::string job = std::string(kCacheDir) + "/jobs/" + jobId();
  std::vector<std::pair<std::string, std::string>> outputs;  // remote, local
  std::string line = shellQuote(remote.kiln());
  for (const auto& [name, lists] : globals) {
    for (const std::string& list : lists) {
      std::string rewritten;
      if (!rewriteInputs(remote, list, &rewritten)) return g_signal ? 130 : 1;
      line += " --" + name + " " + shellQuote(rewritten);
    }
  }
  line += " " + shellQuote(args[0]);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i], option;
    const size_t equals = arg.find('=');
    if (arg.rfind("--", 0) == 0 && equals != std::string::npos &&
        kOutputOptions.count(arg.substr(0, equals))) {
      option = arg.substr(0, equals + 1);
      arg = arg.substr(equals + 1);
    } else if (kOutputOptions.count(arg) && i + 1 < args.size()) {
      line += " " + shellQuote(arg);
      arg = args[++i];
      option = " ";
    }
    if (!option.empty()) {
      const std::string path =
          job + "/out" + std::to_string(outputs.size()) + "-" + fs::path(arg).filename().string();
      outputs.emplace_back(path, arg);
      line += " " + shellQuote((option == " " ? "" : option) + path);
      continue;
    }
    std::string rewritten;
    if (!rewriteInputs(remote, arg, &rewritten)) return g_signal ? 130 : 1;
    line += " " + shellQuote(rewritten);
  }

  // `exec` keeps the shell's pid, so the pid file names kiln itself for a later kill.
  const std::string command = "mkdir -p " + shellQuote(job) + " && echo $$ > " +
                              shellQuote(job + "/pid") + " && exec " + line;
  if (g_signal) {
    remote.fail("interrupted before the remote kiln started");
    return 130;
  }
  const int rc = runProcess(remote.ssh(command), 0, -1, nullptr, true);

  const std::string cleanup = "rm -rf " + shellQuote(job);
  if (rc < 0 || g_signal) {
    // The job's shell may not have written its pid yet (a loaded target starts the session
    // late): wait up to 5 s for it, or the kiln it then starts would outlive the interrupt.
    const std::string pid = shellQuote(job + "/pid");
    remote.run("i=0; while [ ! -s " + pid +
               " ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; " + "kill -TERM $(cat " + pid +
               ") 2>/dev/null; " + cleanup);
    remote.fail("interrupted; the remote kiln was stopped");
    return 130;
  }
  if (rc == 255) {
    remote.run(cleanup);
    return remote.fail("connection lost or ssh failed (exit 255); nothing fetched");
  }
  // `kiln compare` exits 3 when it compared and some output is outside the tolerance:
  // a result, whose report comes back as a successful run's would.
  const bool judged = args[0] == "compare" && rc == 3;
  if (rc != 0 && !judged) {
    remote.run(cleanup);
    remote.fail("`kiln " + args[0] + "` failed (exit " + std::to_string(rc) + "); nothing fetched");
    return rc;
  }
  bool fetched = true;
  for (const auto& [path, local] : outputs)
    if (remote.remoteFileExists(path)) fetched = remote.fetch(path, local) && fetched;
  remote.run(cleanup);
  return fetched ? rc : 1;
}

}  // namespace kiln::cli
