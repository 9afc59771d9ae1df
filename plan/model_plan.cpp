#include "plan/model_plan.hpp"

#include <cmath>

#include "core/error.hpp"
#include "frontend/graph_json.hpp"

namespace atvoss::plan {
namespace {

constexpr const char* kFormat = "atvoss-model-plan";

const Json& require_array(const Json& obj, std::string_view name, std::string_view context) {
  const Json& a = require_field(obj, name, context);
  if (!a.is_array()) {
    throw Error(ErrorKind::bad_input, std::string(context) + ": field '" + std::string(name) + "' must be an array");
  }
  return a;
}

// A time: finite and not negative.
double require_time(const Json& obj, std::string_view name, const std::string& context) {
  const double v = require_number(obj, name, context);
  if (!std::isfinite(v) || v < 0) {
    throw Error(ErrorKind::bad_input,
                context + ": field '" + std::string(name) + "' must be a finite time >= 0 us, got " + obj[name].dump());
  }
  return v;
}

// A nested reader's refusal (a workload's, a schedule's, a target's...) names where in the plan
// it was: "model plan: task 3 'fc': field 'workload': dim 'K' must be an integer".
template <typename Read>
auto nested(const std::string& context, std::string_view field, Read read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(e.kind(), context + ": field '" + std::string(field) + "': " + e.what());
  }
}

Json task_json(const PlannedTask& t) {
  return {{"name", t.name},
          {"workload", t.workload.to_json()},
          {"weight", t.weight},
          {"schedule", t.schedule.to_json()},
          {"time_us", t.time_us},
          {"provenance", t.provenance},
          {"default_us", t.default_us},
          {"layout", t.layout ? Json(*t.layout) : Json(nullptr)},
          {"check", t.check}};
}

PlannedTask task_of(const Json& j, const std::string& context) {
  require_object(j, context);
  PlannedTask t;
  t.name = require_string(j, "name", context);
  const std::string ctx = context + " '" + t.name + "'";
  t.workload = nested(ctx, "workload", [&] { return Workload::from_json(require_field(j, "workload", ctx)); });
  t.weight = integer_as<int>(require_field(j, "weight", ctx), "weight", ctx);
  t.schedule = nested(ctx, "schedule", [&] { return Schedule::from_json(require_field(j, "schedule", ctx)); });
  t.time_us = require_time(j, "time_us", ctx);
  t.provenance = require_string(j, "provenance", ctx);
  if (t.provenance != kMeasured && t.provenance != kZeroShot && t.provenance != kDefault) {
    throw Error(ErrorKind::bad_input, ctx + ": field 'provenance' must be measured, zero-shot or default");
  }
  t.default_us = require_time(j, "default_us", ctx);
  if (const Json& l = require_field(j, "layout", ctx); !l.is_null()) t.layout = require_string(j, "layout", ctx);
  t.check = require_string(j, "check", ctx);
  return t;
}

Json transpose_json(const PlannedTranspose& t) {
  return {{"from_layer", t.from_layer},       {"to_layer", t.to_layer}, {"from", t.from}, {"to", t.to},
          {"workload", t.workload.to_json()}, {"time_us", t.time_us}};
}

PlannedTranspose transpose_of(const Json& j, const std::string& context) {
  require_object(j, context);
  return {require_string(j, "from_layer", context),
          require_string(j, "to_layer", context),
          require_string(j, "from", context),
          require_string(j, "to", context),
          nested(context, "workload", [&] { return Workload::from_json(require_field(j, "workload", context)); }),
          require_time(j, "time_us", context)};
}

Json run_json(const PlannedRun& r) {
  Json nodes = Json::array();
  for (const auto& n : r.nodes) {
    nodes.push_back(
        {{"name", n.name}, {"op", n.op}, {"start_us", n.start_us}, {"end_us", n.end_us}, {"stream", n.stream}});
  }
  return {{"knobs", r.knobs.to_json()},
          {"nodes", nodes},
          {"memory", r.memory.to_json()},
          {"default_scheduled_us", r.default_scheduled_us},
          {"unplaced_us", r.unplaced_us}};
}

PlannedRun run_of(const Json& j) {
  const std::string ctx = "model plan: graph_run";
  require_object(j, ctx);
  PlannedRun r;
  r.knobs = nested(ctx, "knobs", [&] { return Schedule::from_json(require_field(j, "knobs", ctx)); });
  for (const char* k : {"rank_weight", "time_weight", "affinity_weight", "stages", "micro_batches"}) {
    if (!r.knobs.has(k)) throw Error(ErrorKind::bad_input, ctx + ": field 'knobs' lacks '" + k + "'");
  }
  const Json& nodes = require_array(j, "nodes", ctx);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string c = ctx + ": node " + std::to_string(i);
    require_object(nodes[i], c);
    r.nodes.push_back({require_string(nodes[i], "name", c), require_string(nodes[i], "op", c),
                       require_time(nodes[i], "start_us", c), require_time(nodes[i], "end_us", c),
                       integer_as<int>(require_field(nodes[i], "stream", c), "stream", c)});
  }
  r.memory = nested(ctx, "memory", [&] { return execution::MemoryPlan::from_json(require_field(j, "memory", ctx)); });
  r.default_scheduled_us = require_time(j, "default_scheduled_us", ctx);
  r.unplaced_us = require_time(j, "unplaced_us", ctx);
  return r;
}

// The graph knobs within the graph space's ranges (graph_tuning.hpp), so that a hand-edited
// plan cannot ask the pipeline for no stage or a micro-batch that does not divide the batch.
void check_knobs(const Schedule& k, int batch) {
  const std::string ctx = "model plan: graph_run: field 'knobs'";
  for (const char* w : {"rank_weight", "time_weight", "affinity_weight"}) {
    if (k.at(w) < 0 || k.at(w) > 4) throw Error(ErrorKind::bad_input, ctx + ": '" + w + "' must be in 0..4");
  }
  if (k.at("stages") < 1 || k.at("stages") > 4) throw Error(ErrorKind::bad_input, ctx + ": 'stages' must be in 1..4");
  const std::int64_t m = k.at("micro_batches");
  if (m < 1 || m > 8 || batch % m != 0) {
    throw Error(ErrorKind::bad_input,
                ctx + ": 'micro_batches' must be in 1..8 and divide the batch " + std::to_string(batch));
  }
}

}  // namespace

Json ModelPlan::to_json() const {
  Json tasks_json = Json::array();
  for (const auto& t : tasks) tasks_json.push_back(task_json(t));
  Json transposes_json = Json::array();
  for (const auto& t : transposes) transposes_json.push_back(transpose_json(t));
  return {{"format", kFormat},
          {"version", kVersion},
          {"job", job},
          {"model", model},
          {"model_sha256", model_sha256.empty() ? Json(nullptr) : Json(model_sha256)},
          {"batch", batch},
          {"target", target.to_json()},
          {"target_key", target.key()},
          {"end_to_end_us", end_to_end_us},
          {"default_us", default_us},
          {"meaning", meaning},
          {"model_check", model_check},
          {"tasks", tasks_json},
          {"transposes", transposes_json},
          {"fallback_us", fallback_us},
          {"graph", graph.empty() ? Json(nullptr) : frontend::graph_to_json(graph)},
          {"graph_run", run ? run_json(*run) : Json(nullptr)}};
}

ModelPlan ModelPlan::from_json(const Json& j) {
  const std::string ctx = "model plan";
  require_object(j, ctx);
  if (require_string(j, "format", ctx) != kFormat) {
    throw Error(ErrorKind::bad_input, ctx + ": field 'format' must be \"" + std::string(kFormat) + "\"");
  }
  if (require_int(j, "version", ctx) != kVersion) {
    throw Error(ErrorKind::bad_input, ctx + ": field 'version' must be " + std::to_string(kVersion) + ", got " +
                                          j["version"].dump() + " (written by another atvoss)");
  }
  ModelPlan p;
  p.job = require_string(j, "job", ctx);
  p.model = require_string(j, "model", ctx);
  if (!require_field(j, "model_sha256", ctx).is_null()) p.model_sha256 = require_string(j, "model_sha256", ctx);
  p.batch = integer_as<int>(require_field(j, "batch", ctx), "batch", ctx);
  if (p.batch < 1) throw Error(ErrorKind::bad_input, ctx + ": field 'batch' must be >= 1");
  p.target = nested(ctx, "target", [&] { return Target::from_json(require_field(j, "target", ctx)); });
  if (p.target.key() != require_string(j, "target_key", ctx)) {
    throw Error(ErrorKind::bad_input, ctx + ": field 'target_key' does not match field 'target' (edited?)");
  }
  p.end_to_end_us = require_time(j, "end_to_end_us", ctx);
  p.default_us = require_time(j, "default_us", ctx);
  p.meaning = require_string(j, "meaning", ctx);
  p.model_check = require_string(j, "model_check", ctx);
  const Json& tasks = require_array(j, "tasks", ctx);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    p.tasks.push_back(task_of(tasks[i], ctx + ": task " + std::to_string(i)));
  const Json& transposes = require_array(j, "transposes", ctx);
  for (std::size_t i = 0; i < transposes.size(); ++i) {
    p.transposes.push_back(transpose_of(transposes[i], ctx + ": transpose " + std::to_string(i)));
  }
  p.fallback_us = require_time(j, "fallback_us", ctx);
  if (const Json& g = require_field(j, "graph", ctx); !g.is_null()) {
    p.graph = nested(ctx, "graph", [&] { return frontend::graph_from_json(g); });
  }
  if (const Json& r = require_field(j, "graph_run", ctx); !r.is_null()) p.run = run_of(r);
  if (p.run.has_value() == p.graph.empty()) {
    throw Error(ErrorKind::bad_input, ctx + ": fields 'graph' and 'graph_run' must be both null or both given");
  }
  if (p.run) check_knobs(p.run->knobs, p.batch);
  return p;
}

ModelPlan ModelPlan::load(const std::string& path) {
  const Json j = load_json_file(path, "model plan '" + path + "'");
  try {
    return from_json(j);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
}

}  // namespace atvoss::plan
