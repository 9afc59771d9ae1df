// Map: knobs_for() builds the value lists; plan_kernel() dispatches to one
// plan_* function per op family (matmul, conv, depthwise, rows). Each fills
// the TileWork of every distinct tile shape, the footprint, and checks the
// footprint against the target with check_fit(), whose messages name the
// buffer, the sizes and the async_copy_depth.
#include "simulator/tiling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace atvoss::simulator {
namespace {

using Values = std::vector<std::int64_t>;

const Values kTileSizes = {16, 32, 48, 64, 96, 128, 192, 256};
const Values kSpatialSizes = {8, 16, 32, 48, 64, 96, 128, 192, 256};
const Values kReductionSizes = {16, 32, 64, 128, 256};
const Values kKSteps = {1, 2, 4, 8};
const Values kChannelSizes = {16, 32, 64, 128, 256};
const Values kRowSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
const Values kColumnSizes = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

// Handing a kept tile over to the next op: one set/wait flag pair and a
// descriptor write on the scalar unit.
constexpr double kHandoverCycles = 64;

double ceil_to(double x, double m) { return std::ceil(x / m) * m; }
double pad16(double x) { return ceil_to(x, 16); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Dims reach 2^40 each, so products of three overflow int64; they saturate.
std::int64_t saturating_product(std::initializer_list<std::int64_t> v) {
  double p = 1;
  for (auto x : v) p *= double(x);
  return p >= 9.0e18 ? std::int64_t{9'000'000'000'000'000'000} : std::int64_t(p);
}

// The list's values that fit in the dim, plus the dim itself when it is small
// enough to be a tile: a tile never exceeds its dim. Spatial dims below one
// fractal (7x7, 14x14 maps) also get 1, 2, 4 so that their spaces still offer
// a choice of row blocks.
Values tile_values(std::int64_t dim, const Values& base) {
  Values v;
  if (base.front() <= 8 && dim < 16) v = {1, 2, 4};
  for (auto x : base) {
    if (x <= dim && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  std::erase_if(v, [&](std::int64_t x) { return x > dim; });
  if (dim <= base.back() && std::find(v.begin(), v.end(), dim) == v.end()) v.push_back(dim);
  if (v.empty()) v.push_back(std::min(dim, base.back()));
  std::sort(v.begin(), v.end());
  return v;
}

Values depth_values(const Target& t) {
  Values v;
  for (int d = 1; d <= std::min(4, t.max_buffers_per_queue); ++d) v.push_back(d);
  return v;
}

Values fusion_values(const Workload& w) {
  return w.epilogue().empty() ? Values{0} : Values{0, 1, 2, 3};
}

void check_fit(KernelPlan& p, const char* level, double need, double capacity,
               const std::string& what) {
  if (!p.verdict.ok || need <= capacity) return;
  p.verdict = Verdict::invalid(std::string(level) + ": " + format_bytes(need) + " > " +
                               format_bytes(capacity) + " " + what);
}

std::string with_depth(int depth) { return "with async_copy_depth " + std::to_string(depth); }

// Tile extents along one axis: (size, how many) for interior and edge tiles.
std::vector<std::pair<double, double>> axis_tiles(std::int64_t dim, std::int64_t tile) {
  const std::int64_t n = ceil_div(dim, tile);
  const std::int64_t edge = dim - (n - 1) * tile;
  if (edge == tile) return {{double(tile), double(n)}};
  std::vector<std::pair<double, double>> out;
  if (n > 1) out.push_back({double(tile), double(n - 1)});
  out.push_back({double(edge), 1.0});
  return out;
}

// Vector units that serve one cube core (two AIV per AIC on split parts).
double vector_per_cube(const Target& t) {
  return std::max(1.0, double(t.vector_cores) / std::max(1, t.ai_cores));
}

// Output path of a cube tile: L0C out, fused epilogue, store.
void cube_output(TileWork& tw, const Target& t, double out_elems, double b,
                 const FusionSplit& f, bool keep_on_chip) {
  const bool fixpipe = t.fixpipe_bytes_per_cycle > 0;
  tw.fix_cycles = fixpipe ? out_elems * b / t.fixpipe_bytes_per_cycle
                          : out_elems * 4 / t.vector_bytes_per_cycle;
  double ops = 0;
  for (const auto& op : f.fused) ops += epilogue_ops_per_element(op);
  tw.epi_cycles = out_elems * b * ops / (t.vector_bytes_per_cycle * vector_per_cube(t));
  // On split parts the cube core has no UB: the fixpipe parks the tile in a GM
  // workspace (L2-resident) and the vector cores read it back before the epilogue.
  if (t.organisation == "split" && !f.fused.empty()) {
    tw.epi_cycles += out_elems * b / (t.mte2_bytes_per_cycle * vector_per_cube(t));
  }
  if (keep_on_chip) tw.epi_cycles += kHandoverCycles;
  // Without a fixpipe, or with an epilogue to run, the tile goes through UB.
  if (!fixpipe || !f.fused.empty()) {
    tw.store_bytes = out_elems * b;
  } else {
    tw.fix_store_bytes = out_elems * b;
  }
}

double fused_extra_inputs(const FusionSplit& f) {
  double n = 0;
  for (const auto& op : f.fused) n += epilogue_extra_inputs(op);
  return n;
}

bool fuses(const FusionSplit& f, const char* op) {
  return std::find(f.fused.begin(), f.fused.end(), op) != f.fused.end();
}

struct Common {
  const Workload& w;
  const Target& t;
  const Schedule& s;
  double b;      // bytes per element
  double c0;     // elements per 32 B: the K granule of a fractal
  double macs;   // MACs per cycle per core
  int depth;
  int fusion_level;
};

void check_depth(KernelPlan& p, const Common& c) {
  if (c.depth > c.t.max_buffers_per_queue) {
    p.verdict = Verdict::invalid("async_copy_depth " + std::to_string(c.depth) +
                                 " > max_buffers_per_queue " +
                                 std::to_string(c.t.max_buffers_per_queue) + " of the target");
  }
}

void check_row_fusion(KernelPlan& p, const FusionSplit& f, std::int64_t tile_n, std::int64_t row,
                      const char* knob) {
  if (p.verdict.ok && fuses(f, "layernorm") && tile_n < row) {
    p.verdict = Verdict::invalid("fusion: layernorm epilogue needs the whole row on chip, but " +
                                 std::string(knob) + " " + std::to_string(tile_n) + " < row " +
                                 std::to_string(row));
  }
}

// Level 3 keeps every output tile a core produces in L1 for the next op.
double kept_bytes(const KernelPlan& p, const Common& c, double tile_out_elems) {
  if (c.fusion_level < 3) return 0;
  return std::ceil(p.tile_count() / p.cores) * tile_out_elems * c.b;
}

KernelPlan plan_matmul(const Common& c) {
  KernelPlan p;
  const auto& w = c.w;
  const auto& t = c.t;
  const std::int64_t batch = w.op() == "batch_matmul" ? w.dim("B") : 1;
  const std::int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  const std::int64_t tm = c.s.at("tile_m"), tn = c.s.at("tile_n"), tk = c.s.at("tile_k");
  const double nk = std::ceil(double(K) / double(tk));
  const double spl = std::min(double(c.s.at("k_steps")), nk);
  const double loads = std::ceil(nk / spl);
  const double tk_p = ceil_to(double(tk), c.c0);
  const double kk = ceil_to(double(K), c.c0) / (loads * spl);  // K per step, padded
  p.cores = t.ai_cores;
  p.depth = c.depth;
  p.fusion = split_epilogue(w.epilogue(), c.fusion_level);
  const double extra_in = fused_extra_inputs(p.fusion);
  for (auto [m, cm] : axis_tiles(M, tm)) {
    for (auto [n, cn] : axis_tiles(N, tn)) {
      TileWork tw;
      tw.count = cm * cn * double(batch);
      tw.loads = loads;
      tw.steps_per_load = spl;
      tw.copies[0] = {m * kk * spl * c.b, kk * spl * c.b};  // A rows of the K panel
      tw.copies[1] = {kk * spl * n * c.b, n * c.b};          // B rows
      tw.copies[2] = {extra_in * m * n * c.b / loads, n * c.b};  // residual, spread over loads
      tw.mte1_cycles = pad16(m) * kk * c.b / t.mte1_a_bytes_per_cycle +
                       kk * pad16(n) * c.b / t.mte1_b_bytes_per_cycle + 2 * t.mte1_start_cycles;
      tw.cube_cycles = pad16(m) * pad16(n) * kk / c.macs;
      cube_output(tw, t, m * n, c.b, p.fusion, c.fusion_level >= 3);
      tw.consumed_bytes = loads * spl * kk * c.b * (pad16(m) * pad16(n) / 8);
      p.tiles.push_back(tw);
    }
  }
  p.reuse.grid_m = double(ceil_div(M, tm));
  p.reuse.grid_n = double(ceil_div(N, tn));
  p.reuse.batch = double(batch);
  p.reuse.a_unique = p.reuse.a_sweep = double(M) * K * c.b;
  p.reuse.b_unique = p.reuse.b_sweep = double(K) * N * c.b;
  p.reuse.order = TileOrder(c.s.at("tile_order"));
  p.out_bytes = double(batch) * M * N * c.b;
  p.other_reads = extra_in * p.out_bytes;
  p.flops = w.flops();

  const double d = c.depth, d2 = std::min(2, c.depth);
  Footprint& f = p.footprint;
  f.l0a = pad16(tm) * tk_p * c.b * d;
  f.l0b = tk_p * pad16(tn) * c.b * d;
  f.l0c = pad16(tm) * pad16(tn) * 4;
  f.l1 = d * (pad16(tm) + pad16(tn)) * tk_p * spl * c.b + kept_bytes(p, c, double(tm * tn));
  if (!p.fusion.fused.empty()) {
    const double out_b = t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
    f.ub = d2 * pad16(tm) * pad16(tn) * (out_b + extra_in * c.b);
  }
  check_depth(p, c);
  check_fit(p, "L0A", f.l0a, double(t.l0a_bytes), with_depth(c.depth));
  check_fit(p, "L0B", f.l0b, double(t.l0b_bytes), with_depth(c.depth));
  check_fit(p, "L0C", f.l0c, double(t.l0c_bytes), "for one fp32 accumulator of tile_m x tile_n");
  check_fit(p, "L1", f.l1, double(t.l1_bytes),
            with_depth(c.depth) + (c.fusion_level >= 3 ? " and fusion_level 3 output kept" : ""));
  check_fit(p, "UB", f.ub, double(t.ub_bytes), "for the fused epilogue " + with_depth(c.depth));
  check_row_fusion(p, p.fusion, tn, N, "tile_n");
  return p;
}

KernelPlan plan_conv(const Common& c) {
  KernelPlan p;
  const auto& w = c.w;
  const auto& t = c.t;
  const std::int64_t batch = w.dim("N"), C = w.dim("C"), H = w.dim("H"), W = w.dim("W");
  const std::int64_t K = w.dim("K"), R = w.dim("R"), S = w.dim("S");
  const std::int64_t stride = w.dim("stride"), pad = w.dim("pad");
  const std::int64_t Ho = w.out_h(), Wo = w.out_w();
  const std::int64_t th = c.s.at("tile_h"), tw_ = c.s.at("tile_w"), tn = c.s.at("tile_n");
  const std::int64_t tk = c.s.at("tile_k");
  const double kred = double(C) * double(R) * double(S);
  const double nk = std::ceil(kred / double(tk));
  const double spl = std::min(double(c.s.at("k_steps")), nk);
  const double loads = std::ceil(nk / spl);
  const double tk_p = ceil_to(double(tk), c.c0);
  const double kk = ceil_to(kred, c.c0) / (loads * spl);
  const double ch_load = double(C) / loads;  // input channels per load
  const double d = c.depth, d2 = std::min(2, c.depth);
  p.cores = t.ai_cores;
  p.depth = c.depth;
  p.fusion = split_epilogue(w.epilogue(), c.fusion_level);
  const double extra_in = fused_extra_inputs(p.fusion);
  // The cube walks the spatial block in M sub-blocks that fit L0A.
  const double base_m_cap = std::floor(double(t.l0a_bytes) / (tk_p * c.b * d) / 16) * 16;
  const double base_m = std::min(pad16(double(th * tw_)), base_m_cap);
  auto halo = [&](double out, std::int64_t k, std::int64_t in) {
    return std::min(double(in + 2 * pad), (out - 1) * double(stride) + double(k));
  };
  double a_sweep = 0, max_acc = 0, max_l1_input = 0;
  for (auto [h, ch] : axis_tiles(Ho, th)) {
    for (auto [wd, cw] : axis_tiles(Wo, tw_)) {
      const double in_h = halo(h, R, H), in_w = halo(wd, S, W);
      a_sweep += ch * cw * double(batch) * in_h * in_w * double(C) * c.b;
      for (auto [n, cn] : axis_tiles(K, tn)) {
        TileWork tile;
        tile.count = ch * cw * cn * double(batch);
        const double mt = pad16(h * wd);
        const double acc = mt * pad16(n) * 4;
        max_acc = std::max(max_acc, acc);
        // A block whose accumulator overflows L0C is computed in row groups
        // that fit, each streaming the whole reduction again: the weights are
        // re-read per group and each group re-reads its input halo rows.
        const double groups = std::ceil(acc / double(t.l0c_bytes));
        const double rows = h / groups;
        const double group_input = rows >= 1 ? std::min(in_h, (rows - 1) * double(stride) + double(R)) * in_w
                                              : double(R) * ((wd * rows - 1) * double(stride) + double(S));
        const double gm = mt / groups;
        const double msub = std::max(1.0, std::ceil(gm / std::max(16.0, base_m)));
        const double bm = gm / msub;
        tile.loads = loads * groups;
        tile.steps_per_load = spl * msub;
        tile.copies[0] = {group_input * ch_load * c.b, in_w * 32};  // NC1HWC0 rows
        tile.copies[1] = {n * kk * spl * c.b, 512};                 // fractal weights
        tile.copies[2] = {extra_in * h * wd * n * c.b / tile.loads, 512};
        max_l1_input = std::max(max_l1_input, group_input * std::max(1.0, ch_load) * c.b);
        tile.mte1_cycles = bm * kk * c.b / t.mte1_a_bytes_per_cycle + t.mte1_start_cycles +
                           (kk * pad16(n) * c.b / t.mte1_b_bytes_per_cycle + t.mte1_start_cycles) /
                               msub;
        tile.cube_cycles = bm * pad16(n) * kk / c.macs;
        cube_output(tile, t, h * wd * n, c.b, p.fusion, c.fusion_level >= 3);
        tile.consumed_bytes = loads * spl * kk * c.b * (mt * pad16(n) / 8);
        p.other_reads += tile.count * (groups - 1) * loads * tile.copies[1].bytes;
        p.tiles.push_back(tile);
      }
    }
  }
  p.reuse.grid_m = double(ceil_div(Ho, th)) * double(ceil_div(Wo, tw_)) * double(batch);
  p.reuse.grid_n = double(ceil_div(K, tn));
  p.reuse.a_unique = double(batch) * double(C) * double(H) * double(W) * c.b;
  p.reuse.a_sweep = a_sweep;
  p.reuse.b_unique = p.reuse.b_sweep = double(K) * kred * c.b;
  p.reuse.order = TileOrder(c.s.at("tile_order"));
  p.out_bytes = double(batch) * double(K) * double(Ho) * double(Wo) * c.b;
  p.other_reads += extra_in * p.out_bytes;
  p.flops = w.flops();

  Footprint& f = p.footprint;
  f.l0a = std::max(16.0, base_m) * tk_p * c.b * d;
  f.l0b = tk_p * pad16(tn) * c.b * d;
  f.l0c = std::min(max_acc, double(t.l0c_bytes));
  f.l1 = d * (max_l1_input + pad16(tn) * kk * spl * c.b) +
         kept_bytes(p, c, double(th * tw_ * tn));
  if (!p.fusion.fused.empty()) {
    const double out_b = t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
    f.ub = d2 * base_m * pad16(tn) * (out_b + extra_in * c.b);
  }
  check_depth(p, c);
  if (p.verdict.ok && base_m_cap < 16) {
    p.verdict = Verdict::invalid("L0A: " + format_bytes(16 * tk_p * c.b * d) + " > " +
                                 format_bytes(double(t.l0a_bytes)) + " " + with_depth(c.depth));
  }
  check_fit(p, "L0B", f.l0b, double(t.l0b_bytes), with_depth(c.depth));
  check_fit(p, "L1", f.l1, double(t.l1_bytes),
            with_depth(c.depth) + (c.fusion_level >= 3 ? " and fusion_level 3 output kept" : ""));
  check_fit(p, "UB", f.ub, double(t.ub_bytes), "for the fused epilogue " + with_depth(c.depth));
  check_row_fusion(p, p.fusion, tn, K, "tile_n");
  return p;
}

KernelPlan plan_depthwise(const Common& c) {
  KernelPlan p;
  const auto& w = c.w;
  const auto& t = c.t;
  const std::int64_t batch = w.dim("N"), C = w.dim("C"), H = w.dim("H"), W = w.dim("W");
  const std::int64_t R = w.dim("R"), S = w.dim("S"), stride = w.dim("stride"), pad = w.dim("pad");
  const std::int64_t Ho = w.out_h(), Wo = w.out_w();
  const std::int64_t th = c.s.at("tile_h"), tw_ = c.s.at("tile_w"), tc = c.s.at("tile_c");
  const double d = c.depth;
  p.uses_cube = false;
  p.cores = t.vector_cores;
  p.depth = c.depth;
  p.fusion = split_epilogue(w.epilogue(), c.fusion_level);
  const double extra_in = fused_extra_inputs(p.fusion);
  double ops = 0;
  for (const auto& op : p.fusion.fused) ops += epilogue_ops_per_element(op);
  auto halo = [&](double out, std::int64_t k, std::int64_t in) {
    return std::min(double(in + 2 * pad), (out - 1) * double(stride) + double(k));
  };
  const double lanes = t.vector_bytes_per_cycle / c.b;  // elements per vector cycle
  double a_sweep = 0;
  for (auto [h, ch] : axis_tiles(Ho, th)) {
    for (auto [wd, cw] : axis_tiles(Wo, tw_)) {
      const double in_h = halo(h, R, H), in_w = halo(wd, S, W);
      a_sweep += ch * cw * double(batch) * in_h * in_w * double(C) * c.b;
      for (auto [ct, cc] : axis_tiles(C, tc)) {
        TileWork tile;
        tile.count = ch * cw * cc * double(batch);
        const double ct_p = ceil_to(ct, c.c0);  // channels pad to the 32 B granule
        tile.copies[0] = {in_h * in_w * ct * c.b, in_w * 32};
        tile.copies[1] = {ct * double(R * S) * c.b, 512};
        tile.copies[2] = {extra_in * h * wd * ct * c.b, wd * 32};
        tile.vec_cycles = h * wd * ct_p * double(R * S) * 2 / lanes;
        tile.epi_cycles = h * wd * ct_p * ops / lanes;
        tile.store_bytes = h * wd * ct * c.b;
        tile.consumed_bytes = h * wd * ct * double(R * S) * c.b * 2;
        p.tiles.push_back(tile);
      }
    }
  }
  p.reuse.grid_m = double(ceil_div(Ho, th)) * double(ceil_div(Wo, tw_)) * double(batch);
  p.reuse.a_unique = double(batch) * double(C) * double(H) * double(W) * c.b;
  p.reuse.a_sweep = a_sweep;
  p.reuse.b_unique = p.reuse.b_sweep = double(C) * double(R) * double(S) * c.b;
  p.out_bytes = double(batch) * double(C) * double(Ho) * double(Wo) * c.b;
  p.other_reads = extra_in * p.out_bytes;
  p.flops = w.flops();
  const double in_h = halo(double(std::min(th, Ho)), R, H), in_w = halo(double(std::min(tw_, Wo)), S, W);
  const double ct_p = ceil_to(double(std::min(tc, C)), c.c0);
  const double out_tile = double(std::min(th, Ho) * std::min(tw_, Wo)) * ct_p * c.b;
  p.footprint.ub = d * (in_h * in_w * ct_p * c.b + out_tile * (1 + extra_in)) +
                   ct_p * double(R * S) * c.b;
  check_depth(p, c);
  check_fit(p, "UB", p.footprint.ub, double(t.ub_bytes), with_depth(c.depth));
  check_row_fusion(p, p.fusion, tc, C, "tile_c");
  return p;
}

// elementwise, layernorm, softmax: rows of N in tile_m x tile_n blocks.
KernelPlan plan_rows(const Common& c) {
  KernelPlan p;
  const auto& w = c.w;
  const auto& t = c.t;
  const std::int64_t M = w.dim("M"), N = w.dim("N");
  const std::int64_t tm = c.s.at("tile_m"), tn = c.s.at("tile_n");
  const bool binary = w.op() == "elementwise";
  const double inputs = binary ? 2 : 1;
  const double ops = binary ? 1 : 5;  // layernorm/softmax: reduce, subtract/exp, scale, ...
  const double passes = (!binary && tn < N) ? 2 : 1;  // a split row needs its stats first
  const double lanes = t.vector_bytes_per_cycle / c.b;
  p.uses_cube = false;
  p.cores = t.vector_cores;
  p.depth = c.depth;
  for (auto [m, cm] : axis_tiles(M, tm)) {
    for (auto [n, cn] : axis_tiles(N, tn)) {
      TileWork tile;
      tile.count = cm * cn;
      const double row_p = ceil_to(n * c.b, 32) / c.b;  // UB rows pad to 32 B
      const double in_bytes = m * n * c.b * passes;
      tile.copies[0] = {in_bytes, n * c.b};
      tile.copies[1] = {binary ? in_bytes : 0, n * c.b};  // the second operand
      tile.vec_cycles = m * row_p * ops * (passes > 1 ? 1.5 : 1) / lanes;
      tile.store_bytes = m * n * c.b;
      tile.consumed_bytes = m * n * c.b * inputs * passes;
      p.tiles.push_back(tile);
    }
  }
  p.reuse.grid_m = double(ceil_div(M, tm));
  p.reuse.grid_n = passes;  // the second pass re-reads the row block just read
  p.reuse.a_unique = p.reuse.a_sweep = double(M) * double(N) * c.b * inputs;
  p.out_bytes = double(M) * double(N) * c.b;
  p.flops = w.flops();
  const double tile_p = double(std::min(tm, M)) * ceil_to(double(std::min(tn, N)) * c.b, 32);
  p.footprint.ub = double(c.depth) * tile_p * (inputs + 1) + (binary ? 0 : tile_p / c.b * 4);
  check_depth(p, c);
  check_fit(p, "UB", p.footprint.ub, double(t.ub_bytes), with_depth(c.depth));
  return p;
}

}  // namespace

double Footprint::peak() const { return std::max({l0a, l0b, l0c, l1, ub}); }

double KernelPlan::tile_count() const {
  double n = 0;
  for (const auto& t : tiles) n += t.count;
  return n;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / (1024.0 * 1024));
  } else if (bytes >= 1024) {
    const double kb = bytes / 1024;
    std::snprintf(buf, sizeof buf, kb == std::floor(kb) ? "%.0f KB" : "%.1f KB", kb);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

std::vector<Knob> knobs_for(const Workload& w, const Target& t) {
  const Values depth = depth_values(t), order = {0, 1, 2}, fusion = fusion_values(w);
  if (w.is_matmul_like()) {
    return {{"tile_m", tile_values(w.dim("M"), kTileSizes)},
            {"tile_n", tile_values(w.dim("N"), kTileSizes)},
            {"tile_k", tile_values(w.dim("K"), kReductionSizes)},
            {"k_steps", kKSteps},
            {"async_copy_depth", depth},
            {"tile_order", order},
            {"fusion_level", fusion}};
  }
  if (w.op() == "conv2d") {
    return {{"tile_h", tile_values(w.out_h(), kSpatialSizes)},
            {"tile_w", tile_values(w.out_w(), kSpatialSizes)},
            {"tile_n", tile_values(w.dim("K"), kTileSizes)},
            {"tile_k", tile_values(saturating_product({w.dim("C"), w.dim("R"), w.dim("S")}),
                                   kReductionSizes)},
            {"k_steps", kKSteps},
            {"async_copy_depth", depth},
            {"tile_order", order},
            {"fusion_level", fusion}};
  }
  if (w.op() == "depthwise_conv2d") {
    return {{"tile_h", tile_values(w.out_h(), kSpatialSizes)},
            {"tile_w", tile_values(w.out_w(), kSpatialSizes)},
            {"tile_c", tile_values(w.dim("C"), kChannelSizes)},
            {"async_copy_depth", depth},
            {"fusion_level", fusion}};
  }
  if (w.op() == "elementwise" || w.op() == "layernorm" || w.op() == "softmax") {
    return {{"tile_m", tile_values(w.dim("M"), kRowSizes)},
            {"tile_n", tile_values(w.dim("N"), kColumnSizes)},
            {"async_copy_depth", depth}};
  }
  throw_bad_input("simulator: op '" + w.op() + "' has no tiling template");
}

KernelPlan plan_kernel(const Workload& w, const Target& t, const Schedule& s) {
  const double b = dtype_bytes(w.dtype());
  const Common c{w, t, s, b, 32 / b, t.macs_per_cycle(w.dtype()),
                 int(s.get_or("async_copy_depth", 1)), int(s.get_or("fusion_level", 0))};
  if (w.is_matmul_like()) return plan_matmul(c);
  if (w.op() == "conv2d") return plan_conv(c);
  if (w.op() == "depthwise_conv2d") return plan_depthwise(c);
  if (w.op() == "elementwise" || w.op() == "layernorm" || w.op() == "softmax") return plan_rows(c);
  throw_bad_input("simulator: op '" + w.op() + "' has no tiling template");
}

}  // namespace atvoss::simulator
