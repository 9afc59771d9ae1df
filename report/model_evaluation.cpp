#include "report/model_evaluation.hpp"

#include <algorithm>
#include <memory>
#include <set>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "costmodel/cost_model.hpp"
#include "tuner/zero_shot.hpp"

namespace atvoss::report {
namespace {

// Noise-free, so variants are compared on the model's own time.
Measurement exact(const Target& target, const Workload& w, const Schedule& s) {
  return backend::measure_noise_free(target, w, s);
}

tuner::TrainedPickOptions pick_options(const EvaluationOptions& o) {
  return {o.cost_model, o.zero_shot_candidates, o.train_per_task, o.seed};
}

// Folds of the cross-validated zero-shot models. One fit per task (leave-one-out) took 75 s
// of a 300-task job's report; with at most this many measured tasks, the folds are
// leave-one-out exactly.
constexpr std::size_t kZeroShotFolds = 5;

// The zero-shot models of variant (b): task i's model never saw task i. Measured tasks fall
// into kZeroShotFolds folds by their rank among the measured (rank % folds); fold f's model
// trains on the measured tasks of the other folds. A task with nothing measured takes the
// model trained on every measured task (for it, already leave-one-out).
class ZeroShotModels {
 public:
  ZeroShotModels(const std::vector<costmodel::WorkloadGroup>& groups, const EvaluationOptions& options)
      : fold_of_(groups.size(), kUnmeasured) {
    std::vector<std::size_t> measured;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (!groups[i].samples.empty()) measured.push_back(i);
    }
    const std::size_t folds = std::min(kZeroShotFolds, measured.size());
    for (std::size_t r = 0; r < measured.size(); ++r) fold_of_[measured[r]] = r % folds;
    for (std::size_t f = 0; f <= folds; ++f) {  // f == folds: every measured task
      std::vector<costmodel::WorkloadGroup> train;
      for (std::size_t r = 0; r < measured.size(); ++r) {
        if (f == folds || r % folds != f) train.push_back(groups[measured[r]]);
      }
      fits_.push_back(fit(train, options));
    }
  }

  // Task i's model, or nullptr with why set.
  const costmodel::CostModel* model_for(std::size_t i, std::string& why) const {
    const Fit& f = fold_of_[i] == kUnmeasured ? fits_.back() : fits_[fold_of_[i]];
    why = f.why;
    return f.model.get();
  }

 private:
  static constexpr std::size_t kUnmeasured = std::size_t(-1);
  struct Fit {
    std::unique_ptr<costmodel::CostModel> model;  // null when it could not be trained
    std::string why;
  };

  static Fit fit(const std::vector<costmodel::WorkloadGroup>& train, const EvaluationOptions& options) {
    if (train.empty()) return {nullptr, "no other task measured"};
    auto model = costmodel::make_cost_model(options.cost_model, options.seed);
    try {
      model->train(train);
    } catch (const Error& e) {
      return {nullptr, e.what()};
    }
    return {std::move(model), ""};
  }

  std::vector<std::size_t> fold_of_;
  std::vector<Fit> fits_;
};

VariantOp zero_shot(const frontend::TuneTask& task, std::size_t index, const ZeroShotModels& models,
                    const Target& target, const EvaluationOptions& options) {
  VariantOp op{task.name, task.weight, std::nullopt, ""};
  std::string why;
  const costmodel::CostModel* model = models.model_for(index, why);
  if (!model) {
    const Schedule def = backend::required_default(task.workload, target);
    op.measurement = exact(target, task.workload, def);
    op.note = "no zero-shot model (" + why + "); default used";
    op.schedule = def;
    return op;
  }
  op.schedule = tuner::model_pick(*model, task.workload, target, pick_options(options));
  op.measurement = exact(target, task.workload, *op.schedule);
  return op;
}

// Fastest stored schedule, optionally only among those at one fusion level.
std::optional<Schedule> best_stored(const std::vector<db::Record>& history, std::optional<std::int64_t> fusion_level) {
  const db::Record* best = nullptr;
  for (const auto& r : history) {
    if (!r.measurement.ok()) continue;
    if (fusion_level && r.schedule.get_or("fusion_level", 0) != *fusion_level) continue;
    if (!best || r.measurement.time_us < best->measurement.time_us) best = &r;
  }
  if (!best) return std::nullopt;
  return best->schedule;
}

// Variant (c): the tiling tuned with fusion held at the vendor default's level. The
// search spends few trials at any one level, so besides the best stored schedule at
// that level, the overall winner moved to that level competes too.
VariantOp tuned_at_fusion(const frontend::TuneTask& t, const Target& target, const std::vector<db::Record>& history,
                          const Schedule& def) {
  VariantOp op{t.name, t.weight, std::nullopt, ""};
  const std::int64_t level = def.get_or("fusion_level", 0);
  std::vector<Schedule> candidates;
  if (auto s = best_stored(history, level)) candidates.push_back(*s);
  if (auto s = best_stored(history, std::nullopt); s && s->has("fusion_level")) {
    s->set("fusion_level", level);
    candidates.push_back(*s);
  }
  for (const auto& c : candidates) {
    Measurement m = exact(target, t.workload, c);
    if (m.ok() && (!op.measurement || m.time_us < op.measurement->time_us)) {
      op.measurement = m;
      op.schedule = c;
    }
  }
  if (!op.measurement) {
    op.measurement = exact(target, t.workload, def);
    op.note = "nothing valid at the default fusion level; default used";
    op.schedule = def;
  }
  return op;
}

}  // namespace

std::vector<PrecisionRow> evaluate_precisions(const frontend::TaskSet& model, const frontend::PrecisionSpec& job,
                                              const Target& target) {
  std::vector<PrecisionRow> rows;
  // A precision in which some op has no valid schedule on the target gets no row.
  auto add_row = [&](std::string name, const frontend::PrecisionSpec& spec) {
    PrecisionRow r{std::move(name), 0};
    try {
      const frontend::TaskSet tasks = frontend::apply_precision(model, spec);
      for (const auto& t : tasks.tasks()) {
        const Measurement m =
            backend::measure_noise_free(target, t.workload, backend::required_default(t.workload, target));
        if (m.ok()) r.default_us += t.weight * m.time_us;
      }
    } catch (const Error&) {
      return;
    }
    rows.push_back(std::move(r));
  };
  add_row("float16", frontend::PrecisionSpec::whole(DType::float16));
  add_row("int8", frontend::PrecisionSpec::whole(DType::int8));
  if (!job.empty()) add_row("this job's precision", job);
  return rows;
}

std::vector<ModelVariant> evaluate_variants(const std::vector<frontend::TuneTask>& tasks, const Target& target,
                                            const std::vector<std::vector<db::Record>>& histories,
                                            const EvaluationOptions& options) {
  std::vector<costmodel::WorkloadGroup> groups;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    groups.push_back(tuner::training_group(tasks[i].workload, target, histories.at(i), options.train_per_task));
  }
  const ZeroShotModels zero_models(groups, options);
  ModelVariant zero{"(b) cost model, zero-shot",
                    options.cost_model + " model trained on other tasks only (" + std::to_string(kZeroShotFolds) +
                        " folds); top pick of " + std::to_string(options.zero_shot_candidates) +
                        " sampled schedules, unmeasured",
                    {}};
  ModelVariant tuned{"(c) tuned", "tiling tuned, fusion_level held at the vendor default's", {}};
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const frontend::TuneTask& t = tasks[i];
    const Schedule d = backend::required_default(t.workload, target);
    zero.ops.push_back(zero_shot(t, i, zero_models, target, options));
    tuned.ops.push_back(tuned_at_fusion(t, target, histories[i], d));
  }
  return {zero, tuned};
}

}  // namespace atvoss::report
