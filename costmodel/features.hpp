// Features: the fixed-length vector that describes one schedule of one workload on one
// target to a cost model. It is read from the schedule's KernelPlan (lowering/) and the
// Target's published numbers (peak, bandwidths, capacities) — never from the simulator,
// whose equations a model must not carry (docs/architecture.md).
//
// Layout (version kFeatureVersion; every row has feature_count() floats, always finite;
// costmodel/README.md lists every feature):
//   1. template flags: which op family produced the row (matmul, conv, depthwise, rows,
//      measured table);
//   2. the plan: GM copies of one load (bytes, row length, alignment), L1 -> L0 bytes and
//      matrix/vector work per step, the occupancy of each memory level of the target's
//      compute unit (lowering/compute_unit.hpp; since version 7 by the level's position,
//      nearest the compute first, not by the NPU's buffer names) with async_copy_depth
//      buffers in flight, tiles, waves, tail, padding, trip counts, GM bytes read and
//      written, operand re-reads and their reuse distance against the last level's
//      capacity, fused and unfused epilogue ops, kernels, conv halo;
//   3. the roofline prior: each resource's work at its published rate, and the total;
//   4. workload (log FLOPs, log bytes, implicit-GEMM dims) and target (peak, bandwidths,
//      the capacity of each level) so that one model serves many workloads and targets;
//   5. every named knob (lowering/knob_names.hpp: the NPU templates' ten, then the host's
//      micro_m, micro_n and threads) as its value and log2, 0 where the op has no such knob;
//   6. generic slots for workloads without a lowering (measured tables), whose knobs are
//      arbitrary: value and signed log2 of each knob in the schedule's canonical
//      (sorted-name) order, the same for every schedule of one table. At most
//      kGenericKnobSlots knobs.
// One layout for all templates (absent quantities are 0) lets a single model train on a
// database holding many ops, and keeps XGBoost away from variable-length rows
// (apache/tvm#2097). Any change to names, order or meaning must bump kFeatureVersion:
// a model stores the version it was trained with and refuses rows of another.
// Thread-safety: everything here is a pure function; Featurizer is immutable after
// construction and safe to share between threads.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "lowering/compute_unit.hpp"

namespace atvoss::costmodel {

inline constexpr int kFeatureVersion = 7;
inline constexpr std::size_t kGenericKnobSlots = 16;

int feature_version();

// Whether rows of w carry plan features (false for measured tables: knob slots only).
bool has_plan_features(const Workload& w);

struct FeatureInfo {
  std::string name;
  std::string meaning;
  std::string unit;  // "flag", "bytes(log2)", "fraction", "count", ...
};

// Every feature in row order; size() == feature_count().
const std::vector<FeatureInfo>& feature_infos();
std::size_t feature_count();
// Index of a feature by name; internal error if unknown (a programming mistake).
std::size_t feature_index(const std::string& name);

// Row-major matrix of features, rows x feature_count().
struct FeatureMatrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<float> data;

  std::span<const float> row(std::size_t i) const { return {data.data() + i * cols, cols}; }
  std::span<float> row(std::size_t i) { return {data.data() + i * cols, cols}; }
};

// Precomputes the workload- and target-level part once, so featurising thousands of
// candidates of one workload costs only the per-schedule work.
class Featurizer {
 public:
  // bad_input if the workload's op has no template (never for known_ops()).
  Featurizer(const Workload& workload, const Target& target);

  // Writes feature_count() floats to out. A knob missing from the schedule takes a
  // neutral default (tiles: 16, depth/steps: 1, order/fusion: 0) instead of failing,
  // so a partially specified schedule can still be ranked. For recorded workloads,
  // bad_input if the schedule has more than kGenericKnobSlots knobs.
  void write(const Schedule& schedule, std::span<float> out) const;

  FeatureMatrix featurize(std::span<const Schedule> schedules) const;

 private:
  Workload workload_;
  Target target_;
  bool generic_ = false;     // no lowering (measured table): knob slots only
  std::vector<Knob> knobs_;  // the op's knobs, to complete partial schedules
  // Each knob lowerable() keeps, by name, with the least and most value it leaves as is: a
  // schedule within them is lowered without being copied (lowerable_as_is).
  struct KnobRange {
    std::string name;
    std::int64_t lo, hi;
    bool required;  // a space knob (the host-only ones are kept only when given)
  };
  std::vector<KnobRange> ranges_;  // sorted by name, as Schedule keeps its knobs
  bool lowerable_as_is(const Schedule& s) const;
  lowering::MemoryLevels levels_;  // the target's compute unit's, for the occupancies
  std::vector<float> context_;     // workload + target block, copied into every row
  double floor_us_ = 0;            // physics floor of the workload, for est_roofline_fraction
  double compulsory_bytes_ = 0;    // the workload's, asked once: each row's traffic features read it
};

FeatureMatrix featurize(const Workload& workload, const Target& target, std::span<const Schedule> schedules);
std::vector<float> features(const Workload& workload, const Target& target, const Schedule& schedule);

}  // namespace atvoss::costmodel
