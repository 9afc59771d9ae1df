// StrategySetup: builds the SearchStrategy of one workload with what the database
// knows — transfer data (records of the target's other workloads, so a model-guided
// search starts informed from its first round), or for strategies that take a prior (tpe
// and the ensemble; model-guided on a measured table) the results of related workloads:
// the same op measured as another workload or on another target, whose schedules lie in
// this space (the same kernel on another GPU, a related shape), and on a measured table the
// results of other tables (another kernel, carried over by knob name: search/prior_space.hpp)
// — and taps the strategy's
// cost model so every refit is saved to the models table with its training-set size.
// Threading: the tuner thread that owns the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/tuning_database.hpp"
#include "search/search_strategy.hpp"

namespace atvoss::tuner {

class ModelTap;  // forwards to the strategy's model, counting refits

struct StrategyConfig {
  std::string name = "model-guided";  // any search::strategy_names() entry
  // The strategy's own JSON config (its search/*_config.hpp; a job spec's strategy_config).
  Json options = Json::object();
  std::string cost_model =
      "xgboost";  // a registered cost model (costmodel/model_registry.hpp), for model-guided/ensemble
  std::uint64_t seed = 0;
  // Transfer: at most this many records per other workload, at most max_transfer in all
  // (the best first). Bounds the first fit's cost on a large database.
  int transfer_per_workload = 64;
  int max_transfer = 4000;
  // Prior (tpe, ensemble): at most this many related records, the newest first.
  int max_prior = 2000;
  // Resume: take transfer or prior records only up to this record id, the watermark of
  // the setup being restored, so the restored strategy starts from exactly the same data.
  std::optional<std::int64_t> transfer_upto;
};

class StrategySetup {
 public:
  StrategySetup(const ScheduleSpace& space, const Workload& workload, const Target& target,
                const db::TuningDatabase& db, const StrategyConfig& config);
  ~StrategySetup();
  StrategySetup(StrategySetup&&) noexcept;
  StrategySetup& operator=(StrategySetup&&) noexcept;

  search::SearchStrategy& strategy() { return *strategy_; }
  // The id of the newest record the transfer data or the prior may include (StrategyConfig::transfer_upto
  // of a resumed setup; 0 for a database that had no records).
  std::int64_t transfer_upto() const { return transfer_upto_; }
  // The other tables whose results the strategy was given (TuneContext::prior_spaces), by
  // name ("<workload label> on <target>"); the strategy decides which of them are related.
  const std::vector<std::string>& prior_tables() const { return prior_tables_; }
  // Saves the cost model to db if it was refit since the last call. Returns true if saved.
  bool save_if_retrained(db::TuningDatabase& db);

 private:
  std::shared_ptr<ModelTap> tap_;
  std::unique_ptr<search::SearchStrategy> strategy_;
  db::TargetInfo target_;
  std::int64_t transfer_upto_ = 0;
  std::vector<std::string> prior_tables_;
};

}  // namespace atvoss::tuner
