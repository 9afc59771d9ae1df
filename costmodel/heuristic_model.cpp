// HeuristicModel: ranks schedules by the analytic time estimate of features.hpp
// (roofline over cube/vector, MTE2, MTE1 and HBM, with waves, tail and launches) —
// the score used before enough measurements exist to train anything. Needs no data:
// trained() is always true and train() is a no-op. On recorded spaces, which have
// no analytic features, every schedule scores the same (the search then explores).
#include <algorithm>

#include "core/error.hpp"
#include "costmodel/internal/model_envelope.hpp"
#include "costmodel/internal/model_kinds.hpp"

namespace atvoss::costmodel {
namespace {

class HeuristicModel final : public CostModel {
 public:
  std::string kind() const override { return "heuristic"; }
  bool trained() const override { return true; }
  void train(std::span<const WorkloadGroup>) override {}

  std::vector<double> predict_features(const FeatureMatrix& rows) const override {
    if (rows.cols != feature_count()) throw_bad_input("heuristic predict: wrong feature count");
    static const std::size_t est = feature_index("est_time_us");
    static const std::size_t occ = feature_index("max_occupancy");
    std::vector<double> out(rows.rows);
    for (std::size_t i = 0; i < rows.rows; ++i) {
      const auto row = rows.row(i);
      // est_time_us is log2(1 + us): lower is better. A schedule that cannot fit on chip
      // is pushed below every one that can.
      out[i] = -double(row[est]) - (row[occ] > 1.0f ? 1000.0 : 0.0);
    }
    return out;
  }

  std::vector<std::uint8_t> save() const override { return wrap_model(kind(), Json::object(), {}); }
  void load(std::span<const std::uint8_t> bytes) override { unwrap_model(bytes, kind()); }
};

}  // namespace

std::unique_ptr<CostModel> make_heuristic_model() { return std::make_unique<HeuristicModel>(); }

}  // namespace atvoss::costmodel
