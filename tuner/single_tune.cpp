#include "tuner/single_tune.hpp"

#include <unistd.h>

#include <iostream>
#include <string>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "costmodel/model_registry.hpp"
#include "db/postgres_url.hpp"
#include "db/table_export.hpp"
#include "search/search_strategy.hpp"
#include "tuner/former_records.hpp"
#include "tuner/job_runner.hpp"
#include "tuner/strategy_setup.hpp"
#include "tuner/tuning_limits.hpp"

namespace atvoss::tuner {

namespace {

// This process, as a claim's owner: host and pid.
std::string process_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return "tune:" + std::string(host) + ":" + std::to_string(::getpid());
}

}  // namespace

SingleTuneOutcome tune_single(const SingleTuneSpec& spec, const TuneCallbacks& callbacks, const CancelFlag& cancel) {
  // Every input is checked before the database is opened: a bad flag creates no file.
  limits::check("--trials", spec.trials, limits::trials);
  limits::check("--repeat", spec.repeat, limits::repeat);
  limits::check("--batch-size", spec.batch_size, limits::batch_size);
  limits::check("--early-stopping", spec.early_stopping, limits::early_stopping);
  if (spec.confirm_top != -1) limits::check("--confirm-top", spec.confirm_top, limits::confirm_top);
  costmodel::require_cost_model(spec.cost_model, "--cost-model");
  search::check_strategy_config(spec.strategy, spec.strategy_config);
  if (spec.db.empty()) throw_bad_input("--db must name a database file or a postgresql:// URL");
  db::require_database(spec.db, "--db", false);
  if (!spec.export_path.empty()) require_replaceable_file(spec.export_path, "--export");
  SingleTuneOutcome out{Workload::from_json(spec.workload), backend::load_target(spec.target), {}};
  // Measured here: the backend's own checks (the host's compile cache) before any work.
  if (spec.farm.empty()) backend::check_target(out.target);
  const ScheduleSpace space = backend::space_for(out.workload, out.target);
  auto measurer = make_job_measurer(spec.farm);
  auto db = db::TuningDatabase::open(spec.db);
  adopt_former_records(db, out.target, &std::cerr);
  StrategyConfig config;
  config.name = spec.strategy;
  config.options = spec.strategy_config;
  config.cost_model = spec.cost_model;
  config.seed = spec.seed;
  StrategySetup setup(space, out.workload, out.target, db, config);
  TuneOptions options;
  options.repeat = spec.repeat;
  options.batch_size = spec.batch_size;
  options.early_stopping = spec.early_stopping;
  options.seed = spec.seed;
  options.cancel = cancel;
  // A server database may be shared with other processes: claim before measuring.
  if (db::is_postgres_url(spec.db)) options.claim_owner = process_owner();
  options.claim_notes = &std::cerr;  // not progress: a run waiting on another one must say so
  options.after_round = [&] { setup.save_if_retrained(db); };
  options.confirm_top = spec.confirm_top >= 0                                 ? spec.confirm_top
                        : backend::traits_for(out.workload, out.target).noisy ? kConfirmTop  // tuner.hpp
                                                                              : 0;
  out.result =
      tune(out.workload, out.target, spec.trials, setup.strategy(), *measurer, db.records(), options, callbacks);
  if (!spec.export_path.empty() && out.result.stop_reason != "cancelled") {
    db::export_table(db, db::TargetInfo::from_target(out.target), spec.export_path);
  }
  return out;
}

}  // namespace atvoss::tuner
