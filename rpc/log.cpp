#include "rpc/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace atvoss::rpc {

namespace {
std::atomic<bool> g_enabled{true};
std::mutex g_mu;
}  // namespace

void log_if_exception(std::string_view component, std::exception_ptr e) noexcept {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    log_line(component, std::string("coroutine ended by an exception: ") + ex.what());
  } catch (...) {
    log_line(component, "coroutine ended by an unknown exception");
  }
}

void set_log_enabled(bool enabled) noexcept { g_enabled.store(enabled); }

std::string printable(std::string_view text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kDigits[u >> 4];
      out += kDigits[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

void log_line(std::string_view component, std::string_view message) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const double seconds = std::chrono::duration<double>(now).count();
  std::string line = std::to_string(seconds) + " " + std::string(component) + ": " + printable(message) + "\n";
  const std::lock_guard lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace atvoss::rpc
