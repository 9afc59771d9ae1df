// TuneContext: what a search strategy is given about the tuning it serves, in the manner of
// MetaSchedule's TuneContext — the workload and target its cost model featurises, the seed of
// every random choice, how to build the cost model, and what is known beforehand (transfer
// groups of other workloads, prior trials of the same kernel elsewhere, other tables' results). How the strategy
// searches is its own JSON config (each strategy's *_config.hpp), not part of the context.
// Plain value type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/target.hpp"
#include "core/workload.hpp"
#include "costmodel/cost_model.hpp"
#include "search/prior_space.hpp"

namespace atvoss::search {

// One measured schedule (schedule, status, time_us meaningful only when ok; lower is better):
// the cost model's Trial, so trials train the model without a copy.
using costmodel::Trial;

struct TuneContext {
  // The workload and target the cost model featurises; required by the strategies that use
  // a cost model (model-guided, ensemble) and by registered strategies' can_apply.
  Workload workload;
  Target target;
  // Seeds every random choice; the same seed, space and results give the same proposals.
  std::uint64_t seed = 0;
  // A registered cost model kind (costmodel/model_registry.hpp); used when model_factory is empty.
  std::string cost_model = "xgboost";
  // Threads the default model trains and predicts with; 0 keeps costmodel's default (2).
  // 1 avoids OpenMP spin-waiting when the machine is shared with other work.
  int model_threads = 0;
  // Builds the model (tests inject fakes; the tuner hands in a model it saves after each fit).
  std::function<std::unique_ptr<costmodel::CostModel>()> model_factory;
  // Extra training data from other workloads of the same target (transfer), used together
  // with this workload's own trials.
  std::vector<costmodel::WorkloadGroup> transfer_groups;
  // Results of the same kernel on another target (e.g. from the database); schedules not in
  // this space are ignored. How a strategy uses them: its config header (tpe_config.hpp,
  // model_guided_config.hpp).
  std::vector<Trial> prior_trials;
  // Results of other tables (other kernels, or this kernel's table on other devices), carried
  // over by knob name (prior_space.hpp); a table sharing too little with this space is left out.
  // Used on measured tables by model-guided; see model_guided_config.hpp.
  std::vector<PriorSpace> prior_spaces;
};

}  // namespace atvoss::search
