// The depthwise (and pooling) template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

// Depthwise conv and pooling: an R x S window per channel on the vector unit; only the
// conv reads weights (OpInfo::window_weights).
KernelPlan plan_depthwise(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::depthwise, false);
  const auto& w = c.w;
  const std::int64_t batch = w.dim("N"), C = w.dim("C"), H = w.dim("H"), W = w.dim("W");
  const std::int64_t R = w.dim("R"), S = w.dim("S");
  const std::int64_t Ho = w.out_h(), Wo = w.out_w();
  const std::int64_t th = c.knob(knobs::tile_h), tw_ = c.knob(knobs::tile_w);
  const std::int64_t tc = c.knob(knobs::tile_c);
  const double d = c.depth;
  const double extra_in = fused_extra_inputs(p.fusion);
  const double ops = fused_ops(p.fusion);
  const double weights = w.info().window_weights ? 1 : 0;
  const double window_ops = w.info().window_ops;
  double a_sweep = 0;
  for (auto [h, ch] : axis_tiles(Ho, th)) {
    for (auto [wd, cw] : axis_tiles(Wo, tw_)) {
      const double in_h = conv_halo(w, h, 'h'), in_w = conv_halo(w, wd, 'w');
      a_sweep += ch * cw * double(batch) * in_h * in_w * double(C) * c.b;
      for (auto [ct, cc] : axis_tiles(C, tc)) {
        TileWork tile;
        tile.count = ch * cw * cc * double(batch);
        const double ct_p = ceil_to(ct, c.c0);  // channels pad to the C0 block
        tile.copies[0] = {in_h * in_w * ct * c.b, in_w * c.c0 * c.b};
        tile.copies[1] = {weights * ct * double(R * S) * c.b, kFractalRowBytes};
        tile.copies[2] = {extra_in * h * wd * ct * c.b, wd * c.c0 * c.b};
        tile.vector_bytes = h * wd * ct_p * double(R * S) * window_ops * c.b;
        tile.epilogue_bytes = h * wd * ct_p * ops * c.b;
        tile.store_bytes = h * wd * ct * c.b;
        tile.consumed_bytes = h * wd * ct * double(R * S) * c.b * window_ops;
        p.tiles.push_back(tile);
      }
    }
  }
  p.grid_m = double(ceil_div(Ho, th)) * double(ceil_div(Wo, tw_)) * double(batch);
  const double a_unique = double(batch) * double(C) * double(H) * double(W) * c.b;
  const double b = weights * double(C) * double(R) * double(S) * c.b;
  set_reuse(p, a_unique, a_sweep, b, b, TileOrder::row_major);
  p.out_bytes = w.out_elements() * c.b;
  p.other_reads = extra_in * p.out_bytes;
  add_separate_kernels(p);
  const double in_h = conv_halo(w, double(std::min(th, Ho)), 'h');
  const double in_w = conv_halo(w, double(std::min(tw_, Wo)), 'w');
  const double ct_p = ceil_to(double(std::min(tc, C)), c.c0);
  const double out_tile = double(std::min(th, Ho) * std::min(tw_, Wo)) * ct_p * c.b;
  Buffers f;
  f.vector = d * (in_h * in_w * ct_p * c.b + out_tile * (1 + extra_in)) + weights * ct_p * double(R * S) * c.b;
  hold(p, c.unit, f);
  check_depth(p, c);
  check_fit(p, c, Buffer::vector, f.vector, [&] { return std::string(with_depth(c.depth)); });
  check_row_fusion(p, tc, C, "tile_c");
  return p;
}

}  // namespace

std::shared_ptr<const OpLowering> depthwise_template() {
  return family_template(
      [](const Workload& w, const Target& t) -> std::vector<Knob> {
        const Values depth = depth_values(t), fusion = fusion_values(w);
        return {knob(knobs::tile_h, tile_values(w.out_h(), kSpatialSizes, true)),
                knob(knobs::tile_w, tile_values(w.out_w(), kSpatialSizes, true)),
                knob(knobs::tile_c, tile_values(w.dim("C"), kChannelSizes)), knob(knobs::async_copy_depth, depth),
                knob(knobs::fusion_level, fusion)};
      },
      plan_depthwise);
}

}  // namespace atvoss::lowering::templates
