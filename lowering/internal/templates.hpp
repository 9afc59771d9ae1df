// The built-in op families' lowering templates (lowering.hpp): what they share — the knob
// value lists, the Common view of one (workload, target, schedule), the fit checks whose
// messages name the buffer, the sizes and the async_copy_depth, and the pieces several
// families build their plans from. Each family's template is a file of its own
// (<family>_template.cpp) and registers like a user op's lowering (lowering.cpp). What
// differs between kinds of machine comes from the target's compute unit (compute_unit.hpp).
// Private to lowering/: header-only so that every template inlines them (the search and
// the featuriser lower thousands of schedules). Pure functions: thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/knob_names.hpp"
#include "lowering/layout.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::lowering::templates {

using Values = std::vector<std::int64_t>;

inline const Values kTileSizes = {16, 32, 48, 64, 96, 128, 192, 256};
inline const Values kSpatialSizes = {8, 16, 32, 48, 64, 96, 128, 192, 256};
inline const Values kReductionSizes = {16, 32, 64, 128, 256};
inline const Values kKSteps = {1, 2, 4, 8};
inline const Values kChannelSizes = {16, 32, 64, 128, 256};
inline const Values kRowSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
inline const Values kColumnSizes = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
inline const Values kSequenceTiles = {16, 32, 64, 128, 256, 512, 1024};
// Bytes of one contiguous GM row of a fractal-layout operand (weights, NC1HWC0 blocks).
constexpr double kFractalRowBytes = 512;
// A UB row is stored in whole 32-byte blocks (the vector unit's access granule).
constexpr double kGranuleBytes = 32;

inline double ceil_to(double x, double m) { return std::ceil(x / m) * m; }
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Dims reach 2^40 each, so products of three overflow int64; they saturate.
inline std::int64_t saturating_product(std::initializer_list<std::int64_t> v) {
  double p = 1;
  for (auto x : v) p *= double(x);
  return p >= 9.0e18 ? std::int64_t{9'000'000'000'000'000'000} : std::int64_t(p);
}

// The list's values that fit in the dim, plus the dim itself when it is small
// enough to be a tile: a tile never exceeds its dim. Spatial and row dims below
// 16 (7x7, 14x14 maps) also get 1, 2, 4 so that their spaces still offer a choice
// of row blocks.
inline Values tile_values(std::int64_t dim, const Values& base, bool small_blocks = false) {
  Values v;
  if (small_blocks && dim < 16) v = {1, 2, 4};
  for (auto x : base) {
    if (x <= dim && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  std::erase_if(v, [&](std::int64_t x) { return x > dim; });
  if (dim <= base.back() && std::find(v.begin(), v.end(), dim) == v.end()) v.push_back(dim);
  if (v.empty()) v.push_back(std::min(dim, base.back()));
  std::sort(v.begin(), v.end());
  return v;
}

// Column tiles of a transpose, which moves whole runs of `inner` elements: inner times
// 1, 2, 4, ... within the usual column range, and N itself when it is in that range. A
// power-of-two list has no valid point where inner is not a power of two (a channel
// shuffle's 3136 = 56 x 56); for a power-of-two inner this is that list.
inline Values inner_multiples(std::int64_t n, std::int64_t inner) {
  const std::int64_t lo = kColumnSizes.front(), hi = std::max(kColumnSizes.back(), inner);
  Values v;
  for (std::int64_t t = inner; t <= std::min(n, hi); t *= 2) {
    if (t >= lo || t * 2 > std::min(n, hi)) v.push_back(t);
  }
  if (n <= hi && (v.empty() || v.back() != n)) v.push_back(n);
  if (v.empty()) v.push_back(inner);
  return v;
}

// A unit smaller than the list's first size (an 8x8 fractal against 16, 32, ...) also gets
// tiles of one and two units where the unit asks for them (compute_unit.hpp).
inline Values from_unit(const Values& base, const Target& t, int unit) {
  Values v = base;
  if (!compute_unit(t).adds_unit_tiles()) return v;
  for (std::int64_t u = std::max(1, unit) * 2; u >= 1 && u >= unit; u /= 2) {
    if (u < base.front()) v.insert(v.begin(), u);
  }
  return v;
}

inline Values depth_values(const Target& t) {
  Values v;
  for (int d = 1; d <= std::min(4, t.max_buffers_per_queue); ++d) v.push_back(d);
  return v;
}

inline Values fusion_values(const Workload& w) { return w.epilogue().empty() ? Values{0} : Values{0, 1, 2, 3}; }

inline Knob knob(std::string_view name, Values values) { return {std::string(name), std::move(values)}; }

// what() gives the reason's tail; it is called only when the buffer does not fit: a
// featuriser lowers thousands of valid schedules, and building each message for nothing
// cost it time.
template <typename What>
inline void check_fit(KernelPlan& p, const char* level, double need, double capacity, const What& what) {
  if (!p.verdict.ok || need <= capacity) return;
  p.verdict =
      Verdict::invalid(std::string(level) + ": " + format_bytes(need) + " > " + format_bytes(capacity) + " " + what());
}

inline std::string with_depth(int depth) { return "with async_copy_depth " + std::to_string(depth); }

// Tile extents along one axis: (size, how many) for interior and edge tiles.
inline std::vector<std::pair<double, double>> axis_tiles(std::int64_t dim, std::int64_t tile) {
  const std::int64_t n = ceil_div(dim, tile);
  const std::int64_t edge = dim - (n - 1) * tile;
  if (edge == tile) return {{double(tile), double(n)}};
  std::vector<std::pair<double, double>> out;
  if (n > 1) out.push_back({double(tile), double(n - 1)});
  out.push_back({double(edge), 1.0});
  return out;
}

inline double fused_extra_inputs(const FusionSplit& f) {
  double n = 0;
  for (const auto& op : f.fused) n += epilogue_extra_inputs(op);
  return n;
}

inline double fused_ops(const FusionSplit& f) {
  double n = 0;
  for (const auto& op : f.fused) n += epilogue_ops_per_element(op);
  return n;
}

inline bool fuses(const FusionSplit& f, const char* op) {
  return std::find(f.fused.begin(), f.fused.end(), op) != f.fused.end();
}

struct Common {
  const Workload& w;
  const Target& t;
  const Schedule& s;
  double b;       // bytes per element
  double c0;      // the K granule of a fractal in elements: cube_k fp16 values' bytes
  double frac_m;  // the block a tile pads to (compute_unit.hpp UnitBlock)
  double frac_n;
  int depth;
  int fusion_level;
  const ComputeUnit& unit;
  MemoryLevels levels;  // the unit's, for t

  // The level a buffer role lives in: its name and capacity.
  const MemoryLevel& level(Buffer role) const { return levels.at[std::size_t(unit.level_of(role))]; }

  double pad_m(double x) const { return ceil_to(x, frac_m); }
  double pad_n(double x) const { return ceil_to(x, frac_n); }
  std::int64_t knob(std::string_view name) const { return s.at(std::string(name)); }
};

inline KernelPlan start_plan(const Common& c, OpFamily family, bool uses_cube) {
  KernelPlan p;
  p.family = family;
  p.uses_cube = uses_cube;
  p.cores = c.unit.cores(c.s, uses_cube ? c.t.ai_cores : c.t.vector_cores);
  p.depth = c.depth;
  p.elem_bytes = c.b;
  p.flops = c.w.flops();
  p.fusion = split_epilogue(c.w.op(), c.w.epilogue(), c.fusion_level);
  return p;
}

// Output path of a cube tile: the accumulator leaves L0C, the fused epilogue runs
// on the vector unit, the tile is stored, stored_bytes per element (the dtype's; fp32 for
// split_k's partial sums).
inline void cube_output(TileWork& tw, const Common& c, double out_elems, const FusionSplit& f, double stored_bytes) {
  tw.out_elems = out_elems;
  tw.epilogue_bytes = out_elems * c.b * fused_ops(f);
  // On split parts the cube core has no UB: the tile is parked in a GM workspace
  // (L2-resident) and the vector cores read it back before the epilogue.
  if (c.t.separate_vector_cores() && !f.fused.empty()) tw.workspace_bytes = out_elems * c.b;
  tw.handover = c.fusion_level >= 3;
  // Without a fixpipe, or with an epilogue to run, the tile goes through UB.
  if (c.t.fixpipe_bytes_per_cycle <= 0 || !f.fused.empty()) {
    tw.store_bytes = out_elems * stored_bytes;
  } else {
    tw.fix_store_bytes = out_elems * stored_bytes;
  }
}

// Every unfused epilogue op runs as a kernel of its own over the output tensor.
inline void add_separate_kernels(KernelPlan& p) {
  for (const auto& op : p.fusion.unfused) {
    SeparateKernel k;
    k.op = op;
    k.tensor_bytes = p.out_bytes * (1 + epilogue_extra_inputs(op));
    k.read_bytes = k.tensor_bytes * epilogue_passes(op);
    k.write_bytes = p.out_bytes;
    k.vector_bytes = p.out_bytes * epilogue_ops_per_element(op);
    p.separate.push_back(std::move(k));
  }
}

// Operand reuse over a grid_m x grid_n tile grid: A is fetched again once per tile
// column, B once per tile row; tile_order sets how much else is touched in between.
inline void set_reuse(KernelPlan& p, double a_unique, double a_sweep, double b_unique, double b_sweep,
                      TileOrder order) {
  const double a_panel = a_unique / std::max(1.0, p.grid_m);
  const double b_panel = b_unique / std::max(1.0, p.grid_n);
  const double a_rereads = std::max(0.0, p.grid_n - 1), b_rereads = std::max(0.0, p.grid_m - 1);
  p.a = {a_unique, 0, 0};
  p.b = {b_unique, 0, 0};
  switch (order) {
    case TileOrder::row_major:  // A panel reused by the next tile; B only after a whole row
      p.b = {b_unique, b_rereads, b_unique + a_panel};
      break;
    case TileOrder::column_major:
      p.a = {a_unique, a_rereads, a_unique + b_panel};
      break;
    case TileOrder::swizzled: {  // groups of g tile rows walked column by column
      const double g = std::min(4.0, std::max(1.0, p.grid_m));
      p.a = {a_unique, a_rereads, g * a_panel + 2 * b_panel};
      const double groups = std::ceil(std::max(1.0, p.grid_m) / g);
      p.b = {b_unique, groups - 1, b_unique + g * a_panel};
      break;
    }
  }
  p.a_sweep_bytes = a_sweep;
  p.b_sweep_bytes = b_sweep;
  p.operand_read_bytes = a_sweep * std::max(1.0, p.grid_n) + b_sweep * std::max(1.0, p.grid_m);
}

inline void check_depth(KernelPlan& p, const Common& c) {
  if (c.depth > c.t.max_buffers_per_queue) {
    p.verdict = Verdict::invalid("async_copy_depth " + std::to_string(c.depth) + " > max_buffers_per_queue " +
                                 std::to_string(c.t.max_buffers_per_queue) + " of the target");
  }
}

inline void check_row_fusion(KernelPlan& p, std::int64_t tile_n, std::int64_t row, const char* knob) {
  if (p.verdict.ok && fuses(p.fusion, "layernorm") && tile_n < row) {
    p.verdict = Verdict::invalid("fusion: layernorm epilogue needs the whole row on chip, but " + std::string(knob) +
                                 " " + std::to_string(tile_n) + " < row " + std::to_string(row));
  }
}

// Level 3 keeps every output tile a core produces in L1 for the next op.
inline double kept_bytes(const KernelPlan& p, const Common& c, double tile_out_elems) {
  if (c.fusion_level < 3) return 0;
  return std::ceil(p.tile_count() / p.cores) * tile_out_elems * c.b;
}

// UB bytes of a fused epilogue: the output tile (accumulator precision without a
// fixpipe) and its extra inputs, double-buffered at most.
inline double epilogue_ub(const Common& c, double rows, double cols, double extra_in) {
  const double out_b = c.t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
  return std::min(2, c.depth) * rows * cols * (out_b + extra_in * c.b);
}

// A role's buffer against the capacity of the level it lives in, named by that level.
template <typename What>
inline void check_fit(KernelPlan& p, const Common& c, Buffer role, double need, const What& what) {
  const MemoryLevel& level = c.level(role);
  check_fit(p, level.name, need, level.bytes, what);
}

inline void check_cube_buffers(KernelPlan& p, const Common& c, const Buffers& f) {
  check_fit(p, c, Buffer::operand_b, f.operand_b, [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, c, Buffer::staging, f.staging, [&] {
    return std::string(with_depth(c.depth) + (c.fusion_level >= 3 ? " and fusion_level 3 output kept" : ""));
  });
  check_fit(p, c, Buffer::vector, f.vector,
            [&] { return std::string("for the fused epilogue " + with_depth(c.depth)); });
  // A fusion rule may bound what its fused epilogue holds on chip (fusion_rules.hpp).
  if (p.fusion.memory_budget_bytes > 0 && !p.fusion.fused.empty()) {
    check_fit(p, c.level(Buffer::vector).name, f.vector, p.fusion.memory_budget_bytes, [&] {
      return std::string("memory budget of fusion rule '" + p.fusion.rule + "' " + with_depth(c.depth));
    });
  }
}

// Input rows (axis 'h') or columns ('w') of a window op's tile halo: the output extent
// `out` with the (dilated) window over the padded input.
inline double conv_halo(const Workload& w, double out, char axis) {
  if (axis == 'h') return std::min(double(w.padded_h()), (out - 1) * double(w.stride_h()) + double(w.window_h()));
  return std::min(double(w.padded_w()), (out - 1) * double(w.stride_w()) + double(w.window_w()));
}

// The Common view of one plan: the element size, the K granule and the block a tile is
// padded to, from the target's compute unit.
inline Common make_common(const Workload& w, const Target& t, const Schedule& s) {
  const double b = dtype_bytes(w.dtype());
  const ComputeUnit& unit = compute_unit(t);
  const UnitBlock block = unit.block(w, t, s);
  return Common{w,
                t,
                s,
                b,
                unit.k_granule_bytes(t) / b,
                block.rows,
                block.cols,
                int(s.get_or(std::string(knobs::async_copy_depth), 1)),
                int(s.get_or(std::string(knobs::fusion_level), 0)),
                unit,
                unit.levels(t)};
}

// A family template: its knob lists and its plan function.
template <class Knobs, class Plan>
class FamilyTemplate final : public OpLowering {
 public:
  FamilyTemplate(Knobs knobs, Plan plan) : knobs_(knobs), plan_(plan) {}
  std::vector<Knob> knobs(const Workload& w, const Target& t) const override { return knobs_(w, t); }
  KernelPlan plan(const Workload& w, const Target& t, const Schedule& s) const override {
    return plan_(make_common(w, t, s));
  }

 private:
  Knobs knobs_;
  Plan plan_;
};

template <class Knobs, class Plan>
std::shared_ptr<const OpLowering> family_template(Knobs knobs, Plan plan) {
  return std::make_shared<FamilyTemplate<Knobs, Plan>>(knobs, plan);
}

// The built-in families' templates, one per file.
std::shared_ptr<const OpLowering> matmul_template();
std::shared_ptr<const OpLowering> conv_template();
std::shared_ptr<const OpLowering> depthwise_template();
std::shared_ptr<const OpLowering> rows_template();
std::shared_ptr<const OpLowering> attention_template();

}  // namespace atvoss::lowering::templates
