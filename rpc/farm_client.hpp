// FarmClient: submits measurement requests to a coordinator and collects one answer per
// request. It is what FarmMeasurer (tuner/) and the farm tests and benchmark drive.
// If the coordinator goes away (crash, restart, graceful shutdown answering
// session_timeout) the client reconnects with backoff and resubmits every request that
// has no final answer, for up to reconnect_for; what is still unanswered then is
// answered with status error (an infrastructure status, never a candidate result).
// The rules live in ClientBatch (rpc/internal/client_batch.hpp), a state machine that
// measure() drives with what its connection does.
// Threading: one thread uses an instance at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "rpc/channel.hpp"

namespace atvoss::rpc {

struct FarmRequest {
  std::string target_key;  // farm_target_key() of the target to measure on (protocol.hpp)
  Json workload;           // Workload::to_json()
  Json schedule;           // Schedule::to_json()
  int repeat = 1;
  std::uint64_t seed = 0;
  // Fusion rules beyond the built-ins to lower it under (lowering::declared_fusion_rules_in_force):
  // an array of declarations, or empty. Part of the request, so requests that differ only
  // in their rules are measured apart.
  Json fusion_rules = Json::array();
};

struct FarmClientOptions {
  Endpoint farm;
  std::optional<std::string> token;
  // How long measure() keeps reconnecting and resubmitting after losing the coordinator.
  std::chrono::milliseconds reconnect_for{60000};
  // Silence after which the coordinator counts as gone (it sends heartbeats every second).
  std::chrono::milliseconds silence_timeout{5000};
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{2000};
};

// Counters a test can check: answers that arrived for an already-answered request
// (must stay 0), connections lost while a batch was in flight, and resubmitted requests.
struct FarmClientCounters {
  std::uint64_t answers = 0;
  std::uint64_t duplicate_answers = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t resubmitted = 0;
};

class FarmClient {
 public:
  explicit FarmClient(FarmClientOptions options);
  ~FarmClient();

  // One Measurement per request, in request order. Blocks until all are answered
  // (see top comment for the failure rules). Error(protocol) if the farm refuses the
  // login (wrong token or version): reconnecting cannot fix that.
  std::vector<Measurement> measure(const std::vector<FarmRequest>& requests);
  const FarmClientCounters& counters() const { return counters_; }

 private:
  FarmClientOptions options_;
  std::unique_ptr<Channel> channel_;
  std::uint64_t next_id_ = 1;
  FarmClientCounters counters_;
};

}  // namespace atvoss::rpc
