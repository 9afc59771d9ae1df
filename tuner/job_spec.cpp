#include "tuner/job_spec.hpp"

#include "tuner/tuning_limits.hpp"

#include <set>

#include "core/error.hpp"
#include "costmodel/model_registry.hpp"

namespace atvoss::tuner {
namespace {

const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {"name",
                                               "target",
                                               "model",
                                               "batch",
                                               "workloads",
                                               "trials",
                                               "strategy",
                                               "strategy_config",
                                               "cost_model",
                                               "scheduler",
                                               "early_stopping",
                                               "batch_size",
                                               "repeat",
                                               "seed",
                                               "database",
                                               "farm",
                                               "export",
                                               "report",
                                               "precision",
                                               "fusion_rules",
                                               "parallel",
                                               "model_plan",
                                               "mode",
                                               "optimizer",
                                               "mixed_precision",
                                               "launch"};
  return fields;
}

std::string optional_string(const Json& j, const char* field, std::string fallback) {
  if (!j.contains(field)) return fallback;
  if (!j[field].is_string()) {
    throw_bad_input(std::string("job spec: field '") + field + "' must be a string, got " + j[field].dump());
  }
  return j[field].get<std::string>();
}

std::int64_t optional_int(const Json& j, const char* field, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  if (!j.contains(field)) return fallback;
  const Json& v = j[field];
  if (!v.is_number_integer()) {
    throw_bad_input(std::string("job spec: field '") + field + "' must be an integer, got " + v.dump());
  }
  const std::int64_t x =
      v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX ? INT64_MAX : v.get<std::int64_t>();
  if (x < lo || x > hi) {
    throw_bad_input(std::string("job spec: field '") + field + "' must be in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], got " + v.dump());
  }
  return x;
}

std::vector<WeightedWorkload> read_workloads(const Json& j) {
  if (!j.is_array()) throw_bad_input("job spec: field 'workloads' must be an array");
  std::vector<WeightedWorkload> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "job spec: workloads[" + std::to_string(i) + "]";
    const Json& item = j[i];
    if (!item.is_object()) throw_bad_input(where + " must be an object {workload, weight}");
    for (const auto& [k, v] : item.items()) {
      if (k != "workload" && k != "weight" && k != "name") {
        throw_bad_input(where + ": unknown field '" + k + "'; expected workload, weight, name");
      }
    }
    if (!item.contains("workload")) throw_bad_input(where + ": missing field 'workload'");
    WeightedWorkload w;
    try {
      w.workload = Workload::from_json(item["workload"]);
    } catch (const Error& e) {
      throw_bad_input(where + ".workload: " + e.what());
    }
    w.weight = static_cast<int>(optional_int(item, "weight", 1, 1, 1000000));
    w.name = optional_string(item, "name", w.workload.label());
    out.push_back(std::move(w));
  }
  return out;
}

std::string fusion_rule_list() {
  std::string list;
  for (const auto& r : lowering::fusion_rules()) list += (list.empty() ? "" : ", ") + r.name;
  return list;
}

// Each entry: a rule's name (registered already) or a declaration (fusion_rules.hpp).
void read_fusion_rules(const Json& j, JobSpec& s) {
  if (!j.is_array()) {
    throw_bad_input("job spec: field 'fusion_rules' must be an array of rule names or declarations");
  }
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "job spec: fusion_rules[" + std::to_string(i) + "]";
    if (!j[i].is_string()) {
      s.fusion_rules.push_back(lowering::fusion_rule_from_json(j[i], where));
      continue;
    }
    const std::string name = j[i].get<std::string>();
    if (!lowering::registered_fusion_rule(name)) {
      throw_bad_input(where + ": no fusion rule named '" + name + "' is registered; registered: " + fusion_rule_list());
    }
    s.fusion_rule_names.push_back(name);
  }
}

ParallelSpec read_parallel(const Json& j, const std::string& job) {
  const std::string where = "job spec: field 'parallel'";
  if (!j.is_object()) throw_bad_input(where + " must be an object");
  for (const auto& [k, v] : j.items()) {
    if (k != "devices" && k != "topology" && k != "mode" && k != "plan" && k != "trials") {
      throw_bad_input(where + ": unknown field '" + k + "'; expected devices, topology, mode, plan, trials");
    }
  }
  ParallelSpec p;
  if (!j.contains("devices")) throw_bad_input(where + ": missing field 'devices'");
  p.devices = static_cast<int>(optional_int(j, "devices", 1, 1, 65536));
  const int servers = (p.devices + 7) / 8;
  p.topology =
      j.contains("topology") && j["topology"].is_object()
          ? j["topology"].dump()
          : optional_string(j, "topology",
                            servers > 1 ? "ascend910b-server8-x" + std::to_string(servers) : "ascend910b-server8");
  p.mode = optional_string(j, "mode", p.mode);
  if (p.mode != "training" && p.mode != "inference") {
    throw_bad_input(where + ": field 'mode' must be training or inference, got '" + p.mode + "'");
  }
  p.plan_path = optional_string(j, "plan", job + "-plan.json");
  if (p.plan_path.empty()) throw_bad_input(where + ": field 'plan' must not be empty");
  p.trials = static_cast<int>(optional_int(j, "trials", 64, 1, 100000));
  return p;
}

// The model plan's default path, beside the table: "x-table.json" -> "x-model-plan.json",
// "x.json" -> "x-model-plan.json", else "x.model-plan.json".
std::string model_plan_beside(const std::string& table) {
  for (const std::string suffix : {"-table.json", ".json"}) {
    if (table.size() > suffix.size() && table.compare(table.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return table.substr(0, table.size() - suffix.size()) + "-model-plan.json";
    }
  }
  return table + ".model-plan.json";
}

// "mode", and a training step's "optimizer" and "mixed_precision". REQUIRES: s.model read.
void read_mode(const Json& j, JobSpec& s) {
  s.mode = optional_string(j, "mode", s.mode);
  if (s.mode != "inference" && s.mode != "training") {
    throw_bad_input("job spec: field 'mode' must be inference or training, got '" + s.mode + "'");
  }
  if (s.model.empty() && s.mode == "training") {
    throw_bad_input("job spec: field 'mode' training needs a 'model'; this job has workloads only");
  }
  if (!j.contains("optimizer") && !j.contains("mixed_precision")) return;
  if (s.mode != "training" && !s.model.ends_with("-train")) {
    throw_bad_input("job spec: fields 'optimizer' and 'mixed_precision' apply to a training step ('mode': training)");
  }
  if (j.contains("optimizer")) {
    s.training.optimizer =
        frontend::TrainingSetup::optimizer_named(optional_string(j, "optimizer", ""), "job spec: field 'optimizer'");
  }
  if (j.contains("mixed_precision")) {
    if (!j["mixed_precision"].is_boolean()) {
      throw_bad_input("job spec: field 'mixed_precision' must be true or false, got " + j["mixed_precision"].dump());
    }
    s.training.mixed_precision = j["mixed_precision"].get<bool>();
  }
}

}  // namespace

JobSpec JobSpec::from_json(const Json& j) {
  if (!j.is_object()) throw_bad_input("job spec: expected a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (!known_fields().count(k)) {
      std::string list;
      for (const auto& f : known_fields()) list += (list.empty() ? "" : ", ") + f;
      throw_bad_input("job spec: unknown field '" + k + "'; expected one of " + list);
    }
  }
  JobSpec s;
  s.source = j;
  if (!j.contains("name")) throw_bad_input("job spec: missing field 'name'");
  s.name = optional_string(j, "name", "");
  if (s.name.empty()) throw_bad_input("job spec: field 'name' must not be empty");
  if (!j.contains("target")) throw_bad_input("job spec: missing field 'target'");
  if (j["target"].is_object()) {
    s.target = j["target"].dump();
  } else {
    s.target = optional_string(j, "target", "");
    if (s.target.empty()) throw_bad_input("job spec: field 'target' must name a preset or file");
  }
  s.model = optional_string(j, "model", "");
  s.batch = static_cast<int>(optional_int(j, "batch", 0, 1, 4096));
  read_mode(j, s);
  if (j.contains("launch")) s.launch = launch_mode_named(optional_string(j, "launch", ""), "job spec: field 'launch'");
  if (j.contains("workloads")) s.workloads = read_workloads(j["workloads"]);
  if (j.contains("precision")) s.precision = frontend::parse_precision(j["precision"]);
  if (s.model.empty() && s.workloads.empty()) {
    throw_bad_input("job spec: give 'model' (a zoo name or .onnx file) and/or 'workloads'");
  }
  if (!j.contains("trials")) throw_bad_input("job spec: missing field 'trials'");
  s.trials = static_cast<int>(optional_int(j, "trials", 0, limits::trials.lo, limits::trials.hi));
  s.strategy = optional_string(j, "strategy", s.strategy);
  if (j.contains("strategy_config")) {
    s.strategy_config = j["strategy_config"];
    if (!s.strategy_config.is_object()) {
      throw_bad_input("job spec: field 'strategy_config' must be a JSON object, got " + s.strategy_config.dump());
    }
  }
  s.cost_model = optional_string(j, "cost_model", s.cost_model);
  costmodel::require_cost_model(s.cost_model, "job spec: field 'cost_model'");
  s.scheduler = optional_string(j, "scheduler", s.scheduler);
  if (s.scheduler != "gradient" && s.scheduler != "round_robin") {
    throw_bad_input("job spec: field 'scheduler' must be gradient or round_robin, got '" + s.scheduler + "'");
  }
  if (j.contains("fusion_rules")) read_fusion_rules(j["fusion_rules"], s);
  s.early_stopping =
      static_cast<int>(optional_int(j, "early_stopping", 0, limits::early_stopping.lo, limits::early_stopping.hi));
  s.batch_size = static_cast<int>(optional_int(j, "batch_size", 16, limits::batch_size.lo, limits::batch_size.hi));
  s.repeat = static_cast<int>(optional_int(j, "repeat", 3, limits::repeat.lo, limits::repeat.hi));
  s.seed = static_cast<std::uint64_t>(optional_int(j, "seed", 0, 0, INT64_MAX));
  s.database = optional_string(j, "database", s.name + ".db");
  s.farm = optional_string(j, "farm", "");
  if (!s.farm.empty() && s.farm.find(':') == std::string::npos) {
    throw_bad_input("job spec: field 'farm' must be host:port, got '" + s.farm + "'");
  }
  s.export_path = optional_string(j, "export", s.name + "-table.json");
  s.report_path = optional_string(j, "report", s.name + "-report.html");
  s.model_plan_path = optional_string(j, "model_plan", model_plan_beside(s.export_path));
  for (const auto* p : {&s.database, &s.export_path, &s.report_path, &s.model_plan_path}) {
    if (p->empty()) throw_bad_input("job spec: paths (database, export, report, model_plan) must not be empty");
  }
  if (j.contains("parallel")) s.parallel = read_parallel(j["parallel"], s.name);
  if (s.parallel && s.mode == "training" && s.parallel->mode == "inference") {
    throw_bad_input("job spec: field 'parallel.mode' is inference, but field 'mode' tunes the training step");
  }
  return s;
}

JobSpec JobSpec::load(const std::string& path) {
  Json j;
  try {
    j = load_json_file(path, "job spec");
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::io) throw_bad_input(e.what());  // names the job spec already
    throw;
  }
  return from_json(j);
}

}  // namespace atvoss::tuner
