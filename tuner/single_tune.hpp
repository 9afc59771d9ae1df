// SingleTune: tuning one workload on one target into a database — atvoss-tune's
// single-workload mode as a library call. It validates every input before the database
// is opened (a bad flag creates no file), builds the strategy the job runner would
// (StrategySetup, with the database's transfer prior), runs the tuning loop, saves
// each retrained model, and exports the lookup table if asked.
#pragma once

#include <cstdint>
#include <string>

#include "core/json.hpp"
#include "tuner/tuner.hpp"

namespace atvoss::tuner {

struct SingleTuneSpec {
  std::string target;  // preset, file or inline JSON (backend/targets.hpp)
  Json workload;       // the workload's JSON
  int trials = 0;      // total trials, stored ones included; >= 1
  std::string strategy = "model-guided";
  Json strategy_config = Json::object();  // the strategy's own config (search/*_config.hpp)
  std::string cost_model = "xgboost";
  std::string db;           // database file; created if absent
  std::string export_path;  // lookup table written afterwards; empty: none
  std::string farm;         // host:port of a tuning farm; empty: measure in-process
  int repeat = 3;
  int batch_size = 16;
  int early_stopping = 0;  // trials without 0.1% gain before stopping; 0: never
  // The fastest schedules re-measured at the end (TuneOptions::confirm_top); -1: kConfirmTop
  // where the backend's measurements are noisy (BackendTraits), none where they are exact.
  int confirm_top = -1;
  std::uint64_t seed = 0;
};

struct SingleTuneOutcome {
  Workload workload;
  Target target;
  TuneResult result;
};

// bad_input naming the field for a bad spec; other errors as the tuner raises them.
// callbacks.on_round runs after every round and on_trial after every trial (progress).
// Raising cancel stops the tuning within one poll of the measurements in flight: the
// finished trials are stored, the result's stop_reason is "cancelled", nothing is exported.
SingleTuneOutcome tune_single(const SingleTuneSpec& spec, const TuneCallbacks& callbacks = {},
                              const CancelFlag& cancel = {});

}  // namespace atvoss::tuner
