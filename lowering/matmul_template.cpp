// The matmul template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

KernelPlan plan_matmul(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::matmul, true);
  const auto& w = c.w;
  const double batch = w.batch();
  const std::int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  const std::int64_t tm = c.knob(knobs::tile_m), tn = c.knob(knobs::tile_n);
  const std::int64_t tk = c.knob(knobs::tile_k);
  const double nk = std::ceil(double(K) / double(tk));
  const double spl = std::min(double(c.knob(knobs::k_steps)), nk);
  const double loads = std::ceil(nk / spl);
  const double tk_p = ceil_to(double(tk), c.c0);
  const double kk = ceil_to(double(K), c.c0) / (loads * spl);  // K per step, padded
  p.has_order = true;
  const double extra_in = fused_extra_inputs(p.fusion);
  for (auto [m, cm] : axis_tiles(M, tm)) {
    for (auto [n, cn] : axis_tiles(N, tn)) {
      TileWork tw;
      tw.count = cm * cn * batch;
      tw.loads = loads;
      tw.steps_per_load = spl;
      tw.copies[0] = {m * kk * spl * c.b, kk * spl * c.b};       // A rows of the K panel
      tw.copies[1] = {kk * spl * n * c.b, n * c.b};              // B rows
      tw.copies[2] = {extra_in * m * n * c.b / loads, n * c.b};  // residual, spread over loads
      tw.l0a_bytes = c.pad_m(m) * kk * c.b;
      tw.l0b_bytes = kk * c.pad_n(n) * c.b;
      tw.l0_transfers = 2;
      tw.cube_macs = c.pad_m(m) * c.pad_n(n) * kk;
      cube_output(tw, c, m * n, p.fusion);
      tw.consumed_bytes = loads * spl * kk * c.b * (c.pad_m(m) * c.pad_n(n) / 8);
      p.tiles.push_back(tw);
    }
  }
  p.grid_m = double(ceil_div(M, tm));
  p.grid_n = double(ceil_div(N, tn));
  p.batch = batch;
  const double a = double(M) * double(K) * c.b, b = double(K) * double(N) * c.b;
  set_reuse(p, a, a, b, b, TileOrder(c.knob(knobs::tile_order)));
  p.out_bytes = batch * double(M) * double(N) * c.b;
  p.other_reads = extra_in * p.out_bytes;
  add_separate_kernels(p);

  const double d = c.depth;
  Buffers f;
  if (!c.unit.place_block(f, p, {double(tm), tk_p, double(tn), extra_in, c.b, {c.frac_m, c.frac_n}}, c.t, c.s)) {
    f.operand_a = c.pad_m(tm) * tk_p * c.b * d;
    f.operand_b = tk_p * c.pad_n(tn) * c.b * d;
    f.accumulator = c.pad_m(tm) * c.pad_n(tn) * 4;
    f.staging = d * (c.pad_m(tm) + c.pad_n(tn)) * tk_p * spl * c.b + kept_bytes(p, c, double(tm * tn));
    if (!p.fusion.fused.empty()) f.vector = epilogue_ub(c, c.pad_m(tm), c.pad_n(tn), extra_in);
  }
  hold(p, c.unit, f);
  check_depth(p, c);
  check_fit(p, c, Buffer::operand_a, f.operand_a, [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, c, Buffer::operand_b, f.operand_b, [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, c, Buffer::accumulator, f.accumulator,
            [&] { return std::string("for one fp32 accumulator of tile_m x tile_n"); });
  check_cube_buffers(p, c, f);
  check_row_fusion(p, tn, N, "tile_n");
  return p;
}

}  // namespace

std::shared_ptr<const OpLowering> matmul_template() {
  return family_template(
      [](const Workload& w, const Target& t) -> std::vector<Knob> {
        const Values depth = depth_values(t), order = {0, 1, 2}, fusion = fusion_values(w);
        return {knob(knobs::tile_m, tile_values(w.dim("M"), from_unit(kTileSizes, t, t.cube_m))),
                knob(knobs::tile_n, tile_values(w.dim("N"), from_unit(kTileSizes, t, t.cube_n))),
                knob(knobs::tile_k, tile_values(w.dim("K"), from_unit(kReductionSizes, t, t.cube_k))),
                knob(knobs::k_steps, kKSteps),
                knob(knobs::async_copy_depth, depth),
                knob(knobs::tile_order, order),
                knob(knobs::fusion_level, fusion)};
      },
      plan_matmul);
}

}  // namespace atvoss::lowering::templates
