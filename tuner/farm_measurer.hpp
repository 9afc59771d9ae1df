// FarmMeasurer: the Measurer that sends each batch to a tuning farm (atvoss-farm) and
// waits for one answer per item (`atvoss-tune --farm host:port`). Built on
// rpc::FarmClient, so a tuning job survives a restart of the coordinator: whatever was
// not answered is submitted again once it is back (for up to reconnect_for).
// Infrastructure failures (worker_lost after the farm's retries, an unreachable farm)
// come back as infrastructure statuses, which the tuner never stores as results.
// Recorded workloads (op "recorded") need their table on the worker and are not
// supported by farm workers; use the local measurer for them.
// Threading: one tuner thread uses an instance (Measurer's rule).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "rpc/farm_client.hpp"
#include "tuner/measurer.hpp"

namespace atvoss::tuner {

struct FarmMeasurerOptions {
  rpc::Endpoint farm;
  std::optional<std::string> token;                 // default: ATVOSS_TOKEN (see make_farm_measurer)
  std::chrono::milliseconds reconnect_for{120000};  // patience with a coordinator that went away
};

class FarmMeasurer : public Measurer {
 public:
  explicit FarmMeasurer(FarmMeasurerOptions options);
  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override;
  std::string name() const override;  // "farm:host:port"
  const rpc::FarmClientCounters& counters() const { return client_.counters(); }

 private:
  FarmMeasurerOptions options_;
  rpc::FarmClient client_;
};

// address "host:port" (bad_input if malformed); the token comes from ATVOSS_TOKEN if set.
std::unique_ptr<Measurer> make_farm_measurer(const std::string& address);

}  // namespace atvoss::tuner
