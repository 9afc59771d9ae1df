// The fused attention template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

// Vector ops per score of the online softmax: running max, subtract, exp, running sum
// and the probabilities' cast.
constexpr double kOnlineSoftmaxOps = 6;

// Fused attention (FlashAttention's schedule). A tile of tile_m queries keeps Q in L1;
// the keys and values stream through in tiles of tile_n (the sequence tile), one GM
// load each. Per step the cube computes the scores Q K^T (tile_m x tile_n x D) and
// P V (tile_m x D x tile_n); the vector unit keeps the online softmax (running max and
// sum, exp of the block) and rescales the fp32 output accumulator in UB. The scores
// never reach GM: that is what the unfused baseline (batch_matmul, softmax,
// batch_matmul) pays for.
KernelPlan plan_attention(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::attention, true);
  const auto& w = c.w;
  const std::int64_t B = w.dim("B"), S = w.dim("S"), L = w.dim("L"), D = w.dim("D");
  const std::int64_t tm = c.knob(knobs::tile_m), tn = c.knob(knobs::tile_n);
  const double loads = double(ceil_div(L, tn));
  const double kn = double(L) / loads;  // keys per load (the edge tile averaged in)
  const double d_p = ceil_to(double(D), c.c0), kn_p = ceil_to(kn, c.c0);
  for (auto [m, cm] : axis_tiles(S, tm)) {
    TileWork tw;
    tw.count = cm * double(B);
    tw.loads = loads;
    tw.steps_per_load = 1;
    tw.copies[0] = {kn * double(D) * c.b, double(D) * c.b};         // K tile
    tw.copies[1] = {kn * double(D) * c.b, double(D) * c.b};         // V tile
    tw.copies[2] = {m * double(D) * c.b / loads, double(D) * c.b};  // Q, once per tile
    tw.l0a_bytes = c.pad_m(m) * (d_p + kn_p) * c.b;                 // Q, then P
    tw.l0b_bytes = (d_p * c.pad_n(kn) + kn_p * c.pad_n(double(D))) * c.b;
    tw.l0_transfers = 4;
    tw.cube_macs = c.pad_m(m) * (c.pad_n(kn) * d_p + c.pad_n(double(D)) * kn_p);
    // Scores and the P V block leave L0C in fp32 for the vector unit.
    tw.vector_bytes = m * kn * (kOnlineSoftmaxOps * c.b + 4) + m * double(D) * 4 * 2;
    cube_output(tw, c, m * double(D), p.fusion, c.b);
    tw.store_bytes = m * double(D) * c.b;  // normalised by the running sum in UB, then stored
    tw.fix_store_bytes = 0;
    tw.consumed_bytes = loads * tw.cube_macs / 8 * c.b;
    p.tiles.push_back(tw);
  }
  p.grid_m = double(ceil_div(S, tm));
  p.batch = double(B);
  const double q = double(S) * double(D) * c.b, kv = 2 * double(L) * double(D) * c.b;
  set_reuse(p, q, q, kv, kv, TileOrder::row_major);  // K and V again for every query tile
  p.out_bytes = double(B) * double(S) * double(D) * c.b;
  const double d = c.depth;
  Buffers f;
  f.operand_a = d * c.pad_m(tm) * std::max(d_p, ceil_to(double(tn), c.c0)) * c.b;
  f.operand_b = d * std::max(d_p * c.pad_n(double(tn)), ceil_to(double(tn), c.c0) * c.pad_n(double(D))) * c.b;
  f.accumulator = c.pad_m(tm) * (c.pad_n(double(tn)) + c.pad_n(double(D))) * 4;
  f.staging = double(tm) * double(D) * c.b + d * 2 * double(tn) * double(D) * c.b;
  f.vector = d * double(tm) * double(tn) * 4 + double(tm) * double(D) * 4 + 2 * double(tm) * 4;
  hold(p, c.unit, f);
  check_depth(p, c);
  check_fit(p, c, Buffer::operand_a, f.operand_a, [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, c, Buffer::operand_b, f.operand_b, [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, c, Buffer::accumulator, f.accumulator,
            [&] { return std::string("for the fp32 scores and output of tile_m queries"); });
  check_fit(p, c, Buffer::staging, f.staging,
            [&] { return std::string("for Q and the K/V tiles " + with_depth(c.depth)); });
  check_fit(p, c, Buffer::vector, f.vector,
            [&] { return std::string("for the online softmax " + with_depth(c.depth)); });
  return p;
}

}  // namespace

std::shared_ptr<const OpLowering> attention_template() {
  return family_template(
      [](const Workload& w, const Target& t) -> std::vector<Knob> {
        const Values depth = depth_values(t);
        return {knob(knobs::tile_m, tile_values(w.dim("S"), from_unit(kTileSizes, t, t.cube_m))),
                knob(knobs::tile_n, tile_values(w.dim("L"), kSequenceTiles)), knob(knobs::async_copy_depth, depth)};
      },
      plan_attention);
}

}  // namespace atvoss::lowering::templates
