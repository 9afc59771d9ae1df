// TransferModel: scores candidates of one workload from the first tuning round by
// leaning on a prior — a model trained on the database's other workloads of the same
// target — and hands over to the workload's own model as its own data grows:
//   score = (1 - w) * z(prior) + w * z(own),   w = n_own / (n_own + n0)
// where z() standardises each model's scores within the batch (the two models' scales
// are unrelated; only their orderings are comparable) and n_own counts the workload's
// usable samples at the last train(). With no prior it is the own model alone; before
// the own model exists (fewer than min_own_samples) it is the prior alone; with neither
// it falls back to the analytic heuristic, so it is always usable (trained() is true).
// It is a CostModel, so the model-guided search and the tuner use it like any other.
// Not thread-safe: one tuner thread owns an instance; the prior is shared read-only.
#pragma once

#include <cstddef>
#include <memory>

#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel {

struct TransferOptions {
  // Own samples at which own model and prior weigh the same. Larger trusts the prior
  // longer (good when the workload resembles the database's), smaller adapts faster.
  double n0 = 64;
  // Below this many own samples the own model is not fitted at all.
  std::size_t min_own_samples = 16;
};

class TransferModel final : public CostModel {
 public:
  // prior: may be null (no other workloads on this target) and must be trained if not.
  // own: an untrained model (e.g. make_cost_model("xgboost")) to fit on this workload.
  TransferModel(Workload workload, std::shared_ptr<const CostModel> prior, std::unique_ptr<CostModel> own,
                TransferOptions options = {});

  std::string kind() const override { return own_->kind(); }
  bool trained() const override { return true; }
  // Fits the own model on groups (its own workload's group, plus any others the caller
  // adds); n_own counts only samples of this workload. Skips the fit below min_own_samples.
  void train(std::span<const WorkloadGroup> groups) override;
  std::vector<double> predict_features(const FeatureMatrix& rows) const override;
  // The own model's bytes (the prior is stored under its own database row).
  std::vector<std::uint8_t> save() const override { return own_->save(); }
  // Loads the own model; call set_own_samples() too, or it carries no weight yet.
  void load(std::span<const std::uint8_t> bytes) override;
  // For a resumed job: the own samples the loaded own model was trained on.
  void set_own_samples(std::size_t n) { n_own_ = n; }
  std::vector<FeatureScore> feature_importance() const override;
  // The prior's and the own model's scores are standardised within each call.
  bool scores_rows_alone() const override { return false; }

  // Current weight of the own model, 0..1.
  double own_weight() const;
  std::size_t own_samples() const { return n_own_; }

 private:
  Workload workload_;
  std::shared_ptr<const CostModel> prior_;
  std::unique_ptr<CostModel> own_;
  std::unique_ptr<CostModel> heuristic_;
  TransferOptions options_;
  std::size_t n_own_ = 0;
};

// Trains a prior on every group whose workload is not `exclude` (the workload about to
// be tuned). Returns null when those groups hold no usable sample.
std::shared_ptr<const CostModel> train_prior(const ModelOptions& options, std::span<const WorkloadGroup> groups,
                                             const Workload& exclude);

}  // namespace atvoss::costmodel
