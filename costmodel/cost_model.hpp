// CostModel ranks candidate schedules so the tuner measures promising ones first.
// Implementations: XGBoostModel (XGBoost C API) and LinearModel (ridge baseline),
// created through make_cost_model(). Training data arrives grouped by workload,
// because scores are only comparable within one workload on one target.
// Not thread-safe: one tuner thread owns an instance.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::costmodel {

// One measured schedule. time_us is meaningful only when status is ok.
struct Sample {
  Schedule schedule;
  Status status = Status::ok;
  double time_us = 0;
};

// Every sample of one workload on one target.
struct WorkloadGroup {
  Workload workload;
  Target target;
  std::vector<Sample> samples;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // "xgboost" or "linear" (the kind stored in the database's models table).
  virtual std::string kind() const = 0;
  // Refits from scratch; if it throws, the previous fit stays in place.
  virtual void train(std::span<const WorkloadGroup> groups) = 0;
  // One score per schedule, higher is better (predicted relative throughput).
  // REQUIRES: trained() — train() or load() succeeded.
  virtual std::vector<double> predict(const Workload& workload, const Target& target,
                                      std::span<const Schedule> schedules) const = 0;
  virtual bool trained() const = 0;
  // Serialised fit, including the feature version it was trained with.
  virtual std::vector<std::uint8_t> save() const = 0;
  // corrupt error if bytes are not a model of this kind or of another feature version.
  virtual void load(std::span<const std::uint8_t> bytes) = 0;
};

// kind: "xgboost" (rank:pairwise grouped by workload) or "linear". bad_input otherwise.
std::unique_ptr<CostModel> make_cost_model(const std::string& kind, std::uint64_t seed = 0);

}  // namespace atvoss::costmodel
