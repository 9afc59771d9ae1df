// StrategyBase: what every strategy shares — the call-order state machine, the record of
// trials and the seen-set built from it, the pending batch, the seeded RNG, validity
// caching, random filling, and save/load of that common state. A concrete strategy only
// chooses points (next_points) and keeps whatever it derives from the trials.
// Private to search/. Not thread-safe (see search_strategy.hpp).
#pragma once

#include <array>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "search/evolution_config.hpp"
#include "search/search_strategy.hpp"

namespace atvoss::search {

struct PointHash {
  std::size_t operator()(const Point& p) const noexcept {
    std::uint64_t h = 1469598103934665603ULL;
    for (int v : p) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
    return static_cast<std::size_t>(h);
  }
};
using PointSet = std::unordered_set<Point, PointHash>;

// One trial in point form (knob-value indices), in the order it was recorded.
struct PointTrial {
  Point point;
  Status status = Status::ok;
  double time_us = 0;
  bool ok() const { return status == Status::ok; }
};

class StrategyBase : public SearchStrategy {
 public:
  // evolution: the breeding of breed_from_measured and mutate_knob's doubling (only the
  // strategies that breed or mutate read it).
  StrategyBase(std::string name, const ScheduleSpace& space, const TuneContext& context,
               const EvolutionConfig& evolution = {});

  std::string name() const final { return name_; }
  void observe(std::span<const Trial> history) final;
  std::vector<Schedule> propose(std::size_t n) final;
  void update(std::span<const Trial> results) final;
  Json save_state() const final;
  void load_state(const Json& state) final;
  std::size_t trials() const final { return records_.size(); }

 protected:
  // The TPE proposals act on this strategy's record and batch (the tpe strategy and the
  // ensemble's tpe arm share them; search/internal/tpe_proposer.hpp).
  friend class TpeProposer;

  // Chooses up to n points for this batch; each must be taken with claim() (which
  // refuses seen, pending, already-claimed and invalid points).
  virtual void next_points(std::size_t n) = 0;
  // New records were appended (from observe, update or load_state replay).
  virtual void on_records(std::size_t first_new) { (void)first_new; }
  // Strategy-specific state beyond the records (cursor, model fit size, bandit credits).
  // load_state restores the records, replays them through on_records(0), then load_extra.
  virtual Json save_extra() const { return Json::object(); }
  virtual void load_extra(const Json& extra) { (void)extra; }

  const ScheduleSpace& space() const { return space_; }
  // The context the strategy was made with, less its prior_spaces (read at construction only).
  const TuneContext& context() const { return context_; }
  const EvolutionConfig& evolution() const { return evolution_; }
  std::mt19937_64& rng() { return rng_; }
  const std::vector<PointTrial>& records() const { return records_; }
  std::size_t round() const { return round_; }

  // True if p may join the batch: not seen, not pending, not claimed yet, and valid.
  bool is_new_valid(const Point& p);
  // Adds p to the batch if is_new_valid(p); returns whether it did.
  bool claim(const Point& p);
  std::size_t claimed() const { return batch_.size(); }
  const std::vector<Point>& batch() const { return batch_; }
  bool seen(const Point& p) const { return seen_.count(p) != 0; }
  // Cached ScheduleSpace::check of a point.
  bool valid(const Point& p);
  // Claims uniformly random new valid points until the batch holds target points or the
  // space has none left (falls back to enumeration when rejection sampling stalls).
  void fill_random(std::size_t target);
  // Moves one knob of p to a neighbouring value (+-1, sometimes +-2 steps), or with
  // probability evolution().mutation_doubling to twice or half its value where the list has it.
  void mutate_knob(Point& p, std::size_t knob);
  // Records whose status is ok.
  std::size_t successes() const;
  // Best successful records, best first (ties by record order), at most k.
  std::vector<const PointTrial*> best_records(std::size_t k) const;
  // Evolutionary step over the measured trials: claims children of tournament-selected
  // parents among the best evolution().population records (elitism), by per-knob crossover
  // and neighbour mutation, repairing invalid or seen children by further mutation and
  // rejecting them after a few tries, until the batch holds target points or tries run out.
  void breed_from_measured(std::size_t target);
  // Uniform double in [0, 1) from the strategy's RNG (portable: no std distributions).
  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  void require_idle(const char* call) const;
  void add_record(PointTrial r);
  std::optional<Point> point_in_space(const Schedule& s) const;

  std::string name_;
  ScheduleSpace space_;
  TuneContext context_;
  EvolutionConfig evolution_;
  std::mt19937_64 rng_;
  std::size_t round_ = 0;
  std::vector<PointTrial> records_;
  PointSet seen_;
  std::vector<Point> pending_;  // proposed, awaiting update()
  bool has_pending_ = false;
  std::vector<Point> batch_;  // being built inside propose()
  PointSet batch_set_;
  // check() verdicts: by flat index (kUnchecked/kInvalid/kValid) when the space has at most
  // kDenseValidLimit points, which costs no hashing; otherwise by point.
  std::vector<std::int8_t> dense_valid_;
  // Per knob and value index: the indices of half and of twice that value (-1: not listed);
  // empty when evolution().mutation_doubling is 0.
  std::vector<std::vector<std::array<int, 2>>> doublings_;
  std::unordered_map<Point, bool, PointHash> valid_cache_;
};

}  // namespace atvoss::search
