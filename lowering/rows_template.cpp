// The rows template (lowering.hpp describes it; docs/knobs.md its knobs).
#include "lowering/internal/templates.hpp"

namespace atvoss::lowering::templates {
namespace {

// Output of one m x n input tile of a rows op (OpInfo::row_output): its elements and
// the contiguous row each store writes (0: whole output rows). A reduction emits its
// m values once per row block, here spread over the row's column tiles.
std::pair<double, double> row_tile_output(const Workload& w, double m, double n, double col_tiles, double b) {
  switch (w.info().row_output) {
    case RowOutput::one_per_row:
      return {m / col_tiles, 0};
    case RowOutput::transposed:
      return {m * n, m * double(w.dim("inner")) * b};
    case RowOutput::scaled: {
      const double scale = double(w.dim("scale"));
      return {m * n * scale * scale, 0};
    }
    case RowOutput::same:
      break;
  }
  return {m * n, 0};
}

// Row ops: rows of N in tile_m x tile_n blocks. The epilogue (of elementwise and map)
// always runs in the same pass: there is no separate kernel to split it into.
KernelPlan plan_rows(const Common& c) {
  KernelPlan p = start_plan(c, OpFamily::rows, false);
  const auto& w = c.w;
  const OpInfo& op = w.info();
  const std::int64_t M = w.dim("M"), N = w.dim("N");
  const std::int64_t tm = c.knob(knobs::tile_m), tn = c.knob(knobs::tile_n);
  const double inputs = op.row_inputs;
  p.fusion = split_epilogue(w.op(), w.epilogue(), 3);
  const double extra_in = fused_extra_inputs(p.fusion), epi_ops = fused_ops(p.fusion);
  const double col_tiles = double(ceil_div(N, tn));
  // A split row needs its statistics first: a second pass over GM, and more work.
  const double passes = (op.row_reduction && tn < N) ? 2 : 1;
  double out_tile_max = 0;
  for (auto [m, cm] : axis_tiles(M, tm)) {
    for (auto [n, cn] : axis_tiles(N, tn)) {
      TileWork tile;
      tile.count = cm * cn;
      const double row_p = ceil_to(n * c.b, kGranuleBytes) / c.b;  // UB rows pad to 32 B
      const double in_bytes = m * n * c.b * passes;
      const auto [out_elems, out_segment] = row_tile_output(w, m, n, col_tiles, c.b);
      tile.copies[0] = {in_bytes, n * c.b};
      tile.copies[1] = {inputs > 1 ? in_bytes : 0, n * c.b};  // the second operand
      tile.copies[2] = {extra_in * m * n * c.b, n * c.b};     // a residual epilogue input
      tile.vector_bytes = m * row_p * op.row_ops * (passes > 1 ? 1.5 : 1) * c.b;
      // Upsampling writes every output element once on the vector unit.
      if (op.row_output == RowOutput::scaled) tile.vector_bytes += out_elems * c.b;
      tile.epilogue_bytes = m * row_p * epi_ops * c.b;
      tile.store_bytes = out_elems * c.b;
      tile.store_segment_bytes = out_segment;
      tile.consumed_bytes = m * n * c.b * (inputs + extra_in) * passes;
      out_tile_max = std::max(out_tile_max, out_elems * c.b);
      p.tiles.push_back(tile);
    }
  }
  p.grid_m = double(ceil_div(M, tm));
  p.grid_n = passes;  // the second pass re-reads the row block just read
  const double a = double(M) * double(N) * c.b * inputs;
  set_reuse(p, a, a, 0, 0, TileOrder::row_major);
  p.out_bytes = w.out_elements() * c.b;
  p.other_reads = extra_in * double(M) * double(N) * c.b;
  const double tile_p = double(std::min(tm, M)) * ceil_to(double(std::min(tn, N)) * c.b, kGranuleBytes);
  Buffers f;
  f.vector = double(c.depth) * (tile_p * (inputs + extra_in) + std::max(out_tile_max, tile_p)) +
             (op.row_reduction ? tile_p / c.b * 4 : 0);
  hold(p, c.unit, f);
  check_depth(p, c);
  check_fit(p, c, Buffer::vector, f.vector, [&] { return std::string(with_depth(c.depth)); });
  if (op.row_output == RowOutput::transposed && (N % w.dim("inner") != 0 || tn % w.dim("inner") != 0)) {
    p.verdict =
        Verdict::invalid("transpose: N and tile_n must be multiples of inner " + std::to_string(w.dim("inner")));
  }
  return p;
}

}  // namespace

std::shared_ptr<const OpLowering> rows_template() {
  return family_template(
      [](const Workload& w, const Target& t) -> std::vector<Knob> {
        const Values depth = depth_values(t);
        return {knob(knobs::tile_m, tile_values(w.dim("M"), kRowSizes, true)),
                knob(knobs::tile_n, w.info().row_output == RowOutput::transposed
                                        ? inner_multiples(w.dim("N"), w.dim("inner"))
                                        : tile_values(w.dim("N"), kColumnSizes)),
                knob(knobs::async_copy_depth, depth)};
      },
      plan_rows);
}

}  // namespace atvoss::lowering::templates
