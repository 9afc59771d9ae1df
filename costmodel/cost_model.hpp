// CostModel ranks candidate schedules so the tuner measures promising ones first.
// Implementations: XGBoostModel (XGBoost C API), LinearModel (ridge baseline) and
// HeuristicModel (analytic estimate, no training), created by name through
// make_cost_model() from the cost-model registry (model_registry.hpp);
// TransferModel (transfer_model.hpp) blends a prior model with a per-workload one.
// Training data arrives grouped by workload, because scores are only comparable
// within one workload on one target.
//
// Labels (training_set.hpp): label = best ok time in the group / record time (TVM),
// so 1 is the group's best and labels are comparable across groups; candidate errors
// (invalid, timeout, ...) get label 0 and infrastructure errors are dropped. See
// training_set.hpp for why.
// Not thread-safe: one tuner thread owns an instance (const predict() may be called
// from several threads only if nothing trains or loads meanwhile).
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
#include "costmodel/features.hpp"

namespace atvoss::costmodel {

// One measured schedule (a trial, the one name for it in every module: docs/architecture.md,
// vocabulary). time_us is meaningful only when status is ok. A training sample of the model.
struct Trial {
  Schedule schedule;
  Status status = Status::ok;
  double time_us = 0;
};

// Every sample of one workload on one target.
struct WorkloadGroup {
  Workload workload;
  Target target;
  std::vector<Trial> samples;
  // Weight of each of its samples in training relative to a sample of weight 1 (e.g. the
  // same kernel on another target counts less than the target's own trials). > 0.
  double weight = 1.0;
};

// How much one feature mattered to a trained model (XGBoost: total gain; linear:
// |weight| on the standardised feature). Higher means more important.
struct FeatureScore {
  std::string feature;
  double score = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // "xgboost", "linear" or "heuristic" (the kind stored in the database's models table).
  virtual std::string kind() const = 0;
  // Refits from scratch; if it throws, the previous fit stays in place.
  // bad_input if no group holds a usable (ok) sample.
  virtual void train(std::span<const WorkloadGroup> groups) = 0;
  // One score per schedule, higher is better (predicted relative throughput for the
  // regression objectives, an unscaled ranking margin for rank:pairwise).
  // REQUIRES: trained() — train() or load() succeeded; internal error otherwise.
  virtual std::vector<double> predict(const Workload& workload, const Target& target,
                                      std::span<const Schedule> schedules) const;
  // Same, on rows already featurised (features.hpp); lets a caller featurise once and
  // score many times. bad_input if rows.cols != feature_count().
  virtual std::vector<double> predict_features(const FeatureMatrix& rows) const = 0;
  virtual bool trained() const = 0;
  // Serialised fit, including the feature version it was trained with.
  virtual std::vector<std::uint8_t> save() const = 0;
  // corrupt error if bytes are not a model of this kind or of another feature version;
  // the previous fit stays in place then.
  virtual void load(std::span<const std::uint8_t> bytes) = 0;
  // Per-feature importance, most important first; empty if untrained.
  virtual std::vector<FeatureScore> feature_importance() const { return {}; }
  // True when a schedule's score depends on that schedule alone, not on the others scored
  // with it: a caller may then keep scores across calls until the next train() or load().
  virtual bool scores_rows_alone() const { return true; }
};

// Every knob of make_cost_model; defaults are what the tuner uses.
struct ModelOptions {
  // A registered cost model's name (model_registry.hpp): "xgboost", "xgboost-reg",
  // "linear", "heuristic" or one added with register_cost_model().
  std::string kind = "xgboost";
  // XGBoost objective: "rank:pairwise" (default, groups = workloads, as TVM) or
  // "reg:squarederror" (regression on the normalised throughput label).
  std::string objective = "rank:pairwise";
  // Boosting rounds and depth: more of either fits better but trains and predicts
  // slower (the speed budget is 2 s training on 10k records, 20 ms predicting 10k).
  // Depth 5 generalises to unseen workloads better than 7 (bench_costmodel_quality,
  // leave-one-workload-out) and predicts faster.
  int rounds = 120;
  int max_depth = 5;
  double eta = 0.2;
  // XGBoost threads. 1 by default: its OpenMP barriers spin, so whenever the measurer's
  // threads or other processes hold the cores, 2 threads made a 10k-record fit up to 30x
  // slower (15 s instead of 0.47 s, bench_costmodel on the shared 2-core machine), while
  // 1 thread meets the budgets (fit 0.5 s, featurise + predict 10k in ~16 ms).
  int nthread = 1;
  // Ridge penalty per training row on standardised features (linear only).
  double ridge_lambda = 1e-3;
  std::uint64_t seed = 0;
};

// The registered model named options.kind (model_registry.hpp). bad_input naming the
// field if kind or objective is unknown or a number is out of range.
std::unique_ptr<CostModel> make_cost_model(const ModelOptions& options);
// kind: a registered name, e.g. "xgboost" (rank:pairwise grouped by workload),
// "xgboost-reg" (XGBoost with reg:squarederror on the normalised throughput; its
// kind() is still "xgboost"), "linear" or "heuristic".
std::unique_ptr<CostModel> make_cost_model(const std::string& kind, std::uint64_t seed = 0);

}  // namespace atvoss::costmodel
