// Lowering: one place that defines, for each op, its schedule knobs and the values
// they take, the structural validity of a schedule (tiles divide the work, buffers
// fit the capacities the Target states) and the KernelPlan a schedule lowers to
// (kernel_plan.hpp). Built-in templates, by op family (M, N, K of the implicit GEMM
// for conv: M = N*Ho*Wo, N = K, K = C*R*S):
//   matmul     tile_m x tile_n output block in L0C; K streamed in tile_k steps,
//              k_steps of them per GM load.
//   conv       output block tile_h x tile_w x tile_n; each load brings the input halo
//              ((tile_h-1)*stride+R rows) for tile_k*k_steps/(R*S) channels plus the
//              weights; the matrix unit walks the block in L0-sized M sub-blocks. An
//              accumulator larger than L0C is computed in row groups. A grouped conv
//              is `groups` convs of C/groups -> K/groups channels, each with its weights.
//              The layout knob (layout.hpp) sets the activations' row lengths in GM
//              and, for NCHW, a transpose to the fractal on the vector unit.
//   depthwise  vector op: tile_h x tile_w x tile_c output, halo input in UB; pooling
//              is the same window without weights.
//   rows       tile_m x tile_n blocks in UB; a row-reducing op (layernorm, softmax)
//              whose tile is narrower than the row needs a second pass over GM. The
//              output follows OpInfo::row_output: one value per row (reduce), the
//              transpose (stores of tile_m x inner elements, which pay for being short:
//              the transpose's cost), or upsampled. An epilogue (elementwise, map) always
//              runs in the same pass.
// Each family's template is an OpLowering of its own (lowering/<family>_template.cpp),
// registered by family as an op outside the built-in families registers its own by name.
// docs/knobs.md describes every knob of these templates (what it sets, its values, the
// default). Pure functions: thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "lowering/kernel_plan.hpp"

namespace atvoss::lowering {

// The lowering of one op: its knobs and its plans. Implementations are immutable.
class OpLowering {
 public:
  virtual ~OpLowering() = default;
  virtual std::vector<Knob> knobs(const Workload& w, const Target& t) const = 0;
  // REQUIRES: every knob of knobs(w, t) is present in s.
  virtual KernelPlan plan(const Workload& w, const Target& t, const Schedule& s) const = 0;
};

// Registers the lowering of an op outside the built-in families (the op itself is
// registered with core's register_op). bad_input if the op already has one.
void register_lowering(const std::string& op, std::shared_ptr<const OpLowering> lowering);

// Whether workload's op has a lowering (false for measured tables).
bool can_lower(const Workload& w);

// bad_input naming the op if it has no lowering.
std::vector<Knob> knobs_for(const Workload& w, const Target& t);

// Lowers s; the plan's verdict says whether it fits. REQUIRES: every knob of
// knobs_for(w, t) is present (ScheduleSpace::check ensures it).
KernelPlan plan_kernel(const Workload& w, const Target& t, const Schedule& s);

// Knobs plus validity (the plan's verdict) for w on t.
ScheduleSpace space_for(const Workload& w, const Target& t);

// A fixed vendor-style default, valid for w on t: the first valid point when each
// knob's values are ordered by closeness to a preferred value. The baseline tuning
// is compared against. bad_input if the space has no valid point.
Schedule default_schedule(const Workload& w, const Target& t);

// "96 KB" style sizes for rejection reasons.
std::string format_bytes(double bytes);

}  // namespace atvoss::lowering
