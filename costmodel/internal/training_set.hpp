// TrainingSet: WorkloadGroups turned into what a learner consumes — a feature matrix,
// one label per row and the row count of each workload group (rows of a group are
// contiguous, as XGBoost's ranking objectives require).
//
// Labels follow TVM: label = best ok time in the group / the record's time, so the
// group's best schedule is 1, a schedule twice as slow is 0.5, and labels of different
// workloads share one scale. How failed records enter training:
//   - candidate errors (invalid, compile_error, runtime_error, wrong_answer, timeout)
//     are facts about the schedule, so they stay in with label 0: the model learns to
//     rank them below every schedule that ran (the lowest possible throughput), which is
//     what a search wants — recorded spaces in particular have large failed regions;
//   - infrastructure errors (worker_lost, session_timeout, error) say nothing about the
//     schedule and are dropped, as are ok records without a positive time;
//   - a group with no ok record has no scale for its labels and is dropped whole.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "costmodel/cost_model.hpp"
#include "costmodel/features.hpp"

namespace atvoss::costmodel {

struct TrainingSet {
  FeatureMatrix x;
  std::vector<float> labels;
  std::vector<unsigned> group_sizes;  // one per kept group, summing to x.rows
  std::vector<float> group_weights;   // WorkloadGroup::weight of each kept group
  std::size_t ok_rows = 0;            // rows with a positive label
};

// The weight of each row: its group's.
std::vector<float> row_weights(const TrainingSet& set);

// Label of one sample given the group's best ok time; negative means "drop the sample".
double sample_label(const Trial& sample, double best_time_us);

// Builds the set; bad_input if no group has an ok sample (nothing to learn from).
TrainingSet build_training_set(std::span<const WorkloadGroup> groups);

// Valid (ok, positive time) samples over all groups.
std::size_t count_ok_samples(std::span<const WorkloadGroup> groups);

}  // namespace atvoss::costmodel
