// Variant: a model under one set of schedules, one per task, each with its noise-free time,
// the transposes those schedules' layouts pay and the nodes not tuned. The plan (plan.hpp)
// decides one such set; the report shows others beside it (model_evaluation.hpp) to explain it.
// Plain value types.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "core/schedule.hpp"

namespace atvoss::plan {

// One op under one variant.
struct VariantOp {
  std::string task;
  int weight = 1;
  std::optional<Measurement> measurement;           // nullopt: no schedule for this variant
  std::string note;                                 // e.g. "no fusion-free record; default used"
  std::optional<Schedule> schedule = std::nullopt;  // the schedule timed
  // Where the schedule comes from: "measured", "zero-shot" or "default" (TableEntry).
  std::string provenance = "";
};

// A transpose the model pays between two layers whose layouts differ (layout_choice.hpp).
struct LayoutChangeRow {
  std::string from_layer, to_layer;
  std::string from, to;  // layout names
  std::string tensor;    // the transpose workload's label
  double time_us = 0;
  Json transpose = nullptr;  // the transpose workload, for --json
};

struct ModelVariant {
  std::string name;         // "(a) vendor default", ...
  std::string description;  // how its schedules were chosen
  std::vector<VariantOp> ops;
  // The transposes between layers of differing layouts these schedules pay.
  std::vector<LayoutChangeRow> layout_changes = {};
  // The nodes that are not tuned, timed by the fallback rule (frontend/fallback.hpp).
  double fallback_us = 0;
  // sum(weight * time) over ops with a time, plus the transposes and the fallback nodes.
  double end_to_end_us() const;
  double throughput(int batch) const;  // samples per second
};

}  // namespace atvoss::plan
