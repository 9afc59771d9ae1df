// Worker: the measuring side of the farm (atvoss-worker). It connects to a coordinator,
// logs in, registers its targets (by farm_target_key, protocol.hpp: a host target by its
// CPU fingerprint) and slots, runs every task it receives on its slots (a MeasurePool,
// backend/measure_pool.hpp, as the in-process measurer uses), streams results back in
// batches and sends a heartbeat every interval.
// If the coordinator goes away it reconnects with exponential backoff; tasks of the old
// connection are dropped (the coordinator has requeued them), never answered late.
// Threading: run() blocks in the calling thread; stop() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/measure_pool.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "rpc/channel.hpp"

namespace atvoss::rpc {

// How one task is measured: on the backend that serves it by default; tests and benches
// inject others.
using MeasureFunction =
    std::function<Measurement(const Target&, const Workload&, const Schedule&, int repeat, std::uint64_t seed)>;

struct WorkerOptions {
  Endpoint farm;
  // REQUIRES: at least one. A host target (host/machine.hpp) must be this machine's own:
  // another CPU's is refused (bad_input), since its results would be filed under that CPU.
  std::vector<Target> targets;
  // Backends this worker measures with (backend/backend.hpp), registered with the farm.
  // Default (empty): every backend this build has.
  std::vector<std::string> backends;
  // Tasks measured at once (one thread each). 0: 1, or for a worker with a host target its
  // physical cores. A host target caps it there: one timed kernel per physical core.
  int slots = 0;
  std::optional<std::string> token;
  // Directories whose recorded tables (workloads {"op": "recorded", "table": PATH}) this
  // worker serves (--recorded-dir); none by default. A client names the path, so without
  // this a farm client could make the worker open any file (and block on a FIFO): a table
  // is served only if it resolves, through every symlink, to a regular file inside one of
  // these, and an error never carries the file's content.
  std::vector<std::string> recorded_dirs;
  std::string name;     // shown in the farm's stats; default host-pid
  double noise = 0.02;  // jitter sigma of simulating backends
  // Sleep as long as the device run would take: compile_ms + repeat x simulated time.
  // Off by default; lets farm behaviour be studied at realistic speeds.
  bool emulate_device_latency = false;
  double compile_ms = 20.0;  // emulated compile cost per task (est.; real toolchains: 10 ms..s)
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds backoff_min{100};  // first reconnect delay, doubled per failure
  std::chrono::milliseconds backoff_max{5000};
  int max_connect_attempts = 0;  // 0: forever; otherwise run() throws the last Error after that many
};

// The default MeasureFunction: the task's backend (backend/backend.hpp) with the worker's noise.
MeasureFunction backend_measure(double noise);

class Worker {
 public:
  explicit Worker(WorkerOptions options, MeasureFunction measure = {});
  ~Worker();  // stops and joins the slots
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until stop(). Throws Error(protocol) if the farm refuses the login (wrong token
  // or version: retrying cannot help) and, with max_connect_attempts, Error(io).
  void run();
  void stop();
  std::uint64_t measured() const { return measured_.load(); }

 private:
  void serve(Channel& channel, std::uint64_t generation);
  // Queues one task on the slots; its result goes out only while generation is current.
  void assign(const Json& task, std::uint64_t generation);
  void writer_loop();
  Measurement measure_task(const Json& task);
  // Why this worker will not open the recorded table at path; nullopt when it may.
  std::optional<std::string> table_refusal(const std::string& path) const;

  WorkerOptions options_;
  MeasureFunction measure_;
  std::vector<std::string> target_keys_;  // farm_target_key() of options_.targets, computed once
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> measured_{0};

  std::mutex mu_;
  std::condition_variable results_cv_, stop_cv_;
  Json results_ = Json::array();
  std::uint64_t generation_ = 0;      // bumped on every (re)connect
  std::shared_ptr<Channel> channel_;  // current connection, null while disconnected
  std::unique_ptr<backend::MeasurePool> slots_;
  std::thread writer_;
};

}  // namespace atvoss::rpc
