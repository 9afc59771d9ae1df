#include "costmodel/internal/training_set.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace atvoss::costmodel {
namespace {

bool usable_ok(const Trial& s) { return s.status == Status::ok && s.time_us > 0; }

double best_time(const WorkloadGroup& g) {
  double best = std::numeric_limits<double>::infinity();
  for (const Trial& s : g.samples) {
    if (usable_ok(s)) best = std::min(best, s.time_us);
  }
  return best;
}

}  // namespace

double sample_label(const Trial& sample, double best_time_us) {
  if (usable_ok(sample)) return best_time_us / sample.time_us;
  if (is_candidate_error(sample.status)) return 0.0;
  return -1.0;  // infrastructure error or ok without a time: no information
}

std::vector<float> row_weights(const TrainingSet& set) {
  std::vector<float> w;
  w.reserve(set.x.rows);
  for (std::size_t g = 0; g < set.group_sizes.size(); ++g) w.insert(w.end(), set.group_sizes[g], set.group_weights[g]);
  return w;
}

std::size_t count_ok_samples(std::span<const WorkloadGroup> groups) {
  std::size_t n = 0;
  for (const auto& g : groups) n += std::count_if(g.samples.begin(), g.samples.end(), usable_ok);
  return n;
}

TrainingSet build_training_set(std::span<const WorkloadGroup> groups) {
  TrainingSet set;
  set.x.cols = feature_count();
  for (const WorkloadGroup& g : groups) {
    if (!(g.weight > 0) || !std::isfinite(g.weight)) {
      throw_bad_input("cost model training: a workload group's 'weight' must be a positive number, got " +
                      std::to_string(g.weight));
    }
    const double best = best_time(g);
    if (!(best < std::numeric_limits<double>::infinity())) continue;
    const Featurizer featurizer(g.workload, g.target);
    unsigned kept = 0;
    for (const Trial& s : g.samples) {
      const double label = sample_label(s, best);
      if (label < 0) continue;
      set.x.data.resize((set.x.rows + 1) * set.x.cols);
      featurizer.write(s.schedule, set.x.row(set.x.rows));
      ++set.x.rows;
      set.labels.push_back(float(label));
      if (label > 0) ++set.ok_rows;
      ++kept;
    }
    set.group_sizes.push_back(kept);
    set.group_weights.push_back(float(g.weight));
  }
  if (set.ok_rows == 0) {
    throw_bad_input("cost model training: no workload group has an ok measurement with a time");
  }
  return set;
}

}  // namespace atvoss::costmodel
