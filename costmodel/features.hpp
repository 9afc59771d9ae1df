// Features: the fixed-length vector that describes one schedule of one workload on one
// target to a cost model, derived analytically from Workload, Target and Schedule
// WITHOUT running the simulator (the model must be much cheaper than a measurement).
//
// Layout (version kFeatureVersion; every row has feature_count() floats, always finite):
//   1. template flags: which op template produced the row (matmul-like, conv, depthwise,
//      row op, generic/recorded);
//   2. derived quantities of the tiling: tile bytes per operand, buffer occupancy per
//      level with async_copy_depth copies in flight, tile arithmetic intensity, tiles,
//      waves and tail-wave efficiency, padding waste, K steps, estimated GM bytes per
//      level, GM copy size against the 16 KB knee, kernels launched, fused epilogue ops,
//      conv halo overhead, and a crude roofline time estimate per pipe;
//   3. workload (log FLOPs, log bytes, implicit-GEMM dims) and target (peak, bandwidths,
//      capacities) so that one model serves many workloads and targets;
//   4. every named knob of the fixed contract (common.md) as its value and log2, 0 where
//      the op has no such knob;
//   5. generic slots for {"op":"recorded"} workloads, whose knobs are arbitrary: value and
//      signed log2 of each knob in the schedule's canonical (sorted-name) order, which is
//      the same for every schedule of one recorded space. At most kGenericKnobSlots knobs.
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
#include "core/target.hpp"
#include "core/workload.hpp"

namespace atvoss::costmodel {

class TilingContext;  // tile_analysis.hpp

inline constexpr int kFeatureVersion = 3;
inline constexpr std::size_t kGenericKnobSlots = 16;
// Bytes per GM copy below which MTE2 does not reach full bandwidth (CALIBRATION.md).
inline constexpr double kCopyKneeBytes = 16.0 * 1024.0;

int feature_version();

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
  bool generic_ = false;                          // recorded space: knob slots only
  std::shared_ptr<const TilingContext> tiling_;  // null for recorded spaces
  std::vector<float> context_;  // workload + target block, copied into every row
  double floor_us_ = 0;         // physics floor of the workload, for est_roofline_fraction
  double mte2_bytes_per_cycle_ = 0;
};

FeatureMatrix featurize(const Workload& workload, const Target& target,
                        std::span<const Schedule> schedules);
std::vector<float> features(const Workload& workload, const Target& target,
                            const Schedule& schedule);

}  // namespace atvoss::costmodel
