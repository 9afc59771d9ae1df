// Metrics: how well a cost model's scores rank schedules, measured against the true
// throughput (higher is better on both sides, e.g. 1 / time). All metrics are computed
// within one workload; evaluate() averages them over groups, as the quality bench and
// the models table report them.
//   pairwise accuracy  share of pairs with different true throughput that the scores
//                      order the same way (score ties count half); 0.5 is chance
//   Spearman           rank correlation, average ranks for ties
//   top-k recall       |model's top k ∩ true top k| / k
//   peak@k             best true throughput among the model's top k / true best
// Pure functions; thread-safe. REQUIRES: predicted.size() == truth.size().
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/json.hpp"
#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel {

// 0.5 when no pair has different truth (nothing to rank). O(n log n).
double pairwise_accuracy(std::span<const double> predicted, std::span<const double> truth);
// 0 when either side is constant or n < 2.
double spearman(std::span<const double> predicted, std::span<const double> truth);
double top_k_recall(std::span<const double> predicted, std::span<const double> truth, std::size_t k);
// 0 if the true best is not positive. Ties in score are broken by index (first wins).
double peak_at_k(std::span<const double> predicted, std::span<const double> truth, std::size_t k);

struct ModelMetrics {
  double pairwise = 0, spearman = 0, recall_at_5 = 0, peak_at_1 = 0, peak_at_5 = 0;
  std::size_t groups = 0, samples = 0;
  Json to_json() const;
};

// Scores every group's samples with model and averages the metrics over groups.
// Truth: 1 / time for ok samples, 0 for candidate errors; infrastructure errors skipped.
// Groups with fewer than 2 samples are skipped. REQUIRES: model.trained().
ModelMetrics evaluate(const CostModel& model, std::span<const WorkloadGroup> groups);

}  // namespace atvoss::costmodel
