// The matmul template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

// A reduction this many times longer than the output's longer side gets split_k: a conv's
// weight gradient (K = batch x pixels, M x N = a filter) has too few output tiles to fill
// the cores, and vendor kernels split its K across them (docs/knobs.md "split_k").
constexpr std::int64_t kSplitReductionRatio = 8;
// Each part keeps at least the longest tile_k.
constexpr std::int64_t kMinPartK = 256;

bool offers_split_k(const Workload& w) {
  if (!w.epilogue().empty() || w.batch() != 1) return false;
  const std::int64_t K = w.dim("K");
  return K >= kSplitReductionRatio * std::max(w.dim("M"), w.dim("N")) && K >= 2 * kMinPartK;
}

Values split_k_values(const Workload& w) {
  Values v;
  for (std::int64_t parts : {1, 2, 4, 8, 16, 32, 64}) {
    if (parts == 1 || w.dim("K") / parts >= kMinPartK) v.push_back(parts);
  }
  return v;
}

KernelPlan plan_matmul(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::matmul, true);
  const auto& w = c.w;
  const double batch = w.batch();
  const std::int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  const std::int64_t tm = c.knob(knobs::tile_m), tn = c.knob(knobs::tile_n);
  const std::int64_t tk = c.knob(knobs::tile_k);
  // split_k parts each reduce their own slice of K on a core of their own.
  const std::int64_t parts = c.s.get_or(std::string(knobs::split_k), 1);
  const std::int64_t Kp = ceil_div(K, parts);
  const double nk = std::ceil(double(Kp) / double(tk));
  const double spl = std::min(double(c.knob(knobs::k_steps)), nk);
  const double loads = std::ceil(nk / spl);
  const double tk_p = ceil_to(double(tk), c.c0);
  const double kk = ceil_to(double(Kp), c.c0) / (loads * spl);  // K per step, padded
  // A part's partial sums leave in fp32 and are added into the output (the fixpipe's atomic
  // add), which is zeroed first.
  const double out_b = parts > 1 ? 4.0 : c.b;
  p.has_order = true;
  const double extra_in = fused_extra_inputs(p.fusion);
  for (auto [m, cm] : axis_tiles(M, tm)) {
    for (auto [n, cn] : axis_tiles(N, tn)) {
      TileWork tw;
      tw.count = cm * cn * batch * double(parts);
      tw.loads = loads;
      tw.steps_per_load = spl;
      tw.copies[0] = {m * kk * spl * c.b, kk * spl * c.b};       // A rows of the K panel
      tw.copies[1] = {kk * spl * n * c.b, n * c.b};              // B rows
      tw.copies[2] = {extra_in * m * n * c.b / loads, n * c.b};  // residual, spread over loads
      tw.l0a_bytes = c.pad_m(m) * kk * c.b;
      tw.l0b_bytes = kk * c.pad_n(n) * c.b;
      tw.l0_transfers = 2;
      tw.cube_macs = c.pad_m(m) * c.pad_n(n) * kk;
      cube_output(tw, c, m * n, p.fusion, out_b);
      tw.consumed_bytes = loads * spl * kk * c.b * (c.pad_m(m) * c.pad_n(n) / 8);
      p.tiles.push_back(tw);
    }
  }
  p.grid_m = double(ceil_div(M, tm));
  p.grid_n = double(ceil_div(N, tn));
  p.batch = batch;
  const double a = double(M) * double(K) * c.b, b = double(K) * double(N) * c.b;
  set_reuse(p, a, a, b, b, TileOrder(c.knob(knobs::tile_order)));
  p.out_bytes = batch * double(M) * double(N) * out_b * double(parts > 1 ? parts + 1 : 1);
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
        std::vector<Knob> k = {knob(knobs::tile_m, tile_values(w.dim("M"), from_unit(kTileSizes, t, t.cube_m))),
                               knob(knobs::tile_n, tile_values(w.dim("N"), from_unit(kTileSizes, t, t.cube_n))),
                               knob(knobs::tile_k, tile_values(w.dim("K"), from_unit(kReductionSizes, t, t.cube_k))),
                               knob(knobs::k_steps, kKSteps),
                               knob(knobs::async_copy_depth, depth),
                               knob(knobs::tile_order, order),
                               knob(knobs::fusion_level, fusion)};
        // Records stored before the knob ran unsplit.
        if (offers_split_k(w)) k.push_back({std::string(knobs::split_k), split_k_values(w), 1});
        return k;
      },
      plan_matmul);
}

}  // namespace atvoss::lowering::templates
