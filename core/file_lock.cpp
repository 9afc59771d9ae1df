#include "core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace atvoss {

std::optional<FileLock> FileLock::take(const std::string& path, bool wait) {
  // O_NONBLOCK: a FIFO planted at the name must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) throw Error(ErrorKind::io, "lock file " + path + ": " + std::strerror(errno));
  FileLock lock(fd);  // closes fd on every path out
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw_bad_input("lock file " + path + " is not a regular file");
  if (::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  return lock;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace atvoss
