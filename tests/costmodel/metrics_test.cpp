#include "costmodel/metrics.hpp"

#include <gtest/gtest.h>

#include <random>

namespace atvoss::costmodel {
namespace {

using V = std::vector<double>;

// Reference O(n^2) pairwise accuracy for the randomized check.
double naive_pairwise(const V& p, const V& t) {
  double good = 0, total = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (std::size_t j = i + 1; j < t.size(); ++j) {
      if (t[i] == t[j]) continue;
      total += 1;
      if (p[i] == p[j])
        good += 0.5;
      else if ((p[i] < p[j]) == (t[i] < t[j]))
        good += 1;
    }
  }
  return total == 0 ? 0.5 : good / total;
}

TEST(MetricsTest, PairwiseOnHandMadeCases) {
  const struct {
    const char* name;
    V predicted, truth;
    double expected;
  } kCases[] = {
      {"perfect", {1, 2, 3, 4}, {10, 20, 30, 40}, 1.0},  {"reversed", {4, 3, 2, 1}, {10, 20, 30, 40}, 0.0},
      {"one_swap", {1, 3, 2}, {1, 2, 3}, 2.0 / 3.0},     {"all_scores_tied", {5, 5, 5}, {1, 2, 3}, 0.5},
      {"truth_ties_ignored", {1, 2, 3}, {7, 7, 9}, 1.0}, {"no_comparable_pair", {1, 2}, {3, 3}, 0.5},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(pairwise_accuracy(c.predicted, c.truth), c.expected, 1e-12);
  }
}

TEST(MetricsTest, PairwiseMatchesNaiveCountWithTies) {
  const std::uint64_t seed = 11;
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    V p(60), t(60);
    for (auto& x : p) x = double(rng() % 8);
    for (auto& x : t) x = double(rng() % 6);
    EXPECT_NEAR(pairwise_accuracy(p, t), naive_pairwise(p, t), 1e-12);
  }
}

TEST(MetricsTest, SpearmanTopKAndPeak) {
  const V truth = {1, 2, 3, 4, 5, 6};
  EXPECT_NEAR(spearman(truth, truth), 1.0, 1e-12);
  EXPECT_NEAR(spearman(V{6, 5, 4, 3, 2, 1}, truth), -1.0, 1e-12);
  EXPECT_EQ(spearman(V{1, 1, 1, 1, 1, 1}, truth), 0.0);
  // The model likes index 0 (truth 1) best, then index 5 (truth 6, the true best).
  const V predicted = {9, 1, 2, 3, 4, 8};
  EXPECT_NEAR(peak_at_k(predicted, truth, 1), 1.0 / 6.0, 1e-12);
  EXPECT_NEAR(peak_at_k(predicted, truth, 2), 1.0, 1e-12);
  EXPECT_NEAR(top_k_recall(predicted, truth, 2), 0.5, 1e-12);  // {0,5} vs {5,4}
  EXPECT_NEAR(top_k_recall(predicted, truth, 100), 1.0, 1e-12);
  EXPECT_EQ(peak_at_k(predicted, V{0, 0, 0, 0, 0, 0}, 1), 0.0);
}

}  // namespace
}  // namespace atvoss::costmodel
