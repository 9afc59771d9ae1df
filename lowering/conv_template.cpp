// The conv template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

// Contiguous bytes of one GM row of a conv's input tile in `layout`, `ch_load` of C
// channels per load over `in_w` columns. The fractal keeps each C0 channel block's row
// together (`block_bytes`: C0 elements); NHWC keeps a pixel's channels together (a whole
// row when a load takes every channel; the copy regroups them into the fractal on the
// way, as ND-to-NZ copies do); NCHW keeps one channel's row.
double input_row_bytes(Layout layout, double in_w, double ch_load, double C, double b, double block_bytes) {
  switch (layout) {
    case Layout::fractal:
      return in_w * block_bytes;
    case Layout::nhwc:
      return ch_load >= C ? in_w * C * b : std::max(1.0, ch_load) * b;
    case Layout::nchw:
      return in_w * b;
  }
  return in_w * block_bytes;
}

// Contiguous bytes of one GM row of a conv's output tile (h x wd pixels, n of K
// channels, Wo columns) in `layout`; 0 when the tile's rows are whole output rows.
double output_row_bytes(Layout layout, double h, double wd, double Wo, double n, double K, double b) {
  switch (layout) {
    case Layout::fractal:
      return 0;
    case Layout::nhwc:
      return n >= K ? (wd >= Wo ? 0 : wd * K * b) : n * b;
    case Layout::nchw:
      return wd >= Wo ? h * wd * b : wd * b;
  }
  return 0;
}

// Groups of a convolution: 1 unless the op has the dim (group_conv2d).
std::int64_t conv_groups(const Workload& w) { return w.dims().count("groups") ? w.dim("groups") : 1; }

// A grouped convolution is `groups` independent ones of C/groups -> K/groups channels:
// the tile grid treats each group like another image, and every group has its weights.
KernelPlan plan_conv(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::conv, true);
  const auto& w = c.w;
  const auto& t = c.t;
  const std::int64_t G = conv_groups(w);
  const std::int64_t batch = w.dim("N") * G, C = w.dim("C") / G, H = w.dim("H"), W = w.dim("W");
  const std::int64_t K = w.dim("K") / G, R = w.dim("R"), S = w.dim("S");
  const std::int64_t stride = w.dim("stride");
  const std::int64_t Ho = w.out_h(), Wo = w.out_w();
  const std::int64_t th = c.knob(knobs::tile_h), tw_ = c.knob(knobs::tile_w);
  const std::int64_t tn = c.knob(knobs::tile_n), tk = c.knob(knobs::tile_k);
  const double kred = double(C) * double(R) * double(S);
  const double nk = std::ceil(kred / double(tk));
  const double spl = std::min(double(c.knob(knobs::k_steps)), nk);
  const double loads = std::ceil(nk / spl);
  const double tk_p = ceil_to(double(tk), c.c0);
  const double kk = ceil_to(kred, c.c0) / (loads * spl);
  const double ch_load = double(C) / loads;  // input channels per load
  const double d = c.depth;
  const Layout layout = *layout_of(w, c.s);
  p.has_order = true;
  const double extra_in = fused_extra_inputs(p.fusion);
  // The matrix unit walks the spatial block in M sub-blocks that fit L0A.
  const double base_m_cap = std::floor(c.level(Buffer::operand_a).bytes / (tk_p * c.b * d) / c.frac_m) * c.frac_m;
  const double base_m = std::min(c.pad_m(double(th * tw_)), base_m_cap);
  double a_sweep = 0, max_acc = 0, max_l1_input = 0;
  for (auto [h, ch] : axis_tiles(Ho, th)) {
    for (auto [wd, cw] : axis_tiles(Wo, tw_)) {
      const double in_h = conv_halo(w, h, 'h'), in_w = conv_halo(w, wd, 'w');
      a_sweep += ch * cw * double(batch) * in_h * in_w * double(C) * c.b;
      for (auto [n, cn] : axis_tiles(K, tn)) {
        TileWork tile;
        tile.count = ch * cw * cn * double(batch);
        const double mt = c.pad_m(h * wd);
        const double acc = mt * c.pad_n(n) * 4;
        max_acc = std::max(max_acc, acc);
        // A block whose accumulator overflows L0C is computed in row groups
        // that fit, each streaming the whole reduction again: the weights are
        // re-read per group and each group re-reads its input halo rows.
        const double groups = std::ceil(acc / c.level(Buffer::accumulator).bytes);
        const double rows = h / groups;
        const double group_input = rows >= 1 ? std::min(in_h, (rows - 1) * double(stride) + double(R)) * in_w
                                             : double(R) * ((wd * rows - 1) * double(stride) + double(S));
        const double gm = mt / groups;
        const double msub = std::max(1.0, std::ceil(gm / std::max(c.frac_m, base_m)));
        const double bm = gm / msub;
        tile.loads = loads * groups;
        tile.steps_per_load = spl * msub;
        tile.copies[0] = {group_input * ch_load * c.b, input_row_bytes(layout, in_w, ch_load, C, c.b, c.c0 * c.b)};
        tile.copies[1] = {n * kk * spl * c.b, kFractalRowBytes};  // fractal weights
        tile.copies[2] = {extra_in * h * wd * n * c.b / tile.loads, kFractalRowBytes};
        max_l1_input = std::max(max_l1_input, group_input * std::max(1.0, ch_load) * c.b);
        tile.l0a_bytes = bm * kk * c.b;
        tile.l0b_bytes = kk * c.pad_n(n) * c.b / msub;  // weights stay in L0B across sub-blocks
        tile.l0_transfers = 1 + 1 / msub;
        tile.cube_macs = bm * c.pad_n(n) * kk;
        cube_output(tile, c, h * wd * n, p.fusion, c.b);
        tile.store_segment_bytes = output_row_bytes(layout, h, wd, double(Wo), n, double(K), c.b);
        // Only the fractal reaches the matrix unit as stored: NCHW is transposed to it in UB.
        if (layout == Layout::nchw) tile.vector_bytes = tile.copies[0].bytes / tile.steps_per_load;
        tile.consumed_bytes = loads * spl * kk * c.b * (mt * c.pad_n(n) / 8);
        p.other_reads += tile.count * (groups - 1) * loads * tile.copies[1].bytes;
        p.tiles.push_back(tile);
      }
    }
  }
  p.grid_m = double(ceil_div(Ho, th)) * double(ceil_div(Wo, tw_)) * double(batch);
  p.grid_n = double(ceil_div(K, tn));
  const double a_unique = double(batch) * double(C) * double(H) * double(W) * c.b;
  const double b = double(G) * double(K) * kred * c.b;
  set_reuse(p, a_unique, a_sweep, b, b, TileOrder(c.knob(knobs::tile_order)));
  p.out_bytes = double(batch) * double(K) * double(Ho) * double(Wo) * c.b;
  p.other_reads += extra_in * p.out_bytes;
  add_separate_kernels(p);

  Buffers f;
  f.operand_a = std::max(c.frac_m, base_m) * tk_p * c.b * d;
  f.operand_b = tk_p * c.pad_n(tn) * c.b * d;
  f.accumulator = std::min(max_acc, c.level(Buffer::accumulator).bytes);
  f.staging = d * (max_l1_input + c.pad_n(tn) * kk * spl * c.b) + kept_bytes(p, c, double(th * tw_ * tn));
  if (!p.fusion.fused.empty()) f.vector = epilogue_ub(c, base_m, c.pad_n(tn), extra_in);
  hold(p, c.unit, f);
  p.registers = c.unit.registers(t, c.s);
  check_depth(p, c);
  if (base_m_cap < c.frac_m) {
    check_fit(p, c, Buffer::operand_a, c.frac_m * tk_p * c.b * d, [&] { return std::string(with_depth(c.depth)); });
  }
  check_cube_buffers(p, c, f);
  check_row_fusion(p, tn, K, "tile_n");
  return p;
}

// Schedules stored before the knob existed ran in the fractal layout.
Knob layout_knob() {
  return {std::string(knobs::layout),
          {std::int64_t(Layout::fractal), std::int64_t(Layout::nhwc), std::int64_t(Layout::nchw)},
          std::int64_t(kDefaultLayout)};
}

}  // namespace

std::shared_ptr<const OpLowering> conv_template() {
  return family_template(
      [](const Workload& w, const Target& t) -> std::vector<Knob> {
        const Values depth = depth_values(t), order = {0, 1, 2}, fusion = fusion_values(w);
        return {
            knob(knobs::tile_h, tile_values(w.out_h(), kSpatialSizes, true)),
            knob(knobs::tile_w, tile_values(w.out_w(), kSpatialSizes, true)),
            knob(knobs::tile_n, tile_values(w.dim("K") / conv_groups(w), from_unit(kTileSizes, t, t.cube_n))),
            knob(knobs::tile_k, tile_values(saturating_product({w.dim("C") / conv_groups(w), w.dim("R"), w.dim("S")}),
                                            from_unit(kReductionSizes, t, t.cube_k))),
            knob(knobs::k_steps, kKSteps),
            knob(knobs::async_copy_depth, depth),
            knob(knobs::tile_order, order),
            knob(knobs::fusion_level, fusion),
            layout_knob()};
      },
      plan_conv);
}

}  // namespace atvoss::lowering::templates
