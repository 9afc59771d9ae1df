// atvoss-farm: the tuning-farm coordinator. Parses flags and runs rpc::Coordinator
// until SIGINT/SIGTERM, then shuts down gracefully (docs/protocol.md).
//   atvoss-farm [--host 127.0.0.1] [--port 9190] [--token-file F] [--db F]
//               [--http-port 9191] [--grace-ms 10000] [--port-file F]
// The token comes from --token-file or ATVOSS_TOKEN, never from the command line.
#include <fstream>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/user_paths.hpp"
#include "rpc/auth.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/log.hpp"
#include "tools/cli_common.hpp"

int main(int argc, char** argv) {
  CLI::App app{"atvoss-farm: tuning-farm coordinator (workers measure, clients submit)"};
  atvoss::rpc::CoordinatorOptions options;
  std::string token_file, port_file;
  int http_port = -1;
  int grace_ms = 10000, heartbeat_ms = 1000, login_timeout_ms = 5000, task_lease_ms = 600000;
  app.add_option("--host", options.host, "bind address (non-loopback needs a token)")
      ->capture_default_str()
      ->check(atvoss::tools::ip_address());
  app.add_option("--port", options.port, "farm port; 0 picks a free one (see --port-file)")->capture_default_str();
  app.add_option("--token-file", token_file, "file holding the farm token (else ATVOSS_TOKEN; none: loopback only)");
  app.add_option("--threads", options.threads, "io threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--db", options.db_path, "tuning database that records every relayed result");
  app.add_option("--http-port", http_port, "query endpoint port (/v1/best, /v1/stats, /metrics); 0 = free port")
      ->check(CLI::Range(0, 65535));
  app.add_option("--http-host", options.http_host, "query endpoint bind address")
      ->capture_default_str()
      ->check(atvoss::tools::ip_address());
  app.add_option("--grace-ms", grace_ms, "shutdown: time left to tasks in flight")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600000));
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat period; workers silent for 3 periods are removed")
      ->capture_default_str()
      ->check(CLI::Range(10, 60000));
  app.add_option("--task-lease-ms", task_lease_ms,
                 "a task a worker has not answered in this long goes to another worker; 0: no limit")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400000));
  app.add_option("--login-timeout-ms", login_timeout_ms, "connections that have not logged in by then are dropped")
      ->capture_default_str()
      ->check(CLI::Range(10, 600000));
  app.add_option("--max-frame-bytes", options.max_frame_bytes, "largest frame accepted")->capture_default_str();
  app.add_option("--port-file", port_file, "write {\"port\":P,\"http_port\":H} here once listening");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no log lines on stderr");
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    atvoss::rpc::set_log_enabled(!quiet);
    options.token = atvoss::rpc::load_token(token_file);
    if (!port_file.empty()) atvoss::require_replaceable_file(port_file, "--port-file");  // before listening
    options.grace = std::chrono::milliseconds(grace_ms);
    options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
    options.login_timeout = std::chrono::milliseconds(login_timeout_ms);
    options.task_lease = std::chrono::milliseconds(task_lease_ms);
    if (http_port >= 0) options.http_port = static_cast<std::uint16_t>(http_port);
    atvoss::rpc::Coordinator farm(options);
    farm.start();
    farm.handle_signals();
    atvoss::rpc::log_line("farm", "listening on " + options.host + ":" + std::to_string(farm.port()) +
                                      (options.token ? " (token required)" : " (no token: loopback peers only)") +
                                      (options.http_port ? ", HTTP on " + std::to_string(farm.http_port()) : ""));
    if (!port_file.empty()) {
      // Readers never see half a file.
      atvoss::write_file_atomically(port_file, "--port-file", [&](std::ostream& out) {
        out << atvoss::Json{{"port", farm.port()}, {"http_port", farm.http_port()}}.dump() << "\n";
      });
    }
    farm.wait();
    atvoss::rpc::log_line("farm", "stopped");
    return 0;
  });
}
