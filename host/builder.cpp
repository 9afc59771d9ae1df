#include "host/builder.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "host/digest.hpp"
#include "host/kernel_object.hpp"
#include "host/machine.hpp"
#include "host/process.hpp"

namespace atvoss::host {
namespace {

namespace fs = std::filesystem;

std::string compiler_of(const BuildOptions& o) {
  if (!o.compiler.empty()) return o.compiler;
  if (const char* c = std::getenv("ATVOSS_HOST_CXX"); c && *c) return c;
  return "c++";
}

// The first lines of a compiler's output, as a compile_error's message: valid UTF-8 (the
// compiler echoes source bytes and paths as they are; core/utf8.hpp escapes the rest).
std::string first_lines(const std::string& text, int lines) {
  std::size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos == 0 ? 0 : pos + 1);
  }
  return escape_invalid_utf8(pos == std::string::npos ? text : text.substr(0, pos));
}

// The content of a regular file, or nullopt (missing, unreadable, or not a regular file); a
// symlink is not followed, and a FIFO planted in the cache neither blocks the open
// (O_NONBLOCK) nor is read.
std::optional<std::string> read_nofollow(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(fd);
  return out;
}

// Writes text to a new file at p: never through a symlink, never over an existing file.
bool write_new(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    done += ok ? std::size_t(n) : 0;
  }
  return ::close(fd) == 0 && ok;
}

// A fresh file name beside the cache entry that nothing (a planted symlink) occupies: the
// source is written there.
fs::path write_source(const fs::path& dir, const std::string& key, const std::string& source, std::string& tag) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    tag = "." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const fs::path src = dir / (key + tag + ".cpp");
    if (write_new(src, source)) return src;
    if (errno != EEXIST && errno != ELOOP) break;
  }
  throw Error(ErrorKind::io, "host builder: cannot create a source file in " + dir.string());
}

// Whether the cached object at so matches the digest stored beside it and is a whole ELF
// object: a truncated one with its digest rewritten would be mapped past its end by dlopen.
bool verified(const fs::path& so) {
  const auto object = read_nofollow(so);
  const auto digest = read_nofollow(fs::path(so.string() + ".sha256"));
  return object && digest && *digest == sha256_hex(*object) && elf_incompleteness(so.string()).empty();
}

BuildResult build_one(const std::string& source, const BuildOptions& o, const fs::path& dir) {
  BuildResult r;
  const std::string key = build_key(source, o);
  const fs::path so = dir / (key + ".so");
  r.so_path = so.string();
  std::error_code ec;
  if (fs::exists(so, ec)) {
    if (verified(so)) {
      r.cached = true;
      return r;
    }
    fs::remove(so, ec);  // tampered or half-written: built again
  }
  std::string tag;
  const fs::path src = write_source(dir, key, source, tag), tmp = dir / (key + tag + ".so");
  std::vector<std::string> argv = {compiler_of(o)};
  argv.insert(argv.end(), o.flags.begin(), o.flags.end());
  argv.insert(argv.end(), {"-o", tmp.string(), src.string()});
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult p = run_process(argv, o.timeout_s, o.cancel);
  r.compile_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!p.started) throw Error(ErrorKind::io, "host builder: " + p.err);
  if (p.cancelled) {
    r.status = Status::error;
    r.message = kCancelledMessage;
    fs::remove(tmp, ec);
    fs::remove(src, ec);
    return r;
  }
  if (p.timed_out || p.exit_code != 0) {
    r.status = Status::compile_error;
    r.message = p.timed_out ? "compile timed out after " + std::to_string(o.timeout_s) + " s"
                            : "compiler exit " + std::to_string(p.exit_code) + ": " + first_lines(p.err, 8);
    fs::remove(tmp, ec);
    fs::remove(src, ec);
    return r;
  }
  const auto object = read_nofollow(tmp);
  const fs::path digest_tmp = dir / (key + tag + ".so.sha256");
  if (!object || !write_new(digest_tmp, sha256_hex(*object))) {
    fs::remove(tmp, ec);
    fs::remove(src, ec);
    throw Error(ErrorKind::io, "host builder: cannot record the digest of " + tmp.string());
  }
  // Digest first: a reader that finds the object finds its digest.
  fs::rename(digest_tmp, so.string() + ".sha256", ec);
  fs::rename(tmp, so, ec);                    // atomic: a concurrent build of the same source wrote the same bytes
  fs::rename(src, dir / (key + ".cpp"), ec);  // kept beside the .so for reading
  if (ec) fs::remove(src, ec);
  return r;
}

}  // namespace

std::string build_key(const std::string& source, const BuildOptions& options) {
  std::string text = source + "\n//" + compiler_of(options);
  for (const auto& f : options.flags) text += " " + f;
  text += "\n//" + (options.cpu.empty() ? this_machine().fingerprint() : options.cpu);
  return sha256_hex(text);
}

void require_private_dir(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  if (!fs::exists(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw Error(ErrorKind::io, "host builder: cannot create " + dir + ": " + ec.message());
    ::chmod(p.c_str(), 0700);
  }
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) throw Error(ErrorKind::io, "host builder: cannot stat " + dir);
  if (!S_ISDIR(st.st_mode)) throw_bad_input("compile cache '" + dir + "' is not a directory (a symlink?)");
  if (st.st_uid != ::geteuid()) {
    throw_bad_input("compile cache '" + dir + "' is owned by another user (uid " + std::to_string(st.st_uid) +
                    "); atvoss runs what it finds there, so it uses only a directory of its own");
  }
  if (st.st_mode & 022) {
    throw_bad_input("compile cache '" + dir + "' is writable by group or others (mode " +
                    std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                    std::to_string(st.st_mode & 7) + "); make it private: chmod 700 '" + dir + "'");
  }
}

std::filesystem::path require_private_cache(const BuildOptions& options) {
  const fs::path root = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  require_private_dir(root.string());
  const fs::path dir = root / "kernels";
  require_private_dir(dir.string());
  return dir;
}

std::vector<BuildResult> build_all(const std::vector<std::string>& sources, const BuildOptions& options) {
  const fs::path dir = require_private_cache(options);
  std::vector<BuildResult> results(sources.size());
  const int jobs =
      std::max(1, std::min<int>(options.jobs > 0 ? options.jobs : this_machine().physical_cores, int(sources.size())));
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < sources.size();) {
      try {
        if (cancelled(options.cancel)) {
          results[i].status = Status::error;
          results[i].message = kCancelledMessage;
          continue;
        }
        results[i] = build_one(sources[i], options, dir);
      } catch (...) {
        std::lock_guard lock(failure_mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace atvoss::host
