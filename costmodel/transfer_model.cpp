#include "costmodel/transfer_model.hpp"

#include <cmath>

#include "core/error.hpp"
#include "costmodel/internal/training_set.hpp"

namespace atvoss::costmodel {
namespace {

// Scores centred and scaled to unit variance within the batch (all 0 if constant).
std::vector<double> standardised(std::vector<double> v) {
  if (v.empty()) return v;
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  for (double x : v) var += (x - mean) * (x - mean);
  const double sd = std::sqrt(var / double(v.size()));
  for (double& x : v) x = sd > 0 ? (x - mean) / sd : 0.0;
  return v;
}

}  // namespace

TransferModel::TransferModel(Workload workload, std::shared_ptr<const CostModel> prior, std::unique_ptr<CostModel> own,
                             TransferOptions options)
    : workload_(std::move(workload)),
      prior_(std::move(prior)),
      own_(std::move(own)),
      heuristic_(make_cost_model("heuristic")),
      options_(options) {
  if (!own_) throw Error(ErrorKind::internal, "TransferModel needs an own model");
  if (prior_ && !prior_->trained()) throw Error(ErrorKind::internal, "TransferModel: untrained prior");
  if (!(options_.n0 >= 0)) throw_bad_input("transfer model: 'n0' must be >= 0");
}

void TransferModel::train(std::span<const WorkloadGroup> groups) {
  std::size_t own = 0;
  for (const WorkloadGroup& g : groups) {
    if (g.workload == workload_) own += count_ok_samples(std::span(&g, 1));
  }
  if (own >= options_.min_own_samples) own_->train(groups);
  n_own_ = own;  // after a successful fit (or a skipped one): train() throws nothing else
}

double TransferModel::own_weight() const {
  if (!own_->trained()) return 0.0;
  if (!prior_) return 1.0;
  const double n = double(n_own_);
  return n + options_.n0 > 0 ? n / (n + options_.n0) : 1.0;
}

std::vector<double> TransferModel::predict_features(const FeatureMatrix& rows) const {
  const double w = own_weight();
  if (!prior_ && w == 0.0) return heuristic_->predict_features(rows);
  if (w == 1.0) return own_->predict_features(rows);
  std::vector<double> out = standardised(prior_->predict_features(rows));
  if (w == 0.0) return out;
  const std::vector<double> own = standardised(own_->predict_features(rows));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = (1 - w) * out[i] + w * own[i];
  return out;
}

void TransferModel::load(std::span<const std::uint8_t> bytes) { own_->load(bytes); }

std::vector<FeatureScore> TransferModel::feature_importance() const {
  if (own_->trained()) return own_->feature_importance();
  return prior_ ? prior_->feature_importance() : std::vector<FeatureScore>{};
}

std::shared_ptr<const CostModel> train_prior(const ModelOptions& options, std::span<const WorkloadGroup> groups,
                                             const Workload& exclude) {
  std::vector<WorkloadGroup> others;
  for (const WorkloadGroup& g : groups) {
    if (!(g.workload == exclude)) others.push_back(g);
  }
  if (count_ok_samples(others) == 0) return nullptr;
  std::shared_ptr<CostModel> prior = make_cost_model(options);
  prior->train(others);
  return prior;
}

}  // namespace atvoss::costmodel
