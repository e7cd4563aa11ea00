#include "kiln/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

namespace kiln {
namespace {

// Closes the descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }
  int release() { return std::exchange(m_fd, -1); }

 private:
  int m_fd;
};

const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a file";
}

// Opens `path` for reading without blocking (a FIFO with no writer would) and
// checks that what was opened is a regular file; its size goes to `size`.
Result<int> openRegular(const std::string& path, int64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    const std::string message = path + ": cannot open (" + std::strerror(error) + ")";
    if (error == ENOENT) return notFound(path + ": cannot open");
    if (error == EISDIR) return invalidArgument(path + ": is a directory, not a regular file");
    return Status(StatusCode::kIoError, message);
  }
  Fd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Status(StatusCode::kIoError, path + ": cannot stat (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode))
    return invalidArgument(path + ": " + fileKind(st.st_mode) + ", not a regular file");
  // Reads of a regular file never block; drop the flag so they behave as usual.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size = static_cast<int64_t>(st.st_size);
  return guard.release();
}

Status readAt(int fd, const std::string& path, int64_t offset, char* out, int64_t length) {
  int64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, out + done, static_cast<size_t>(length - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(StatusCode::kIoError, path + ": read failed (" + std::strerror(errno) + ")");
    if (n == 0) return Status(StatusCode::kIoError, path + ": file shrank while being read");
    done += n;
  }
  return Status::ok();
}

}  // namespace

Result<int64_t> regularFileSize(const std::string& path) {
  int64_t size = 0;
  KILN_ASSIGN_OR_RETURN(int fd, openRegular(path, &size));
  ::close(fd);
  return size;
}

Result<std::string> readRegularFile(const std::string& path, int64_t maxBytes) {
  int64_t size = 0;
  KILN_ASSIGN_OR_RETURN(int fd, openRegular(path, &size));
  Fd guard(fd);
  if (size > maxBytes)
    return Status(StatusCode::kOutOfRange, path + ": " + std::to_string(size) +
                                               " bytes, more than the " + std::to_string(maxBytes) +
                                               " allowed");
  std::string bytes(static_cast<size_t>(size), '\0');
  KILN_RETURN_IF_ERROR(readAt(fd, path, 0, bytes.data(), size));
  return bytes;
}

Result<std::string> readRegularFileRange(const std::string& path, int64_t offset, int64_t length) {
  int64_t size = 0;
  KILN_ASSIGN_OR_RETURN(int fd, openRegular(path, &size));
  Fd guard(fd);
  if (offset < 0 || length < 0 || offset > size || length > size - offset)
    return parseError(path + ": range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                      ") lies outside the file (" + std::to_string(size) + " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  KILN_RETURN_IF_ERROR(readAt(fd, path, offset, bytes.data(), length));
  return bytes;
}

Status writeFileAtomically(const std::string& path, const std::string& bytes,
                           const std::string& what) {
  std::random_device entropy;
  std::string temp;
  int fd = -1;
  // O_EXCL refuses an existing name, a planted link included; O_NOFOLLOW says so
  // again for systems that would otherwise follow it.
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".partial-%d-%08x", static_cast<int>(::getpid()),
                  static_cast<unsigned>(entropy()));
    temp = path + suffix;
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    return Status(StatusCode::kIoError,
                  path + ": cannot write " + what + " (" + std::strerror(errno) + ")");
  Fd guard(fd);
  int64_t done = 0;
  const int64_t total = static_cast<int64_t>(bytes.size());
  while (done < total) {
    const ssize_t n = ::write(fd, bytes.data() + done, static_cast<size_t>(total - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::unlink(temp.c_str());
      return Status(StatusCode::kIoError,
                    path + ": writing " + what + " failed (" + std::strerror(error) + ")");
    }
    done += n;
  }
  if (::close(guard.release()) != 0 || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    return Status(StatusCode::kIoError,
                  path + ": cannot replace " + what + " (" + std::strerror(error) + ")");
  }
  return Status::ok();
}

}  // namespace kiln
