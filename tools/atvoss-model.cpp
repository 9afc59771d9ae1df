// atvoss-model: train, evaluate and inspect the learned cost model on a tuning database.
//
//   atvoss-model train   --db F --target T [--kind xgboost|linear] [--objective O]
//                        [--holdout 0.2] [--seed N] [--json]
//       Fits on every record of T, grouped by workload, and stores the model with its
//       metrics (db save_model). Metrics come from a seeded per-workload holdout: a model
//       fitted on the other (1 - holdout) of each workload's records ranks the held-out
//       ones; the stored model is then refitted on everything.
//   atvoss-model eval    --db F --target T [--kind K] [--json]
//       Scores every record of T with the latest stored model of kind K (this build's
//       feature version): pairwise accuracy, Spearman, recall@5, peak@1, peak@5 per
//       workload and their mean. Records the model was trained on count too, so this is
//       an in-sample figure unless the database grew since.
//   atvoss-model inspect --db F --target T [--kind K] [--top N] [--json]
//       The stored model's metadata, importance per knob (the knob's value and log2
//       features; for recorded spaces the generic slot of that knob) and the top N
//       features overall (XGBoost: total gain; linear: |standardised weight|).
// T: a preset name, target JSON file or inline JSON, or the name or key of a target
// stored in the database (as atvoss-db). O: rank:pairwise (default) or reg:squarederror.
// Exit codes: 0 ok, 2 bad input, 1 any other failure (tools/cli_common.hpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/metrics.hpp"
#include "costmodel/workload_groups.hpp"
#include "db/postgres_url.hpp"
#include "db/tuning_database.hpp"
#include "tools/cli_common.hpp"
#include "tools/target_arg.hpp"

namespace {

using namespace atvoss;
using costmodel::WorkloadGroup;
using tools::resolve_target;

struct Args {
  std::string command, db, target, kind = "xgboost", objective = "rank:pairwise";
  double holdout = 0.2;
  std::uint64_t seed = 0;
  int top = 15;
  bool json = false;
};

// The hardware description for featurisation. Targets whose description is not a Target
// (recorded GPU spaces) featurise through the generic knob slots only, which ignore it.
Target featurisation_target(const db::TargetInfo& info) {
  try {
    return Target::from_json(info.description);
  } catch (const Error&) {
    Target t;
    t.name = info.name;
    return t;
  }
}

std::vector<WorkloadGroup> load_groups(const db::TuningDatabase& db, const db::TargetInfo& info) {
  const Target target = featurisation_target(info);
  costmodel::GroupBuilder builder;
  db.records().for_each_record(info.key, [&](const db::Record& r) {
    builder.add(r.workload, target, {r.schedule, r.measurement.status, r.measurement.time_us});
    return true;
  });
  auto out = builder.take();
  if (out.empty()) throw Error(ErrorKind::not_found, "no records of target " + info.name + " in " + db.path());
  return out;
}

db::OpenOptions existing(bool read_only) {
  db::OpenOptions o;
  o.must_exist = true;  // a mistyped path must not create an empty database
  o.read_only = read_only;
  return o;
}

costmodel::ModelOptions model_options(const Args& a) {
  costmodel::ModelOptions o;
  o.kind = a.kind;
  o.objective = a.objective;
  o.seed = a.seed;
  return o;
}

void print_metrics(const std::string& title, const costmodel::ModelMetrics& m) {
  std::printf(
      "%-44s groups %zu  samples %zu  pairwise %.3f  spearman %.3f  recall@5 %.3f  "
      "peak@1 %.3f  peak@5 %.3f\n",
      title.c_str(), m.groups, m.samples, m.pairwise, m.spearman, m.recall_at_5, m.peak_at_1, m.peak_at_5);
}

int train(const Args& a) {
  if (!(a.holdout >= 0 && a.holdout < 1)) throw_bad_input("--holdout must be in [0, 1)");
  auto db = db::TuningDatabase::open(a.db, existing(false));
  const db::TargetInfo info = resolve_target(db, a.target);
  const auto groups = load_groups(db, info);
  costmodel::ModelMetrics holdout_metrics;
  if (a.holdout > 0) {
    std::vector<WorkloadGroup> fit, held;
    costmodel::split_holdout(groups, a.holdout, a.seed, fit, held);
    auto probe = costmodel::make_cost_model(model_options(a));
    probe->train(fit);
    holdout_metrics = costmodel::evaluate(*probe, held);
  }
  auto model = costmodel::make_cost_model(model_options(a));
  model->train(groups);
  db::ModelRecord record;
  record.target_key = info.key;
  record.kind = model->kind();
  record.feature_version = costmodel::feature_version();
  record.blob = model->save();
  record.n_records = std::int64_t(costmodel::count_samples(groups));
  record.metrics = holdout_metrics.to_json();
  record.metrics["objective"] = a.kind == "xgboost" ? a.objective : "ridge";
  record.metrics["holdout"] = a.holdout;
  record.id = db.models().save(info, record);
  if (a.json) {
    std::cout << Json{{"model_id", record.id},
                      {"kind", record.kind},
                      {"records", record.n_records},
                      {"feature_version", record.feature_version},
                      {"metrics", record.metrics}}
                     .dump(2)
              << '\n';
  } else {
    std::printf("stored %s model %lld for %s: %lld records, %zu workloads, feature version %d\n", record.kind.c_str(),
                static_cast<long long>(record.id), info.name.c_str(), static_cast<long long>(record.n_records),
                groups.size(), record.feature_version);
    if (a.holdout > 0) print_metrics("holdout", holdout_metrics);
  }
  return 0;
}

std::pair<db::ModelRecord, std::unique_ptr<costmodel::CostModel>> load_stored(const db::TuningDatabase& db,
                                                                              const db::TargetInfo& info,
                                                                              const Args& a) {
  auto record = db.models().latest(info.key, a.kind, costmodel::feature_version());
  if (!record) {
    throw Error(ErrorKind::not_found, "no " + a.kind + " model of feature version " +
                                          std::to_string(costmodel::feature_version()) + " for target " + info.name +
                                          " in " + db.path() + "; run atvoss-model train");
  }
  auto model = costmodel::make_cost_model(model_options(a));
  model->load(record->blob);
  return {std::move(*record), std::move(model)};
}

int eval(const Args& a) {
  auto db = db::TuningDatabase::open(a.db, existing(true));
  const db::TargetInfo info = resolve_target(db, a.target);
  const auto [record, model] = load_stored(db, info, a);
  const auto groups = load_groups(db, info);
  Json per = Json::array();
  for (const auto& g : groups) {
    const auto m = costmodel::evaluate(*model, std::span(&g, 1));
    if (m.groups == 0) continue;
    if (a.json)
      per.push_back(Json{{"workload", g.workload.label()}, {"metrics", m.to_json()}});
    else
      print_metrics(g.workload.label().substr(0, 44), m);
  }
  const auto all = costmodel::evaluate(*model, groups);
  if (a.json) {
    std::cout << Json{{"model_id", record.id}, {"mean", all.to_json()}, {"workloads", per}}.dump(2) << '\n';
  } else {
    print_metrics("MEAN over workloads", all);
  }
  return 0;
}

int inspect(const Args& a) {
  if (a.top < 1) throw_bad_input("--top must be >= 1");
  auto db = db::TuningDatabase::open(a.db, existing(true));
  const db::TargetInfo info = resolve_target(db, a.target);
  const auto [record, model] = load_stored(db, info, a);
  const auto scores = model->feature_importance();
  std::vector<WorkloadGroup> groups;
  try {
    groups = load_groups(db, info);
  } catch (const Error&) {
    // a model without records: generic slots stay unnamed
  }
  const auto knobs = costmodel::knob_importance(scores, groups);
  const std::size_t top = std::min<std::size_t>(std::size_t(a.top), scores.size());
  if (a.json) {
    Json k = Json::object(), f = Json::array();
    for (const auto& [name, v] : knobs) k[name] = v;
    for (std::size_t i = 0; i < top; ++i) f.push_back(Json{{"feature", scores[i].feature}, {"score", scores[i].score}});
    std::cout << Json{{"model_id", record.id},
                      {"kind", record.kind},
                      {"feature_version", record.feature_version},
                      {"records", record.n_records},
                      {"metrics", record.metrics},
                      {"knob_importance", k},
                      {"top_features", f}}
                     .dump(2)
              << '\n';
    return 0;
  }
  std::printf("model %lld: %s, feature version %d, trained on %lld records of %s\nmetrics: %s\n",
              static_cast<long long>(record.id), record.kind.c_str(), record.feature_version,
              static_cast<long long>(record.n_records), info.name.c_str(), record.metrics.dump().c_str());
  std::printf("\nimportance per knob (value + log2 features)\n");
  for (const auto& [name, v] : knobs) std::printf("  %-24s %12.4g\n", name.c_str(), v);
  std::printf("\ntop %zu features\n", top);
  const auto& infos = costmodel::feature_infos();
  for (std::size_t i = 0; i < top; ++i) {
    const auto& meaning = infos[costmodel::feature_index(scores[i].feature)].meaning;
    std::printf("  %-24s %12.4g  %s\n", scores[i].feature.c_str(), scores[i].score, meaning.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-model: train, evaluate and inspect the learned cost model"};
  Args a;
  app.require_subcommand(1);
  auto common = [&](CLI::App* sub) {
    sub->add_option("--db", a.db, "tuning database file")->required();
    sub->add_option("--target", a.target, "preset, target file/JSON, or stored target name/key")->required();
    sub->add_option("--kind", a.kind, "xgboost or linear")->check(CLI::IsMember({"xgboost", "linear"}));
    sub->add_flag("--json", a.json, "print JSON");
  };
  auto* tr = app.add_subcommand("train", "fit on every record of the target and store the model");
  common(tr);
  tr->add_option("--objective", a.objective, "rank:pairwise or reg:squarederror (xgboost)")
      ->check(CLI::IsMember({"rank:pairwise", "reg:squarederror"}));
  tr->add_option("--holdout", a.holdout, "fraction of each workload held out for the stored metrics");
  tr->add_option("--seed", a.seed, "seed of the model and the holdout split")->check(tools::non_negative(a.seed));
  auto* ev = app.add_subcommand("eval", "score every record with the latest stored model");
  common(ev);
  auto* in = app.add_subcommand("inspect", "stored model metadata and feature importance");
  common(in);
  in->add_option("--top", a.top, "features to list");
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    atvoss::db::require_database(a.db, "--db", true);  // every command reads an existing database
    if (tr->parsed()) return train(a);
    if (ev->parsed()) return eval(a);
    return inspect(a);
  });
}
