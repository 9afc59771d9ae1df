// FileLock: an exclusive flock on a lock file, held while the object lives, so that one
// process at a time does something several may start at once (measure the host's
// calibration, run one job). The kernel drops it when the process dies, so a killed holder
// never blocks the next one. The lock file holds nothing; it is created 0600 and never
// opened through a symlink, so a planted link cannot make atvoss create or lock another file.
#pragma once

#include <optional>
#include <string>

namespace atvoss {

class FileLock {
 public:
  // The lock on path: waits for it when wait, else nullopt while another holds it. io error
  // naming path if it cannot be opened; bad_input if it is not a regular file.
  static std::optional<FileLock> take(const std::string& path, bool wait);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();  // closing the file drops the lock

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace atvoss
