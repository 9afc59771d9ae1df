// WorkloadGroups: turning a stream of measured records into the per-workload groups a
// cost model trains on, and the two things done with such groups outside the models: a
// seeded holdout split, and the importance of each knob summed over its features. One
// builder serves the tuner's transfer prior, model evaluation and atvoss-model.
// Not thread-safe: one caller builds a set of groups.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel {

class GroupBuilder {
 public:
  // per_workload: samples kept per workload (later ones are dropped); 0 keeps all.
  explicit GroupBuilder(int per_workload = 0) : per_workload_(per_workload) {}
  // Adds one sample of workload w on target t; returns false if the workload's group is
  // full and the sample was dropped.
  bool add(const Workload& w, const Target& t, Trial sample);
  std::size_t samples() const { return samples_; }
  // The groups, in workload-key order. The builder is empty afterwards.
  std::vector<WorkloadGroup> take();

 private:
  int per_workload_;
  std::size_t samples_ = 0;
  std::map<std::string, WorkloadGroup> groups_;
};

std::size_t count_samples(const std::vector<WorkloadGroup>& groups);

// Seeded split of every group's samples: each sample goes to `test` with probability
// `holdout`, else to `train`. Both get one group per input group, in order.
void split_holdout(const std::vector<WorkloadGroup>& all, double holdout, std::uint64_t seed,
                   std::vector<WorkloadGroup>& train, std::vector<WorkloadGroup>& test);

// Importance per knob, highest first: the sum over the knob's own features (value and
// log2; for measured tables its generic slot, named from the groups' schedules).
std::vector<std::pair<std::string, double>> knob_importance(const std::vector<FeatureScore>& scores,
                                                            const std::vector<WorkloadGroup>& groups);

}  // namespace atvoss::costmodel
