#include "tuner/strategy_setup.hpp"

#include <algorithm>
#include <map>

#include "costmodel/cost_model.hpp"
#include "costmodel/features.hpp"
#include "costmodel/workload_groups.hpp"
#include "search/strategy_registry.hpp"

namespace atvoss::tuner {

// The strategy owns its model through a unique_ptr; the tap is what it owns, and it
// forwards every call to a model the tuner shares, so the tuner can save each fit.
class ModelTap {
 public:
  explicit ModelTap(std::unique_ptr<costmodel::CostModel> model) : model_(std::move(model)) {}
  costmodel::CostModel& model() { return *model_; }
  int fits = 0;
  std::int64_t last_fit_samples = 0;
  int saved_fits = 0;

 private:
  std::unique_ptr<costmodel::CostModel> model_;
};

namespace {

class TappedModel : public costmodel::CostModel {
 public:
  explicit TappedModel(std::shared_ptr<ModelTap> tap) : tap_(std::move(tap)) {}
  std::string kind() const override { return tap_->model().kind(); }
  void train(std::span<const costmodel::WorkloadGroup> groups) override {
    tap_->model().train(groups);
    std::int64_t n = 0;
    for (const auto& g : groups) n += static_cast<std::int64_t>(g.samples.size());
    tap_->last_fit_samples = n;
    ++tap_->fits;
  }
  std::vector<double> predict(const Workload& w, const Target& t, std::span<const Schedule> s) const override {
    return tap_->model().predict(w, t, s);
  }
  std::vector<double> predict_features(const costmodel::FeatureMatrix& rows) const override {
    return tap_->model().predict_features(rows);
  }
  bool trained() const override { return tap_->model().trained(); }
  std::vector<std::uint8_t> save() const override { return tap_->model().save(); }
  void load(std::span<const std::uint8_t> bytes) override { tap_->model().load(bytes); }
  std::vector<costmodel::FeatureScore> feature_importance() const override {
    return tap_->model().feature_importance();
  }

 private:
  std::shared_ptr<ModelTap> tap_;
};

// Records of the target's other workloads, oldest first, within the config's caps and
// up to the watermark; *upto becomes the id of the last record looked at, so the same
// call with transfer_upto = *upto later returns the same groups.
std::vector<costmodel::WorkloadGroup> transfer_groups(const db::TuningDatabase& db, const Workload& workload,
                                                      const Target& target, const StrategyConfig& config,
                                                      std::int64_t* upto) {
  const auto info = db::TargetInfo::from_target(target);
  costmodel::GroupBuilder builder(config.transfer_per_workload);
  *upto = config.transfer_upto.value_or(0);
  db.records().for_each_record(info.key, [&](const db::Record& r) {
    if (config.transfer_upto && r.id > *config.transfer_upto) return false;
    if (!config.transfer_upto) *upto = r.id;
    if (r.workload.key() == workload.key() || r.workload.is_table()) return true;
    if (!builder.add(r.workload, target, {r.schedule, r.measurement.status, r.measurement.time_us})) return true;
    return static_cast<int>(builder.samples()) < config.max_transfer;
  });
  return builder.take();
}

// What the database knows of related results: the same kernel elsewhere (prior trials) and,
// for a measured table, other tables (prior spaces).
struct Priors {
  std::vector<search::Trial> trials;
  std::vector<search::PriorSpace> spaces;
};

// Records of the same op that are not this (workload, target)'s own history (the session
// observes that), newest first, within the config's cap and up to the watermark; *upto becomes
// the newest id looked at, as transfer_groups. Those whose schedules lie in the space are the
// prior trials; on a measured table, the others are other tables' results, one prior space
// per (table, target), each within the same cap.
Priors priors(const db::TuningDatabase& db, const ScheduleSpace& space, const Workload& workload, const Target& target,
              const StrategyConfig& config, std::int64_t* upto) {
  const auto own_target = db::TargetInfo::from_target(target).key;
  db::RecordFilter filter;
  filter.op = workload.op();
  filter.limit = 20 * static_cast<std::int64_t>(config.max_prior);  // bounds the decode on a big database
  *upto = config.transfer_upto.value_or(0);
  Priors out;
  struct Table {
    std::string name;
    std::vector<search::Trial> trials;
  };
  std::map<std::string, Table> tables;  // by workload and target key
  for (const auto& r : db.records().query(filter)) {
    if (config.transfer_upto && r.id > *config.transfer_upto) continue;
    if (!config.transfer_upto) *upto = std::max(*upto, r.id);
    const bool own = r.workload.key() == workload.key() && r.target.key == own_target;
    if (own || is_infrastructure_error(r.measurement.status)) continue;
    const search::Trial trial{r.schedule, r.measurement.status, r.measurement.time_us};
    if (space.point_of(r.schedule)) {
      if (static_cast<int>(out.trials.size()) < config.max_prior) out.trials.push_back(trial);
    } else if (workload.is_table()) {
      auto& table = tables[r.workload.key() + "@" + r.target.key];
      if (table.name.empty()) table.name = r.workload.label() + " on " + r.target.name;
      if (static_cast<int>(table.trials.size()) < config.max_prior) table.trials.push_back(trial);
    }
  }
  for (auto& [key, table] : tables) {
    out.spaces.push_back(search::prior_space_from_trials(std::move(table.name), std::move(table.trials)));
  }
  return out;
}

}  // namespace

StrategySetup::StrategySetup(const ScheduleSpace& space, const Workload& workload, const Target& target,
                             const db::TuningDatabase& db, const StrategyConfig& config)
    : target_(db::TargetInfo::from_target(target)) {
  search::TuneContext context;
  context.seed = config.seed;
  context.workload = workload;
  context.target = target;
  context.cost_model = config.cost_model;
  // What the strategy reads decides what the database is asked for (the registry entry says).
  const auto entry = search::registered_strategy(config.name);
  if (entry && entry->uses_cost_model) {
    tap_ = std::make_shared<ModelTap>(costmodel::make_cost_model(config.cost_model, config.seed));
    context.model_factory = [tap = tap_] { return std::make_unique<TappedModel>(tap); };
    context.transfer_groups = transfer_groups(db, workload, target, config, &transfer_upto_);
  }
  if (entry && entry->uses_prior && entry->uses_prior(workload)) {
    auto found = priors(db, space, workload, target, config, &transfer_upto_);
    context.prior_trials = std::move(found.trials);
    context.prior_spaces = std::move(found.spaces);
    for (const auto& p : context.prior_spaces) prior_tables_.push_back(p.name);
  }
  strategy_ = search::make_strategy(config.name, space, context, config.options);
}

StrategySetup::~StrategySetup() = default;
StrategySetup::StrategySetup(StrategySetup&&) noexcept = default;
StrategySetup& StrategySetup::operator=(StrategySetup&&) noexcept = default;

bool StrategySetup::save_if_retrained(db::TuningDatabase& db) {
  if (!tap_ || tap_->fits == tap_->saved_fits || !tap_->model().trained()) return false;
  db::ModelRecord record;
  record.target_key = target_.key;
  record.kind = tap_->model().kind();
  record.feature_version = costmodel::feature_version();
  record.blob = tap_->model().save();
  record.n_records = tap_->last_fit_samples;
  record.metrics = Json{{"fits", tap_->fits}};
  db.models().save(target_, record);
  tap_->saved_fits = tap_->fits;
  return true;
}

}  // namespace atvoss::tuner
