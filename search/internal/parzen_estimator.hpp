// ParzenEstimator: a multivariate kernel density over the points of a ScheduleSpace, in
// knob-value-index coordinates, as TPE's l(x) and g(x) (Bergstra et al. 2011; Optuna's
// multivariate TPE). Each observation contributes a product over knobs of a discrete,
// truncated Gaussian kernel centred on its value index; a uniform prior component keeps
// every point's density above zero. Knob values are sorted (recorded spaces sort integer
// domains; NPU knobs are ascending), so index distance is log distance for power-of-two
// lists: the kernel spreads over neighbouring tile sizes, not over raw numbers.
// Bandwidth per knob: bandwidth * (values - 1) * N^(-1/(D+4)) (Scott's rule on the index
// range), at least kMinSigma so a kernel always reaches its neighbours.
// Private to search/. Immutable after build(); not thread-safe while adding.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/schedule_space.hpp"

namespace atvoss::search {

class ParzenEstimator {
 public:
  // sizes[d]: number of values of knob d.
  ParzenEstimator(std::vector<int> sizes, double bandwidth, double prior_weight);

  void add(const Point& p, double weight);
  // Fixes the bandwidths from the observations added so far. REQUIRES before density/sample.
  void build();
  double log_density(const Point& p) const;
  // A point drawn from the mixture (the prior component draws uniformly).
  Point sample(std::mt19937_64& rng) const;
  std::size_t size() const { return points_.size(); }

 private:
  double uniform01(std::mt19937_64& rng) const { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  int draw_index(const double* row, int k, std::mt19937_64& rng) const;

  std::vector<int> sizes_;
  double bandwidth_;
  double prior_weight_;
  std::vector<Point> points_;
  std::vector<double> weights_;
  double total_weight_ = 0;
  // kernel_[d][c * sizes_[d] + v]: probability of value v under the kernel centred on c.
  std::vector<std::vector<double>> kernel_;
  double log_prior_ = 0;  // log of the uniform density, sum over knobs of -log(sizes)
};

}  // namespace atvoss::search
