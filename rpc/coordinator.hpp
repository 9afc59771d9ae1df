// Coordinator: the tuning-farm server (atvoss-farm). Workers log in, register the
// targets they simulate and their slots, and receive tasks; clients submit batches
// of (workload, target, schedule, repeat, seed) and get one answer per item as
// results stream back. What it guarantees, and why (docs/protocol.md has the wire side):
//   - a worker never holds more tasks than its slots (backpressure lives in the queue);
//   - a worker that misses `missed_heartbeats` heartbeats or disconnects is removed and
//     its tasks are requeued; after `max_retries` losses a task is answered worker_lost,
//     an infrastructure status the tuner never stores as the candidate's result;
//   - a late result for a task that was reassigned is ignored (leases are per session);
//   - identical requests in flight from different clients are measured once;
//   - shutdown() stops accepting, lets tasks finish for `grace`, answers the rest
//     session_timeout.
// Threading: one io_context run by `threads` threads; each connection is serialised on
// its own strand, the farm state is guarded by one mutex. Public methods are thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/json.hpp"
#include "rpc/frame.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

struct CoordinatorOptions {
  std::string host = "127.0.0.1";                               // bind address; non-loopback needs a token
  std::uint16_t port = kDefaultFarmPort;                        // 0 picks a free port (read it from port())
  std::optional<std::string> token;                             // none: loopback peers only
  int threads = 2;                                              // io threads; more only helps with many sessions
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;          // after login
  std::size_t max_login_frame_bytes = kDefaultLoginFrameBytes;  // before login
  // Connections not yet logged in, overall and from one address; past either the oldest
  // waiting one gets `busy` (rpc/internal/admission_gate.hpp).
  std::size_t max_unauthenticated = 64;
  std::size_t max_unauthenticated_per_address = 16;
  std::chrono::milliseconds heartbeat_interval{1000};  // also the liveness sweep period
  int missed_heartbeats = 3;                           // worker removed after this many intervals of silence
  int max_retries = 3;                                 // requeues of one task before worker_lost
  std::chrono::milliseconds task_lease{600000};        // a task unanswered this long is given to another worker
  std::chrono::milliseconds grace{10000};              // shutdown: time left to tasks in flight
  std::chrono::milliseconds login_timeout{5000};       // unauthenticated connections are dropped after it
  std::string db_path;                                 // non-empty: log every relayed result in this database
  std::optional<std::uint16_t> http_port;              // query endpoint (0 = free port); nullopt: off
  std::string http_host = "127.0.0.1";
};

class Coordinator {
 public:
  explicit Coordinator(CoordinatorOptions options);
  ~Coordinator();  // stops at once (no grace) if still running
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Binds and starts the io threads. Throws Error(io) if a port cannot be bound,
  // Error(bad_input) for a non-loopback bind without a token.
  void start();
  std::uint16_t port() const;       // REQUIRES: start() succeeded
  std::uint16_t http_port() const;  // 0 when the query endpoint is off
  // SIGINT/SIGTERM start a graceful shutdown(). REQUIRES: start().
  void handle_signals();
  // Graceful stop (see top comment); blocks until done. Idempotent, any thread but an io thread.
  void shutdown();
  // Blocks until the coordinator has stopped (after shutdown(), e.g. from a signal).
  void wait();

  Json stats() const;                // /v1/stats: workers, queue, counters
  std::string metrics_text() const;  // /metrics: Prometheus text exposition

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace atvoss::rpc
