#include "host/builder.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "core/error.hpp"
#include "host/digest.hpp"
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

std::string first_lines(const std::string& text, int lines) {
  std::size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos == 0 ? 0 : pos + 1);
  }
  return pos == std::string::npos ? text : text.substr(0, pos);
}

BuildResult build_one(const std::string& source, const BuildOptions& o, const fs::path& dir) {
  BuildResult r;
  const std::string key = build_key(source, o);
  const fs::path so = dir / (key + ".so");
  r.so_path = so.string();
  std::error_code ec;
  if (fs::exists(so, ec)) {
    r.cached = true;
    return r;
  }
  static std::atomic<unsigned> counter{0};
  const std::string tag = "." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const fs::path src = dir / (key + tag + ".cpp"), tmp = dir / (key + tag + ".so");
  {
    std::ofstream f(src);
    f << source;
    if (!f) throw Error(ErrorKind::io, "host builder: cannot write " + src.string());
  }
  std::vector<std::string> argv = {compiler_of(o)};
  argv.insert(argv.end(), o.flags.begin(), o.flags.end());
  argv.insert(argv.end(), {"-o", tmp.string(), src.string()});
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult p = run_process(argv, o.timeout_s);
  r.compile_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!p.started) throw Error(ErrorKind::io, "host builder: " + p.err);
  if (p.timed_out || p.exit_code != 0) {
    r.status = Status::compile_error;
    r.message = p.timed_out ? "compile timed out after " + std::to_string(o.timeout_s) + " s"
                            : "compiler exit " + std::to_string(p.exit_code) + ": " + first_lines(p.err, 8);
    fs::remove(tmp, ec);
    fs::remove(src, ec);
    return r;
  }
  fs::rename(tmp, so, ec);  // atomic: a concurrent build of the same source wrote the same bytes
  fs::rename(src, dir / (key + ".cpp"), ec);  // kept beside the .so for reading
  if (ec) fs::remove(src, ec);
  return r;
}

}  // namespace

std::string build_key(const std::string& source, const BuildOptions& options) {
  std::string text = source + "\n//" + compiler_of(options);
  for (const auto& f : options.flags) text += " " + f;
  return sha256_hex(text);
}

std::vector<BuildResult> build_all(const std::vector<std::string>& sources, const BuildOptions& options) {
  const fs::path dir = fs::path(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir) / "kernels";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::io, "host builder: cannot create " + dir.string() + ": " + ec.message());
  std::vector<BuildResult> results(sources.size());
  const int jobs = std::max(1, std::min<int>(options.jobs > 0 ? options.jobs : this_machine().physical_cores,
                                             int(sources.size())));
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < sources.size();) {
      try {
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
