#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss {
namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// fsync of an existing path; a read-only descriptor suffices on Linux.
void sync_path(const std::string& path, int flags, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) throw Error(ErrorKind::io, os_error(what + ": cannot open '" + path + "' to sync it"));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) throw Error(ErrorKind::io, os_error(what + ": fsync of '" + path + "' failed"));
}

// Creates an empty file with a unique name beside path and returns that name. Not
// mkstemp: its 0600 mode would end up on the destination; O_EXCL with 0666 lets the umask
// decide, as for any file the user writes.
std::string unique_temporary(const std::string& path, const std::string& what) {
  static std::atomic<std::uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) +
                             "." + std::to_string(std::random_device{}());
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return name;
    }
    if (errno != EEXIST) break;
  }
  throw Error(ErrorKind::io, os_error(what + ": cannot create a file beside '" + path + "'"));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view what_view,
                           const std::function<void(std::ostream&)>& write) {
  const std::string what(what_view);
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw Error(ErrorKind::io, what + ": write to standard output failed");
    return;
  }
  require_replaceable_file(path, what);
  const std::string tmp = unique_temporary(path, what);
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw Error(ErrorKind::io, what + ": cannot write '" + tmp + "'");
      write(out);
      out.flush();
      if (!out) throw Error(ErrorKind::io, what + ": write to '" + tmp + "' failed");
    }
    sync_path(tmp, 0, what);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      throw Error(ErrorKind::io, os_error(what + ": cannot move '" + tmp + "' into place at '" + path + "'"));
    }
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  sync_path(dir.empty() ? "." : dir, O_DIRECTORY, what);
}

}  // namespace atvoss
