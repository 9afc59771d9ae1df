// StrategyBase implementation. Read first: propose() and update() (the call-order state
// machine), then fill_random() and breed_from_measured() (how points are chosen), then
// save_state()/load_state() (the resume format: see search/README.md).
#include "search/internal/strategy_base.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace atvoss::search {
namespace {

// Above this many points the random fallback does not enumerate the space.
constexpr std::uint64_t kEnumerateLimit = 1u << 22;
constexpr int kStateVersion = 1;
// The validity cache is dropped when it grows past this many points: checks are pure, so
// forgetting costs only time, and a long job would otherwise keep every point it visited.
constexpr std::size_t kValidCacheLimit = 1u << 20;
// Spaces up to this many points keep one byte per point instead (4 MiB at most).
constexpr std::uint64_t kDenseValidLimit = 1u << 22;
enum : std::int8_t { kUnchecked = 0, kInvalid = 1, kValid = 2 };

// For each value index of `values`: the indices of half and of twice the value, -1 where the
// list does not hold it (or the value is not positive).
std::vector<std::array<int, 2>> doublings_of(const std::vector<std::int64_t>& values) {
  const auto index_of = [&](std::int64_t v) {
    const auto it = std::find(values.begin(), values.end(), v);
    return it == values.end() ? -1 : static_cast<int>(it - values.begin());
  };
  std::vector<std::array<int, 2>> out;
  for (auto v : values) {
    const bool even = v > 0 && v % 2 == 0;
    out.push_back({even ? index_of(v / 2) : -1, v > 0 ? index_of(2 * v) : -1});
  }
  return out;
}

Json trial_json(const Schedule& s, Status st, double time_us) {
  return {{"schedule", s.to_json()}, {"status", std::string(to_string(st))}, {"time_us", time_us}};
}

}  // namespace

StrategyBase::StrategyBase(std::string name, const ScheduleSpace& space, const TuneContext& context,
                           const EvolutionConfig& evolution)
    : name_(std::move(name)), space_(space), context_(context), evolution_(evolution), rng_(context.seed) {
  if (space_.dimensions() == 0) throw_bad_input(name_ + " search: the space has no knobs");
  // Other tables are read once, by the strategy's constructor (model-guided carries a sample of
  // them over): the context kept for the strategy's life does not hold them.
  context_.prior_spaces = {};
  // Only a strategy that may take a doubling step needs the table.
  if (evolution_.mutation_doubling > 0) {
    for (const auto& k : space_.knobs()) doublings_.push_back(doublings_of(k.values));
  }
}

void StrategyBase::require_idle(const char* call) const {
  if (has_pending_) {
    throw Error(ErrorKind::internal, std::string("SearchStrategy::") + call +
                                         ": a proposed batch is pending; call update() with its "
                                         "results first");
  }
}

std::optional<Point> StrategyBase::point_in_space(const Schedule& s) const { return space_.point_of(s); }

void StrategyBase::add_record(PointTrial r) {
  seen_.insert(r.point);
  records_.push_back(std::move(r));
}

void StrategyBase::observe(std::span<const Trial> history) {
  require_idle("observe()");
  const std::size_t first = records_.size();
  for (const auto& t : history) {
    if (is_infrastructure_error(t.status)) continue;
    auto p = point_in_space(t.schedule);
    if (!p || seen_.count(*p)) continue;  // another space's schedule, or already known
    add_record({std::move(*p), t.status, t.status == Status::ok ? t.time_us : 0});
  }
  if (records_.size() > first) on_records(first);
}

std::vector<Schedule> StrategyBase::propose(std::size_t n) {
  require_idle("propose()");
  batch_.clear();
  batch_set_.clear();
  if (n > 0) next_points(n);
  if (batch_.size() > n) batch_.resize(n);
  pending_ = batch_;
  has_pending_ = true;
  ++round_;
  std::vector<Schedule> out;
  out.reserve(batch_.size());
  for (const auto& p : batch_) out.push_back(space_.schedule_at(p));
  batch_.clear();
  batch_set_.clear();
  return out;
}

void StrategyBase::update(std::span<const Trial> results) {
  if (!has_pending_) {
    throw Error(ErrorKind::internal, "SearchStrategy::update(): no batch is pending; call propose() first");
  }
  PointSet pending(pending_.begin(), pending_.end());
  std::vector<PointTrial> fresh;
  for (const auto& t : results) {
    auto p = point_in_space(t.schedule);
    if (!p || !pending.count(*p)) {
      throw_bad_input("SearchStrategy::update(): schedule " + t.schedule.to_json().dump() +
                      " was not in the pending batch; use observe() for other measurements");
    }
    pending.erase(*p);
    if (is_infrastructure_error(t.status)) continue;  // not a result: may be proposed again
    fresh.push_back({std::move(*p), t.status, t.status == Status::ok ? t.time_us : 0});
  }
  has_pending_ = false;
  pending_.clear();
  const std::size_t first = records_.size();
  for (auto& r : fresh) add_record(std::move(r));
  if (records_.size() > first) on_records(first);
}

bool StrategyBase::valid(const Point& p) {
  if (space_.size() <= kDenseValidLimit) {
    if (dense_valid_.empty()) dense_valid_.assign(space_.size(), kUnchecked);
    std::int8_t& v = dense_valid_[space_.flat_index(p)];
    if (v == kUnchecked) v = space_.check(space_.schedule_at(p)).ok ? kValid : kInvalid;
    return v == kValid;
  }
  auto it = valid_cache_.find(p);
  if (it != valid_cache_.end()) return it->second;
  const bool ok = space_.check(space_.schedule_at(p)).ok;
  if (valid_cache_.size() >= kValidCacheLimit) valid_cache_.clear();
  valid_cache_.emplace(p, ok);
  return ok;
}

bool StrategyBase::is_new_valid(const Point& p) {
  if (seen_.count(p) || batch_set_.count(p)) return false;
  return valid(p);
}

bool StrategyBase::claim(const Point& p) {
  if (!is_new_valid(p)) return false;
  batch_.push_back(p);
  batch_set_.insert(p);
  return true;
}

void StrategyBase::fill_random(std::size_t target) {
  // Rejection sampling first: cheap while most of the space is new and valid.
  const std::size_t budget = 64 * (target > batch_.size() ? target - batch_.size() : 0) + 256;
  for (std::size_t tries = 0; batch_.size() < target && tries < budget; ++tries) {
    claim(space_.random_point(rng_));
  }
  if (batch_.size() >= target || space_.size() > kEnumerateLimit) return;
  // Stalled: most points are seen or invalid, so pick among the ones that are left.
  std::vector<Point> left;
  for (std::uint64_t i = 0; i < space_.size(); ++i) {
    Point p = space_.point_at(i);
    if (is_new_valid(p)) left.push_back(std::move(p));
  }
  for (std::size_t i = 0; i < left.size() && batch_.size() < target; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(rng_() % (left.size() - i));
    std::swap(left[i], left[j]);
    claim(left[i]);
  }
}

void StrategyBase::mutate_knob(Point& p, std::size_t knob) {
  const int n = static_cast<int>(space_.knobs()[knob].values.size());
  if (n <= 1) return;
  // Short-circuits at 0, so the RNG stream is the same as without the option.
  if (evolution_.mutation_doubling > 0 && uniform01() < evolution_.mutation_doubling) {
    const auto& to = doublings_[knob][static_cast<std::size_t>(p[knob])];
    const std::size_t first = rng_() % 2;
    for (std::size_t i : {first, 1 - first}) {
      if (to[i] >= 0) {
        p[knob] = to[i];
        return;
      }
    }
  }
  const int step = (rng_() % 4 == 0) ? 2 : 1;  // mostly neighbours, sometimes one further
  const int dir = (rng_() % 2 == 0) ? -1 : 1;
  int v = p[knob] + dir * step;
  if (v < 0 || v >= n) v = p[knob] - dir * step;  // bounce off the end of the list
  p[knob] = std::clamp(v, 0, n - 1);
}

std::size_t StrategyBase::successes() const {
  return static_cast<std::size_t>(
      std::count_if(records_.begin(), records_.end(), [](const PointTrial& r) { return r.ok(); }));
}

std::vector<const PointTrial*> StrategyBase::best_records(std::size_t k) const {
  std::vector<const PointTrial*> ok;
  for (const auto& r : records_) {
    if (r.ok()) ok.push_back(&r);
  }
  std::stable_sort(ok.begin(), ok.end(),
                   [](const PointTrial* a, const PointTrial* b) { return a->time_us < b->time_us; });
  if (ok.size() > k) ok.resize(k);
  return ok;
}

Json StrategyBase::save_state() const {
  std::ostringstream rng_text;
  rng_text << rng_;
  Json trials = Json::array();
  for (const auto& r : records_) trials.push_back(trial_json(space_.schedule_at(r.point), r.status, r.time_us));
  Json pending = Json::array();
  for (const auto& p : pending_) pending.push_back(space_.schedule_at(p).to_json());
  return {{"strategy", name_}, {"version", kStateVersion}, {"rng", rng_text.str()},       {"round", round_},
          {"trials", trials},  {"pending", pending},       {"has_pending", has_pending_}, {"extra", save_extra()}};
}

void StrategyBase::load_state(const Json& state) {
  const std::string ctx = "search state";
  if (!records_.empty() || has_pending_ || round_ != 0) {
    throw Error(ErrorKind::internal,
                "SearchStrategy::load_state(): requires a fresh strategy (nothing observed or proposed)");
  }
  require_object(state, ctx);
  if (require_string(state, "strategy", ctx) != name_) {
    throw_bad_input(ctx + ": field 'strategy' is '" + state["strategy"].get<std::string>() + "', expected '" + name_ +
                    "'");
  }
  if (require_int(state, "version", ctx) != kStateVersion) {
    throw_bad_input(ctx + ": field 'version' must be " + std::to_string(kStateVersion));
  }
  std::istringstream rng_text(require_string(state, "rng", ctx));
  rng_text >> rng_;
  if (!rng_text) throw_bad_input(ctx + ": field 'rng' is not a saved mt19937_64 state");
  round_ = static_cast<std::size_t>(require_int(state, "round", ctx));
  const Json& trials = require_field(state, "trials", ctx);
  if (!trials.is_array()) throw_bad_input(ctx + ": field 'trials' must be a list");
  for (const auto& t : trials) {
    auto p = point_in_space(space_.parse(require_field(t, "schedule", ctx + " trial")));
    add_record(
        {*p, parse_status(require_string(t, "status", ctx + " trial")), require_number(t, "time_us", ctx + " trial")});
  }
  const Json& pending = require_field(state, "pending", ctx);
  if (!pending.is_array()) throw_bad_input(ctx + ": field 'pending' must be a list");
  for (const auto& s : pending) pending_.push_back(*point_in_space(space_.parse(s)));
  const Json& has_pending = require_field(state, "has_pending", ctx);
  if (!has_pending.is_boolean()) throw_bad_input(ctx + ": field 'has_pending' must be true or false");
  has_pending_ = has_pending.get<bool>();
  if (!records_.empty()) on_records(0);
  load_extra(require_field(state, "extra", ctx));
}

}  // namespace atvoss::search

namespace atvoss::search {

void StrategyBase::breed_from_measured(std::size_t target) {
  const auto parents = best_records(static_cast<std::size_t>(evolution_.population));
  if (parents.size() < 2) return;
  const auto tournament = [&]() -> const Point& {
    std::size_t best = parents.size();
    for (int i = 0; i < evolution_.tournament; ++i) best = std::min<std::size_t>(best, rng_() % parents.size());
    return parents[best]->point;  // parents are sorted best first
  };
  const std::size_t dims = space_.dimensions();
  for (std::size_t tries = 0; batch_.size() < target && tries < 32 * target; ++tries) {
    const Point& a = tournament();
    const Point& b = tournament();
    Point child = a;
    for (std::size_t d = 0; d < dims; ++d) {
      if (uniform01() < evolution_.crossover_rate) child[d] = b[d];
    }
    bool moved = false;
    for (std::size_t d = 0; d < dims; ++d) {
      if (uniform01() < evolution_.mutation_rate) {
        mutate_knob(child, d);
        moved = true;
      }
    }
    if (!moved) mutate_knob(child, rng_() % dims);
    for (int repair = 0; repair < 4 && !claim(child); ++repair) mutate_knob(child, rng_() % dims);
  }
}

}  // namespace atvoss::search
