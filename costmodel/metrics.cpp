#include "costmodel/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace atvoss::costmodel {
namespace {

void require_same_size(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) throw Error(ErrorKind::internal, "metrics: size mismatch");
}

// Indices sorted by score descending, ties by index: the model's ranking.
std::vector<std::size_t> ranking(std::span<const double> v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] > v[b]; });
  return idx;
}

// Dense rank of each truth value (0-based), for the Fenwick tree.
std::vector<std::size_t> dense_ranks(std::span<const double> v, std::size_t& distinct) {
  std::vector<double> sorted(v.begin(), v.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  distinct = sorted.size();
  std::vector<std::size_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    r[i] = std::size_t(std::lower_bound(sorted.begin(), sorted.end(), v[i]) - sorted.begin());
  }
  return r;
}

struct Fenwick {
  explicit Fenwick(std::size_t n) : tree(n + 1, 0) {}
  void add(std::size_t i) {
    for (++i; i < tree.size(); i += i & (~i + 1)) ++tree[i];
  }
  double prefix(std::size_t i) const {  // count of inserted ranks < i
    double s = 0;
    for (; i > 0; i -= i & (~i + 1)) s += tree[i];
    return s;
  }
  std::vector<double> tree;
};

double pairs(double n) { return n * (n - 1) / 2; }

// Pairs within ranks that share a truth value (they are not comparable).
double same_truth_pairs(std::vector<std::size_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  double total = 0;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j < ranks.size() && ranks[j] == ranks[i]) ++j;
    total += pairs(double(j - i));
    i = j;
  }
  return total;
}

std::vector<double> average_ranks(std::span<const double> v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j < idx.size() && v[idx[j]] == v[idx[i]]) ++j;
    for (std::size_t k = i; k < j; ++k) r[idx[k]] = (double(i) + double(j - 1)) / 2;
    i = j;
  }
  return r;
}

}  // namespace

double pairwise_accuracy(std::span<const double> predicted, std::span<const double> truth) {
  require_same_size(predicted, truth);
  const std::size_t n = truth.size();
  std::size_t distinct = 0;
  const std::vector<std::size_t> rank = dense_ranks(truth, distinct);
  std::vector<double> per_rank(distinct, 0);
  for (std::size_t r : rank) per_rank[r] += 1;
  double comparable = pairs(double(n));
  for (double c : per_rank) comparable -= pairs(c);
  if (comparable <= 0) return 0.5;
  // Walk scores ascending in blocks of equal score; earlier blocks scored lower.
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return predicted[a] < predicted[b]; });
  Fenwick seen(distinct);
  double concordant = 0, tied = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && predicted[idx[j]] == predicted[idx[i]]) ++j;
    std::vector<std::size_t> block;
    for (std::size_t k = i; k < j; ++k) {
      concordant += seen.prefix(rank[idx[k]]);
      block.push_back(rank[idx[k]]);
    }
    tied += pairs(double(j - i)) - same_truth_pairs(block);
    for (std::size_t k = i; k < j; ++k) seen.add(rank[idx[k]]);
    i = j;
  }
  return (concordant + 0.5 * tied) / comparable;
}

double spearman(std::span<const double> predicted, std::span<const double> truth) {
  require_same_size(predicted, truth);
  const std::size_t n = truth.size();
  if (n < 2) return 0;
  const std::vector<double> a = average_ranks(predicted), b = average_ranks(truth);
  const double mean = (double(n) - 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (a[i] - mean) * (b[i] - mean);
    saa += (a[i] - mean) * (a[i] - mean);
    sbb += (b[i] - mean) * (b[i] - mean);
  }
  if (saa <= 0 || sbb <= 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

double top_k_recall(std::span<const double> predicted, std::span<const double> truth, std::size_t k) {
  require_same_size(predicted, truth);
  k = std::min(k, truth.size());
  if (k == 0) return 0;
  const auto by_model = ranking(predicted), by_truth = ranking(truth);
  std::vector<bool> in_true_top(truth.size(), false);
  for (std::size_t i = 0; i < k; ++i) in_true_top[by_truth[i]] = true;
  std::size_t hit = 0;
  for (std::size_t i = 0; i < k; ++i) hit += in_true_top[by_model[i]] ? 1 : 0;
  return double(hit) / double(k);
}

double peak_at_k(std::span<const double> predicted, std::span<const double> truth, std::size_t k) {
  require_same_size(predicted, truth);
  if (truth.empty()) return 0;
  const double best = *std::max_element(truth.begin(), truth.end());
  if (!(best > 0)) return 0;
  const auto by_model = ranking(predicted);
  double found = 0;
  for (std::size_t i = 0; i < std::min(k, truth.size()); ++i) found = std::max(found, truth[by_model[i]]);
  return found / best;
}

Json ModelMetrics::to_json() const {
  return Json{{"pairwise", pairwise},   {"spearman", spearman}, {"recall_at_5", recall_at_5}, {"peak_at_1", peak_at_1},
              {"peak_at_5", peak_at_5}, {"groups", groups},     {"samples", samples}};
}

ModelMetrics evaluate(const CostModel& model, std::span<const WorkloadGroup> groups) {
  ModelMetrics m;
  for (const WorkloadGroup& g : groups) {
    std::vector<Schedule> schedules;
    std::vector<double> truth;
    for (const Trial& s : g.samples) {
      const bool ok = s.status == Status::ok && s.time_us > 0;
      if (!ok && !is_candidate_error(s.status)) continue;
      schedules.push_back(s.schedule);
      truth.push_back(ok ? 1.0 / s.time_us : 0.0);
    }
    if (schedules.size() < 2) continue;
    const std::vector<double> scores = model.predict(g.workload, g.target, schedules);
    m.pairwise += pairwise_accuracy(scores, truth);
    m.spearman += spearman(scores, truth);
    m.recall_at_5 += top_k_recall(scores, truth, 5);
    m.peak_at_1 += peak_at_k(scores, truth, 1);
    m.peak_at_5 += peak_at_k(scores, truth, 5);
    ++m.groups;
    m.samples += schedules.size();
  }
  if (m.groups > 0) {
    const double n = double(m.groups);
    m.pairwise /= n, m.spearman /= n, m.recall_at_5 /= n, m.peak_at_1 /= n, m.peak_at_5 /= n;
  }
  return m;
}

}  // namespace atvoss::costmodel
