// TpeProposer implementation. Read first: propose(), then claim_best() and candidates().
#include "search/internal/tpe_proposer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace atvoss::search {
namespace {

// A prior larger than this is thinned (every k-th point) for g: the good part is what
// steers the search, and g's cost grows with its size.
constexpr std::size_t kPriorBadMax = 256;
// Random valid points the heuristic ranks per startup batch.
constexpr std::size_t kHeuristicPool = 4096;

}  // namespace

TpeProposer::TpeProposer(StrategyBase& host, const TpeConfig& config) : host_(host), config_(config) {
  for (const auto& k : host_.space().knobs()) sizes_.push_back(static_cast<int>(k.values.size()));
  prior_ = split_prior(host_.context().prior_trials);
  if (config_.heuristic_before_fit && costmodel::has_plan_features(host_.context().workload)) {
    heuristic_ = costmodel::make_cost_model("heuristic", host_.context().seed);
  }
}

TpeProposer::~TpeProposer() = default;

void TpeProposer::propose(std::size_t target) {
  const Split own = split_own();
  const bool ready =
      (host_.successes() >= static_cast<std::size_t>(config_.tpe_startup) && !own.good.empty()) || !prior_.good.empty();
  if (!ready) {
    if (heuristic_) heuristic_points(target);
    host_.fill_random(target);
    return;
  }
  std::vector<Point> liars(host_.batch().begin(), host_.batch().end());  // other arms' claims
  while (host_.claimed() < target) {
    const std::size_t before = host_.claimed();
    if (host_.uniform01() >= config_.epsilon) claim_best(own, liars);
    if (host_.claimed() == before) host_.fill_random(before + 1);
    if (host_.claimed() == before) return;  // nothing new and valid is left
    liars.push_back(host_.batch().back());
  }
}

std::size_t TpeProposer::good_count(std::size_t ok) const {
  const TpeConfig& o = config_;
  const auto by_gamma = static_cast<std::size_t>(std::ceil(o.tpe_gamma * static_cast<double>(ok)));
  return std::clamp<std::size_t>(by_gamma, 1, static_cast<std::size_t>(o.tpe_good_max));
}

// Own trials: best good_count() successes are good; other successes and failures are bad.
TpeProposer::Split TpeProposer::split_own() const {
  const auto best = host_.best_records(host_.records().size());
  Split s;
  const std::size_t ng = best.empty() ? 0 : good_count(best.size());
  for (std::size_t i = 0; i < best.size(); ++i) (i < ng ? s.good : s.bad).push_back(best[i]->point);
  for (const auto& r : host_.records()) {
    if (!r.ok()) s.bad.push_back(r.point);
  }
  return s;
}

TpeProposer::Split TpeProposer::split_prior(const std::vector<Trial>& trials) const {
  std::vector<std::pair<double, Point>> ok;
  Split s;
  for (const auto& t : trials) {
    auto p = host_.space().point_of(t.schedule);
    if (!p) continue;
    if (t.status == Status::ok)
      ok.emplace_back(t.time_us, std::move(*p));
    else if (!is_infrastructure_error(t.status))
      s.bad.push_back(std::move(*p));
  }
  std::stable_sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t ng = ok.empty() ? 0 : good_count(ok.size());
  for (std::size_t i = 0; i < ok.size(); ++i) (i < ng ? s.good : s.bad).push_back(ok[i].second);
  if (s.bad.size() > kPriorBadMax) {
    std::vector<Point> thin;
    const std::size_t step = (s.bad.size() + kPriorBadMax - 1) / kPriorBadMax;
    for (std::size_t i = 0; i < s.bad.size(); i += step) thin.push_back(s.bad[i]);
    s.bad = std::move(thin);
  }
  return s;
}

ParzenEstimator TpeProposer::density(const std::vector<Point>& own, const std::vector<Point>& prior,
                                     const std::vector<Point>& extra) const {
  const TpeConfig& o = config_;
  ParzenEstimator e(sizes_, o.tpe_bandwidth, o.tpe_prior_weight, o.tpe_categorical_max);
  for (const auto& p : own) e.add(p, 1.0);
  for (const auto& p : extra) e.add(p, 1.0);
  if (o.prior_weight > 0) {
    for (const auto& p : prior) e.add(p, o.prior_weight);
  }
  e.build();
  return e;
}

// Candidates: draws from l (a few repair mutations if invalid) and, multivariate, one-knob
// neighbours of the best trials; only new valid points.
std::vector<Point> TpeProposer::candidates(const ParzenEstimator& l, const Split& own, bool univariate) {
  const TpeConfig& o = config_;
  auto& rng = host_.rng();
  const bool restart = stalled();
  const auto total = static_cast<std::size_t>(o.tpe_candidates);
  const auto local =
      restart || univariate ? 0 : static_cast<std::size_t>(std::lround(o.tpe_local_share * static_cast<double>(total)));
  std::vector<Point> out;
  PointSet in;
  const auto add = [&](Point p) {
    for (int repair = 0; repair < 3 && !host_.is_new_valid(p); ++repair) host_.mutate_knob(p, rng() % p.size());
    if (host_.is_new_valid(p) && in.insert(p).second) out.push_back(std::move(p));
  };
  // Around the incumbents (the good list is best first); the prior's best before any own.
  const auto& centres = own.good.empty() ? prior_.good : own.good;
  const std::size_t tops = std::min<std::size_t>(centres.size(), static_cast<std::size_t>(o.tpe_local_top));
  for (std::size_t tries = 0; out.size() < local && tries < 8 * total && tops > 0; ++tries) {
    Point p = centres[rng() % tops];
    const std::size_t knob = rng() % p.size();
    if (host_.uniform01() < o.tpe_local_wide)
      jump_knob(p, knob);
    else
      host_.mutate_knob(p, knob);
    if (p.size() > 1 && host_.uniform01() < o.tpe_local_pair) {
      host_.mutate_knob(p, (knob + 1 + rng() % (p.size() - 1)) % p.size());
    }
    add(std::move(p));
  }
  for (std::size_t tries = 0; out.size() < total && tries < 8 * total; ++tries) {
    add(restart ? host_.space().random_point(rng) : univariate ? l.sample_marginal(rng) : l.sample(rng));
  }
  return out;
}

// Moves one knob of p to a uniformly drawn other value of its list.
void TpeProposer::jump_knob(Point& p, std::size_t knob) {
  const int n = sizes_[knob];
  if (n <= 1) return;
  const int v = static_cast<int>(host_.rng()() % static_cast<std::uint64_t>(n - 1));
  p[knob] = v >= p[knob] ? v + 1 : v;
}

// True if the last tpe_stall evaluations brought no new best.
bool TpeProposer::stalled() const {
  const auto& recs = host_.records();
  if (config_.tpe_stall == 0) return false;
  double best = HUGE_VAL;
  std::size_t last_gain = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].ok() && recs[i].time_us < best) best = recs[i].time_us, last_gain = i;
  }
  return recs.size() - last_gain > static_cast<std::size_t>(config_.tpe_stall);
}

bool TpeProposer::claim_best(const Split& own, const std::vector<Point>& liars) {
  const ParzenEstimator l = density(own.good, prior_.good, {});
  const ParzenEstimator g = density(own.bad, prior_.bad, liars);
  const double share = config_.tpe_univariate_share;
  const bool univariate = share > 0 && host_.uniform01() < share;
  const auto cands = candidates(l, own, univariate);
  if (cands.empty()) return false;
  std::size_t best = 0;
  double best_score = -HUGE_VAL;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const double score = univariate ? l.log_marginal_density(cands[i]) - g.log_marginal_density(cands[i])
                                    : l.log_density(cands[i]) - g.log_density(cands[i]);
    if (score > best_score) best_score = score, best = i;
  }
  return host_.claim(cands[best]);
}

// Claims the best of a pool of random new valid points under the heuristic model.
void TpeProposer::heuristic_points(std::size_t target) {
  std::vector<Point> pool;
  PointSet in;
  for (std::size_t tries = 0; pool.size() < kHeuristicPool && tries < 8 * kHeuristicPool; ++tries) {
    Point p = host_.space().random_point(host_.rng());
    if (host_.is_new_valid(p) && in.insert(p).second) pool.push_back(std::move(p));
  }
  std::vector<Schedule> schedules;
  for (const auto& p : pool) schedules.push_back(host_.space().schedule_at(p));
  const auto scores = heuristic_->predict(host_.context().workload, host_.context().target, schedules);
  if (scores.size() != pool.size()) return;  // a model that cannot rank: random startup
  std::vector<std::size_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  for (std::size_t i = 0; i < order.size() && host_.claimed() < target; ++i) host_.claim(pool[order[i]]);
}

}  // namespace atvoss::search
