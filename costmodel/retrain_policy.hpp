// RetrainPolicy: when the tuner should refit its cost model. Refitting after every batch
// wastes time on nearly identical fits; never refitting ignores what was learned. The
// rule: refit once the data grew by at least `growth` (20%) since the last
// fit. Below `min_samples` usable measurements a fit is mostly noise, so the tuner
// scores candidates with the analytic heuristic (or a transfer prior) instead.
// Not thread-safe: owned by one tuner loop.
#pragma once

#include <cstddef>

namespace atvoss::costmodel {

struct RetrainOptions {
  double growth = 0.2;           // refit when new samples >= growth * last training set
  std::size_t min_samples = 32;  // fewer usable samples than this: no fit, use the heuristic
};

class RetrainPolicy {
 public:
  explicit RetrainPolicy(RetrainOptions options = {}) : options_(options) {}

  // True when a fit on total_samples usable samples is due now.
  bool should_retrain(std::size_t total_samples) const;
  // Records that a fit on total_samples just succeeded.
  void mark_trained(std::size_t total_samples) { last_trained_ = total_samples, trained_ = true; }
  // True while no fit exists and there are too few samples for one.
  bool use_heuristic(std::size_t total_samples) const { return !trained_ && total_samples < options_.min_samples; }
  std::size_t last_trained() const { return last_trained_; }
  bool trained() const { return trained_; }

 private:
  RetrainOptions options_;
  std::size_t last_trained_ = 0;
  bool trained_ = false;
};

}  // namespace atvoss::costmodel
