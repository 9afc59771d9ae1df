// SearchStrategy: decides which schedules of one (workload, target) space to measure
// next. The tuner asks for a batch, measures it, and hands the results back; the
// strategy never proposes a schedule it has been told about (measured now, in an
// earlier round, or in an earlier job resumed from the database), never the same
// schedule twice, and only schedules that pass ScheduleSpace::check.
//
// Call order (enforced; a wrong call throws Error(internal) naming the missing call):
//   s = make_strategy(name, space, context, config)
//   s->observe(history)          optional, any time no batch is pending: schedules measured
//                                elsewhere (database on resume, other workers)
//   loop:
//     batch = s->propose(n)      REQUIRES: no batch pending (update() the previous one first)
//     s->update(results)         REQUIRES: a batch pending; results are for schedules of that
//                                batch (any order, any subset; a schedule left out, or whose
//                                status is an infrastructure error, may be proposed again)
//   state = s->save_state()      any time; load_state(state) on a fresh strategy of the same
//                                name and space resumes exactly (same later proposals)
//
// Strategies (make_strategy names): "random", "grid", "evolutionary", "model-guided"
// (evolution over CostModel predictions, MetaSchedule-style), "ensemble" (bandit over the
// cost model's, TPE's and evolution's proposals, crediting new bests), "tpe" (tree-structured Parzen
// estimator over knob-value indices, with local candidates and an optional transfer prior),
// and those registered at run time (search/strategy_registry.hpp), built-ins in the same
// registry. What a run knows is its TuneContext (search/tune_context.hpp); how a strategy
// searches is its own JSON config, parsed and checked by the strategy (evolution_config.hpp,
// model_guided_config.hpp, tpe_config.hpp, ensemble_config.hpp; random and grid take none).
// Threading: not thread-safe; one tuner thread owns a strategy.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/schedule_space.hpp"
#include "search/tune_context.hpp"

namespace atvoss::search {

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;

  virtual std::string name() const = 0;
  // Records schedules measured elsewhere; they are never proposed and they inform the
  // search like results of update(). Schedules outside the space and infrastructure
  // errors are ignored. REQUIRES: no batch pending.
  virtual void observe(std::span<const Trial> history) = 0;
  // Up to n new, valid, distinct schedules; fewer (possibly none) when the space has
  // fewer left. Afterwards a batch is pending. REQUIRES: no batch pending.
  virtual std::vector<Schedule> propose(std::size_t n) = 0;
  // Results of the pending batch; afterwards no batch is pending. bad_input if a result's
  // schedule was not in the batch. REQUIRES: a batch pending.
  virtual void update(std::span<const Trial> results) = 0;
  // Everything needed to resume exactly: RNG, round, trials, pending batch, own state.
  virtual Json save_state() const = 0;
  // REQUIRES: a fresh strategy (nothing observed or proposed) of the same name and space.
  // bad_input naming the field if state is malformed or from another strategy.
  virtual void load_state(const Json& state) = 0;
  // Trials recorded so far (observed or updated, including candidate errors).
  virtual std::size_t trials() const = 0;
};

// Names of the built-in strategies, in a stable order.
const std::vector<std::string>& built_in_strategy_names();
// Names accepted by make_strategy: the built-ins, then those registered at run time
// (search/strategy_registry.hpp).
std::vector<std::string> strategy_names();
// bad_input listing the names if name is unknown, naming the field if config is not one the
// strategy takes (a strategy without a config parser takes only {} or null), and if the
// strategy does not apply to the context's workload and target.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const ScheduleSpace& space,
                                              const TuneContext& context = {}, const Json& config = Json::object());
// The same checks of name and config, without a space: a job spec checks its
// strategy_config when it is loaded, before any tuning starts.
void check_strategy_config(const std::string& name, const Json& config);

}  // namespace atvoss::search
