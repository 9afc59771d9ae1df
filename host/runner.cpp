#include "host/runner.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "host/process.hpp"

#ifndef ATVOSS_KERNEL_RUNNER_PATH
#define ATVOSS_KERNEL_RUNNER_PATH ""
#endif

namespace atvoss::host {
namespace {

namespace fs = std::filesystem;

// The last n bytes of a child's output, as a measurement's message: valid UTF-8 (a cut
// character, or bytes a kernel printed, escaped: core/utf8.hpp), so that the records and
// every JSON answer that carries it stay valid.
std::string tail(const std::string& text, std::size_t n) {
  return escape_invalid_utf8(text.size() <= n ? text : "..." + text.substr(text.size() - n));
}

}  // namespace

std::string find_runner() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("ATVOSS_KERNEL_RUNNER"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    tried.push_back(env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / "atvoss-kernel-runner";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
    tried.push_back(beside.string());
  }
  const std::string built = ATVOSS_KERNEL_RUNNER_PATH;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  tried.push_back(built);
  std::string list;
  for (const auto& t : tried) list += " " + t;
  throw Error(ErrorKind::io, "host: atvoss-kernel-runner not found (set ATVOSS_KERNEL_RUNNER); tried:" + list);
}

Measurement run_kernel(const std::string& so_path, const Workload& w, const RunOptions& o) {
  const TimingOptions& t = o.timing;
  std::vector<std::string> argv = {o.runner.empty() ? find_runner() : o.runner,
                                   "--so",
                                   so_path,
                                   "--workload",
                                   w.to_json().dump(),
                                   "--seed",
                                   std::to_string(t.seed),
                                   "--repeat",
                                   std::to_string(t.repeat),
                                   "--cpu=" + std::to_string(t.cpu),
                                   "--min-repeat-us",
                                   std::to_string(t.min_repeat_us)};
  if (t.as_in_a_model) argv.push_back("--as-in-a-model");
  if (!t.cpus.empty()) {
    std::string list;
    for (int c : t.cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
    argv.push_back("--cpus=" + list);
  }
  const ProcessResult p = run_process(argv, o.timeout_s, o.cancel);
  if (!p.started) throw Error(ErrorKind::io, "host: " + p.err);
  if (p.cancelled) return Measurement::failed(Status::error, kCancelledMessage);
  if (p.timed_out) {
    return Measurement::failed(Status::timeout, "kernel ran past " + std::to_string(o.timeout_s) + " s and was killed");
  }
  if (p.signal != 0) {
    return Measurement::failed(
        Status::runtime_error,
        std::string("kernel crashed: signal ") + std::to_string(p.signal) + " (" + ::strsignal(p.signal) + ")");
  }
  Json j;
  try {
    j = Json::parse(p.out);
  } catch (const std::exception&) {
    return Measurement::failed(Status::runtime_error, "kernel runner exit " + std::to_string(p.exit_code) + ": " +
                                                          tail(p.err.empty() ? p.out : p.err, 400));
  }
  const std::string status = j.value("status", "");
  if (status == "wrong_answer") return Measurement::failed(Status::wrong_answer, j.value("message", ""));
  if (status != "ok" || p.exit_code != 0) {
    return Measurement::failed(Status::runtime_error, "kernel runner: " + tail(p.err + j.dump(), 400));
  }
  Measurement m;
  m.time_us = j.at("time_us").get<double>();
  m.repeats = j.at("repeats").get<std::vector<double>>();
  m.profile.time_cv = j.value("cv", 0.0);
  return m;
}

}  // namespace atvoss::host
