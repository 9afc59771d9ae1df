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
  // sizes[d]: number of values of knob d. Knobs with at most categorical_max values get a
  // categorical kernel (Aitchison-Aitken: most mass on the same value, the rest spread
  // evenly), because short lists like tile sizes {1,2,3,4} are rarely smooth: one value in
  // the middle can be 100x slower than both its neighbours (convolution_milo's tile_y=3).
  ParzenEstimator(std::vector<int> sizes, double bandwidth, double prior_weight, int categorical_max = 0);

  void add(const Point& p, double weight);
  // Fixes the bandwidths from the observations added so far. REQUIRES before density/sample.
  void build();
  double log_density(const Point& p) const;
  // A point drawn from the mixture (the prior component draws uniformly).
  Point sample(std::mt19937_64& rng) const;
  // Univariate view (Optuna's default TPE): knobs treated as independent, each with the
  // mixture's marginal. The density is the product of marginals; a draw picks the
  // observation separately for every knob, so it recombines values of different good
  // points: it reaches regions no single observation's neighbourhood covers.
  double log_marginal_density(const Point& p) const;
  Point sample_marginal(std::mt19937_64& rng) const;
  std::size_t size() const { return points_.size(); }

 private:
  double uniform01(std::mt19937_64& rng) const { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  int draw_index(const double* row, int k, std::mt19937_64& rng) const;
  // Index of an observation drawn by weight, or size() for the prior component.
  std::size_t draw_component(std::mt19937_64& rng) const;

  std::vector<int> sizes_;
  double bandwidth_;
  double prior_weight_;
  int categorical_max_;
  std::vector<Point> points_;
  std::vector<double> weights_;
  double total_weight_ = 0;
  // kernel_[d][c * sizes_[d] + v]: probability of value v under the kernel centred on c.
  std::vector<std::vector<double>> kernel_;
  double log_prior_ = 0;  // log of the uniform density, sum over knobs of -log(sizes)
};

}  // namespace atvoss::search
