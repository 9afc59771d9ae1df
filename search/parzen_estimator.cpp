// ParzenEstimator implementation: build() precomputes one kernel table per knob, so a
// density evaluation is a sum over observations of a product of table lookups.
#include "search/internal/parzen_estimator.hpp"

#include <algorithm>
#include <cmath>

namespace atvoss::search {
namespace {

// A kernel narrower than this (in index steps) would put almost no mass on neighbours.
constexpr double kMinSigma = 0.5;

}  // namespace

ParzenEstimator::ParzenEstimator(std::vector<int> sizes, double bandwidth, double prior_weight, int categorical_max)
    : sizes_(std::move(sizes)), bandwidth_(bandwidth), prior_weight_(prior_weight), categorical_max_(categorical_max) {
  for (int n : sizes_) log_prior_ -= std::log(static_cast<double>(std::max(n, 1)));
}

void ParzenEstimator::add(const Point& p, double weight) {
  points_.push_back(p);
  weights_.push_back(weight);
  total_weight_ += weight;
}

void ParzenEstimator::build() {
  const double dims = static_cast<double>(sizes_.size());
  const double n = static_cast<double>(std::max<std::size_t>(points_.size(), 1));
  const double shrink = std::pow(n, -1.0 / (dims + 4.0));
  kernel_.assign(sizes_.size(), {});
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    const int k = sizes_[d];
    const double sigma = std::max(kMinSigma, bandwidth_ * (k - 1) * shrink);
    auto& table = kernel_[d];
    table.assign(static_cast<std::size_t>(k) * k, 0.0);
    if (k <= categorical_max_ && k > 1) {
      // Mass off the observed value: as wide as the ordinal kernel would be, at most half.
      const double off = std::min(0.5, 2 * bandwidth_ * shrink) * (k - 1) / k;
      for (int c = 0; c < k; ++c) {
        for (int v = 0; v < k; ++v) table[c * k + v] = v == c ? 1 - off : off / (k - 1);
      }
      continue;
    }
    for (int c = 0; c < k; ++c) {
      double sum = 0;
      for (int v = 0; v < k; ++v) {
        const double z = (v - c) / sigma;
        sum += table[c * k + v] = std::exp(-0.5 * z * z);
      }
      for (int v = 0; v < k; ++v) table[c * k + v] /= sum;
    }
  }
}

double ParzenEstimator::log_density(const Point& p) const {
  double mix = prior_weight_ * std::exp(log_prior_);
  for (std::size_t i = 0; i < points_.size(); ++i) {
    double prod = weights_[i];
    for (std::size_t d = 0; d < sizes_.size() && prod > 0; ++d) {
      prod *= kernel_[d][points_[i][d] * sizes_[d] + p[d]];
    }
    mix += prod;
  }
  return std::log(mix / (total_weight_ + prior_weight_));
}

int ParzenEstimator::draw_index(const double* row, int k, std::mt19937_64& rng) const {
  double u = uniform01(rng);
  for (int v = 0; v + 1 < k; ++v) {
    if ((u -= row[v]) < 0) return v;
  }
  return k - 1;
}

std::size_t ParzenEstimator::draw_component(std::mt19937_64& rng) const {
  double u = uniform01(rng) * (total_weight_ + prior_weight_);
  std::size_t i = 0;
  for (; i < points_.size() && (u -= weights_[i]) >= 0; ++i) {
  }
  return i;
}

Point ParzenEstimator::sample(std::mt19937_64& rng) const {
  Point p(sizes_.size());
  const std::size_t i = draw_component(rng);
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    const int k = sizes_[d];
    if (i == points_.size()) {  // the prior component: uniform
      p[d] = static_cast<int>(rng() % static_cast<std::uint64_t>(k));
    } else {
      p[d] = draw_index(&kernel_[d][static_cast<std::size_t>(points_[i][d]) * k], k, rng);
    }
  }
  return p;
}

Point ParzenEstimator::sample_marginal(std::mt19937_64& rng) const {
  Point p(sizes_.size());
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    const int k = sizes_[d];
    const std::size_t i = draw_component(rng);
    if (i == points_.size()) {
      p[d] = static_cast<int>(rng() % static_cast<std::uint64_t>(k));
    } else {
      p[d] = draw_index(&kernel_[d][static_cast<std::size_t>(points_[i][d]) * k], k, rng);
    }
  }
  return p;
}

double ParzenEstimator::log_marginal_density(const Point& p) const {
  const double total = total_weight_ + prior_weight_;
  double sum = 0;
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    const int k = sizes_[d];
    double mix = prior_weight_ / k;
    for (std::size_t i = 0; i < points_.size(); ++i) mix += weights_[i] * kernel_[d][points_[i][d] * k + p[d]];
    sum += std::log(mix / total);
  }
  return sum;
}

}  // namespace atvoss::search
