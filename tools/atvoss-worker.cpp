// atvoss-worker: a farm worker that measures tasks with its backends (the simulator, or
// with --backend host real kernels on this CPU; docs/host-backend.md "A host farm").
//   atvoss-worker --farm host:port --target T [--target T2] [--slots N] [--token-file F]
//                 [--backend B ...] [--emulate-device-latency [--compile-ms 20]]
//   atvoss-worker --farm host:port --backend host      (target: this machine, slots: its cores)
// Reconnects with backoff when the coordinator goes away; SIGINT/SIGTERM stop it.
// The token comes from --token-file or ATVOSS_TOKEN, never from the command line.
#include <csignal>
#include <iostream>
#include <thread>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "rpc/auth.hpp"
#include "rpc/log.hpp"
#include "rpc/worker.hpp"
#include "tools/cli_common.hpp"

int main(int argc, char** argv) {
  CLI::App app{"atvoss-worker: measures farm tasks with the NPU simulator or on this CPU (--backend host)"};
  std::string farm = "127.0.0.1:9190", token_file;
  std::vector<std::string> targets;
  atvoss::rpc::WorkerOptions options;
  bool quiet = false;
  app.add_option("--farm", farm, "coordinator host:port")->capture_default_str();
  app.add_option("--target", targets,
                 "target preset, JSON file or inline JSON (repeatable; default with --backend host: host)");
  app.add_option("--backend", options.backends, "backend measured with (repeatable; default: all)");
  app.add_option("--slots", options.slots,
                 "tasks measured at once (default 1; a host worker: its physical cores, and at most that)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--token-file", token_file, "file holding the farm token (else ATVOSS_TOKEN)");
  app.add_option("--name", options.name, "name shown in the farm's stats (default host-pid)");
  app.add_option("--recorded-dir", options.recorded_dirs,
                 "serve recorded tables from this directory (repeatable; default: none)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--noise", options.noise, "simulator jitter sigma")
      ->capture_default_str()
      ->check(atvoss::tools::real_range(0.0, 1.0));
  app.add_flag("--emulate-device-latency", options.emulate_device_latency,
               "take as long as a device run: compile + repeat x simulated time");
  app.add_option("--compile-ms", options.compile_ms, "emulated compile cost per task")
      ->capture_default_str()
      ->check(atvoss::tools::real_range(0.0, 600000.0));
  app.add_flag("--quiet", quiet, "no log lines on stderr");

  // Block the stop signals before any thread starts, so only the waiter below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  return atvoss::tools::run_cli(app, argc, argv, [&] {
    atvoss::rpc::set_log_enabled(!quiet);
    options.farm = atvoss::rpc::parse_endpoint(farm);
    options.token = atvoss::rpc::load_token(token_file);
    for (const std::string& b : targets.empty() ? options.backends : std::vector<std::string>{}) {
      const std::string implied = atvoss::backend::backend_named(b).implied_target();
      if (!implied.empty()) targets.push_back(implied);
    }
    if (targets.empty()) atvoss::throw_bad_input("--target: at least one is needed (or --backend host)");
    for (const std::string& t : targets) options.targets.push_back(atvoss::backend::load_target(t));
    atvoss::rpc::Worker worker(options);
    std::thread waiter([&] {
      int signal = 0;
      sigwait(&stop_signals, &signal);
      worker.stop();
    });
    int rc = 0;
    try {
      worker.run();
    } catch (...) {
      pthread_kill(waiter.native_handle(), SIGTERM);  // release the waiter, then report
      waiter.join();
      throw;
    }
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    return rc;
  });
}
