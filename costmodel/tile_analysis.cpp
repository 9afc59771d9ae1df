// Map: read_knobs() -> one plan_* per op template fills a Plan (the interior tile's
// work per load/step/tile, footprints, operand reuse inputs) -> analyse() turns the
// Plan into traffic (L2 reuse by tile_order, the core's share of the GM path), pipe
// times, waves and the roofline total. Edge tiles are folded into padding_waste rather
// than modelled one by one: a ranking feature needs the trend, not the last percent.
#include "costmodel/tile_analysis.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace atvoss::costmodel {
namespace {

constexpr double kCopyKnee = 16.0 * 1024.0;  // bytes per copy for full MTE2 bandwidth
constexpr double kHandoverCycles = 64;       // fusion_level 3: hand a tile to the next op

double ceil_div(double a, double b) { return std::ceil(a / std::max(b, 1.0)); }
double ceil_to(double x, double m) { return ceil_div(x, m) * m; }
double pad16(double x) { return ceil_to(x, 16); }
double safe(double x) { return std::max(x, 1e-9); }

struct Knobs {
  double tm, tn, tk, th, tw, tc, ks, depth;
  int order, fusion;
};

Knobs read_knobs(const KnobSet& s) {
  auto g = [](std::int64_t v) { return std::max(1.0, double(v)); };
  return {g(s.tile_m), g(s.tile_n), g(s.tile_k), g(s.tile_h), g(s.tile_w), g(s.tile_c),
          g(s.k_steps), g(s.async_copy_depth), int(std::clamp<std::int64_t>(s.tile_order, 0, 2)),
          int(std::clamp<std::int64_t>(s.fusion_level, 0, 3))};
}

enum class Op { matmul, batch_matmul, conv, depthwise, elementwise, row_norm };

double ops_per_element(const std::string& op) {
  if (op == "gelu" || op == "layernorm") return 8;
  if (op == "batchnorm") return 2;
  return 1;
}

}  // namespace

struct TilingContext::Fusion {
  double fused = 0, unfused = 0, fused_vec_ops = 0, extra_inputs = 0;
  std::vector<std::string> unfused_ops;
  bool has_layernorm = false;
};

// Workload dims read once (Workload::dim is a map lookup by name).
struct TilingContext::Dims {
  double M = 1, N = 1, K = 1, B = 1, C = 1, H = 1, W = 1, R = 1, S = 1, stride = 1, pad = 0;
  double Ho = 1, Wo = 1, flops = 0, compulsory = 0;
};

namespace {

using Fusion = TilingContext::Fusion;

// Fusion in chain order: the first op the level does not allow, and all after it, stay
// separate kernels (bias/relu/gelu need level 1; batchnorm/add/layernorm level 2).
Fusion split_fusion(const Workload& w, int level) {
  Fusion f;
  bool blocked = false;
  for (const auto& op : w.epilogue()) {
    const int needed = (op == "bias" || op == "relu" || op == "gelu") ? 1 : 2;
    blocked = blocked || needed > level;
    if (blocked) {
      f.unfused += 1;
      f.unfused_ops.push_back(op);
      continue;
    }
    f.fused += 1;
    f.fused_vec_ops += ops_per_element(op);
    f.extra_inputs += op == "add" ? 1 : 0;
    f.has_layernorm = f.has_layernorm || op == "layernorm";
  }
  return f;
}

struct Copy {
  double bytes = 0, segment = 512;
};

double copy_efficiency(const Copy& c) {
  const double size = std::min(1.0, 0.75 + 0.25 * c.bytes / kCopyKnee);
  if (std::fmod(c.segment, 512.0) == 0) return size;
  return size * (std::fmod(c.segment, 32.0) == 0 ? 0.85 : 0.7);
}

// The interior tile's work and the kernel-wide quantities the analysis needs.
struct Plan {
  bool uses_cube = true;
  double cores = 1;
  double tiles = 1, useful = 1, padded = 1, fractal_waste = 0;
  double loads = 1, spl = 1, k_iters = 1;
  std::array<Copy, 3> copies{};
  double mte1_step = 0, cube_step = 0, vec_step = 0;
  double fix_tile = 0, epi_tile = 0, store_bytes = 0, fix_store_bytes = 0;
  double a_tile = 0, b_tile = 0, c_tile = 0, step_flops = 0;
  double l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;
  double grid_m = 1, grid_n = 1, batch = 1;
  double a_unique = 0, a_sweep = 0, b_unique = 0, b_sweep = 0;
  double other_reads = 0, out_bytes = 0;
  double halo = 1;
  bool row_fits = true;
  Fusion fusion;
};

using Dims = TilingContext::Dims;

struct Ctx {
  const Dims& d;
  const Target& t;
  const Fusion& fusion;
  Op op;
  Knobs k;
  double b, c0, macs;
};

double vector_per_cube(const Target& t) {
  return std::max(1.0, double(t.vector_cores) / std::max(1, t.ai_cores));
}

// Output path of a cube tile: L0C out, fused epilogue on the vector unit, store.
void cube_output(Plan& p, const Ctx& c, double out_elems) {
  const bool fixpipe = c.t.fixpipe_bytes_per_cycle > 0;
  p.fix_tile = fixpipe ? out_elems * c.b / c.t.fixpipe_bytes_per_cycle
                       : out_elems * 4 / std::max(1.0, c.t.vector_bytes_per_cycle);
  p.epi_tile = out_elems * c.b * p.fusion.fused_vec_ops /
               (std::max(1.0, c.t.vector_bytes_per_cycle) * vector_per_cube(c.t));
  // Split parts have no UB on the cube core: the tile is parked in a GM workspace and
  // read back by the vector cores before the epilogue.
  if (c.t.organisation == "split" && p.fusion.fused > 0) {
    p.epi_tile += out_elems * c.b / (safe(c.t.mte2_bytes_per_cycle) * vector_per_cube(c.t));
  }
  if (c.k.fusion >= 3) p.epi_tile += kHandoverCycles;
  if (!fixpipe || p.fusion.fused > 0) p.store_bytes = out_elems * c.b;
  else p.fix_store_bytes = out_elems * c.b;
}

double kept_bytes(const Plan& p, const Ctx& c, double out_elems) {
  return c.k.fusion >= 3 ? std::ceil(p.tiles / p.cores) * out_elems * c.b : 0.0;
}

// K split shared by matmul and conv: steps of tile_k, k_steps per load.
void reduction_split(Plan& p, const Ctx& c, double kred, double& kk) {
  p.k_iters = ceil_div(kred, c.k.tk);
  p.spl = std::min(c.k.ks, p.k_iters);
  p.loads = ceil_div(p.k_iters, p.spl);
  kk = ceil_to(kred, c.c0) / (p.loads * p.spl);
}

Plan plan_matmul(const Ctx& c) {
  Plan p;
  const double batch = c.op == Op::batch_matmul ? c.d.B : 1.0;
  const double M = c.d.M, N = c.d.N, K = c.d.K;
  const double m = std::min(c.k.tm, M), n = std::min(c.k.tn, N);
  double kk = 0;
  reduction_split(p, c, K, kk);
  const double tk_p = ceil_to(c.k.tk, c.c0), d = c.k.depth;
  p.cores = std::max(1, c.t.ai_cores);
  p.fusion = c.fusion;
  p.grid_m = ceil_div(M, m), p.grid_n = ceil_div(N, n), p.batch = batch;
  p.tiles = p.grid_m * p.grid_n * batch;
  p.useful = batch * M * N * K;
  p.padded = p.tiles * pad16(m) * pad16(n) * ceil_to(K, c.c0);
  p.fractal_waste = 1 - (m * n) / (pad16(m) * pad16(n));
  p.copies[0] = {m * kk * p.spl * c.b, kk * p.spl * c.b};
  p.copies[1] = {kk * p.spl * n * c.b, n * c.b};
  p.copies[2] = {p.fusion.extra_inputs * m * n * c.b / p.loads, n * c.b};
  p.mte1_step = pad16(m) * kk * c.b / safe(c.t.mte1_a_bytes_per_cycle) +
                kk * pad16(n) * c.b / safe(c.t.mte1_b_bytes_per_cycle) + 2 * c.t.mte1_start_cycles;
  p.cube_step = pad16(m) * pad16(n) * kk / safe(c.macs);
  cube_output(p, c, m * n);
  p.a_tile = pad16(m) * kk * c.b, p.b_tile = kk * pad16(n) * c.b, p.c_tile = pad16(m) * pad16(n) * 4;
  p.step_flops = 2 * m * n * kk;
  p.a_unique = p.a_sweep = M * K * c.b;
  p.b_unique = p.b_sweep = K * N * c.b;
  p.out_bytes = batch * M * N * c.b;
  p.other_reads = p.fusion.extra_inputs * p.out_bytes;
  p.l0a = pad16(c.k.tm) * tk_p * c.b * d;
  p.l0b = tk_p * pad16(c.k.tn) * c.b * d;
  p.l0c = pad16(c.k.tm) * pad16(c.k.tn) * 4;
  p.l1 = d * (pad16(c.k.tm) + pad16(c.k.tn)) * tk_p * p.spl * c.b + kept_bytes(p, c, m * n);
  if (p.fusion.fused > 0) {
    const double out_b = c.t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
    p.ub = std::min(2.0, d) * pad16(m) * pad16(n) * (out_b + p.fusion.extra_inputs * c.b);
  }
  p.row_fits = !p.fusion.has_layernorm || c.k.tn >= N;
  return p;
}

// Conv input rows one row group reads: a block whose accumulator overflows L0C is
// computed in groups of output rows that fit, each streaming the whole reduction again.
double conv_group_input(const Dims& x, double h, double wd, double in_h, double in_w, double groups) {
  const double rows = h / groups;
  if (rows >= 1) return std::min(in_h, (rows - 1) * x.stride + x.R) * in_w;
  return x.R * ((wd * rows - 1) * x.stride + x.S);
}

Plan plan_conv(const Ctx& c) {
  Plan p;
  const Dims& x = c.d;
  const double h = std::min(c.k.th, x.Ho), wd = std::min(c.k.tw, x.Wo), n = std::min(c.k.tn, x.K);
  const double kred = x.C * x.R * x.S, d = c.k.depth;
  double kk = 0;
  reduction_split(p, c, kred, kk);
  const double spl = p.spl, loads = p.loads;
  const double tk_p = ceil_to(c.k.tk, c.c0), ch_load = x.C / loads;
  p.cores = std::max(1, c.t.ai_cores);
  p.fusion = c.fusion;
  const double base_m_cap = std::floor(double(c.t.l0a_bytes) / (tk_p * c.b * d) / 16) * 16;
  const double mt = pad16(h * wd);
  const double base_m = std::min(mt, base_m_cap);
  const double in_h = std::min(x.H + 2 * x.pad, (h - 1) * x.stride + x.R);
  const double in_w = std::min(x.W + 2 * x.pad, (wd - 1) * x.stride + x.S);
  p.halo = in_h * in_w / std::max(1.0, h * wd * x.stride * x.stride);
  const double acc = mt * pad16(n) * 4;
  const double groups = std::ceil(acc / std::max(1.0, double(c.t.l0c_bytes)));
  const double group_input = conv_group_input(x, h, wd, in_h, in_w, groups);
  const double msub = std::max(1.0, std::ceil(mt / groups / std::max(16.0, base_m)));
  const double bm = mt / groups / msub;
  p.grid_m = ceil_div(x.Ho, h) * ceil_div(x.Wo, wd) * x.B, p.grid_n = ceil_div(x.K, n);
  p.tiles = p.grid_m * p.grid_n;
  p.useful = x.B * x.Ho * x.Wo * x.K * kred;
  p.padded = p.tiles * mt * pad16(n) * ceil_to(kred, c.c0);
  p.fractal_waste = 1 - (h * wd * n) / (mt * pad16(n));
  p.loads = loads * groups;
  p.spl = spl * msub;  // the cube walks msub M sub-blocks per reduction step
  p.copies[0] = {group_input * ch_load * c.b, in_w * 32};
  p.copies[1] = {n * kk * spl * c.b, 512};
  p.copies[2] = {p.fusion.extra_inputs * h * wd * n * c.b / p.loads, 512};
  p.mte1_step = bm * kk * c.b / safe(c.t.mte1_a_bytes_per_cycle) + c.t.mte1_start_cycles +
                (kk * pad16(n) * c.b / safe(c.t.mte1_b_bytes_per_cycle) + c.t.mte1_start_cycles) / msub;
  p.cube_step = bm * pad16(n) * kk / safe(c.macs);
  cube_output(p, c, h * wd * n);
  p.a_tile = bm * kk * c.b, p.b_tile = kk * pad16(n) * c.b, p.c_tile = std::min(acc, double(c.t.l0c_bytes));
  p.step_flops = 2 * bm * n * kk;
  p.a_unique = x.B * x.C * x.H * x.W * c.b;
  p.a_sweep = p.grid_m * in_h * in_w * x.C * c.b;
  p.b_unique = p.b_sweep = x.K * kred * c.b;
  p.out_bytes = x.B * x.K * x.Ho * x.Wo * c.b;
  p.other_reads = p.tiles * (groups - 1) * loads * p.copies[1].bytes + p.fusion.extra_inputs * p.out_bytes;
  p.l0a = std::max(16.0, base_m) * tk_p * c.b * d;
  if (base_m_cap < 16) p.l0a = std::max(p.l0a, 2.0 * double(c.t.l0a_bytes));  // cannot fit
  p.l0b = tk_p * pad16(c.k.tn) * c.b * d;
  p.l0c = p.c_tile;
  p.l1 = d * (group_input * std::max(1.0, ch_load) * c.b + pad16(c.k.tn) * kk * spl * c.b) +
         kept_bytes(p, c, h * wd * n);
  if (p.fusion.fused > 0) {
    const double out_b = c.t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
    p.ub = std::min(2.0, d) * base_m * pad16(c.k.tn) * (out_b + p.fusion.extra_inputs * c.b);
  }
  p.row_fits = !p.fusion.has_layernorm || c.k.tn >= x.K;
  return p;
}

Plan plan_depthwise(const Ctx& c) {
  Plan p;
  const Dims& x = c.d;
  const double batch = x.B, C = x.C, H = x.H, W = x.W, R = x.R, S = x.S;
  const double stride = x.stride, pad = x.pad, Ho = x.Ho, Wo = x.Wo;
  const double h = std::min(c.k.th, Ho), wd = std::min(c.k.tw, Wo), ct = std::min(c.k.tc, C);
  p.uses_cube = false;
  p.cores = std::max(1, c.t.vector_cores);
  p.fusion = c.fusion;
  const double lanes = std::max(1.0, c.t.vector_bytes_per_cycle / c.b);
  const double in_h = std::min(H + 2 * pad, (h - 1) * stride + R);
  const double in_w = std::min(W + 2 * pad, (wd - 1) * stride + S);
  p.halo = in_h * in_w / std::max(1.0, h * wd * stride * stride);
  const double ct_p = ceil_to(ct, c.c0);
  p.grid_m = ceil_div(Ho, h) * ceil_div(Wo, wd) * batch;
  p.tiles = p.grid_m * ceil_div(C, ct);
  p.useful = batch * Ho * Wo * C;
  p.padded = p.tiles * h * wd * ct_p;
  p.fractal_waste = 1 - ct / ct_p;
  p.copies[0] = {in_h * in_w * ct * c.b, in_w * 32};
  p.copies[1] = {ct * R * S * c.b, 512};
  p.copies[2] = {p.fusion.extra_inputs * h * wd * ct * c.b, wd * 32};
  p.vec_step = h * wd * ct_p * R * S * 2 / lanes;
  p.epi_tile = h * wd * ct_p * p.fusion.fused_vec_ops / lanes;
  p.store_bytes = h * wd * ct * c.b;
  p.a_tile = in_h * in_w * ct_p * c.b, p.b_tile = ct_p * R * S * c.b, p.c_tile = h * wd * ct_p * c.b;
  p.step_flops = 2 * h * wd * ct * R * S;
  p.a_unique = batch * C * H * W * c.b;
  p.a_sweep = p.grid_m * in_h * in_w * C * c.b;
  p.b_unique = p.b_sweep = C * R * S * c.b;
  p.out_bytes = batch * C * Ho * Wo * c.b;
  p.other_reads = p.fusion.extra_inputs * p.out_bytes;
  p.ub = c.k.depth * (p.a_tile + p.c_tile * (1 + p.fusion.extra_inputs)) + p.b_tile;
  p.row_fits = !p.fusion.has_layernorm || c.k.tc >= C;
  return p;
}

Plan plan_rows(const Ctx& c) {
  Plan p;
  const double M = c.d.M, N = c.d.N;
  const double m = std::min(c.k.tm, M), n = std::min(c.k.tn, N);
  const bool binary = c.op == Op::elementwise;
  const double inputs = binary ? 2 : 1, ops = binary ? 1 : 5;
  p.row_fits = binary || n >= N;
  const double passes = p.row_fits ? 1 : 2;
  const double lanes = std::max(1.0, c.t.vector_bytes_per_cycle / c.b);
  p.uses_cube = false;
  p.cores = std::max(1, c.t.vector_cores);
  p.grid_m = ceil_div(M, m), p.grid_n = passes;
  p.tiles = p.grid_m * ceil_div(N, n);
  const double row_p = ceil_to(n * c.b, 32) / c.b;
  p.useful = M * N;
  p.padded = p.tiles * m * row_p;
  p.fractal_waste = 1 - n / row_p;
  const double in_bytes = m * n * c.b * passes;
  p.copies[0] = {in_bytes, n * c.b};
  p.copies[1] = {binary ? in_bytes : 0, n * c.b};
  p.vec_step = m * row_p * ops * (passes > 1 ? 1.5 : 1) / lanes;
  p.store_bytes = m * n * c.b;
  p.a_tile = m * row_p * c.b, p.b_tile = binary ? p.a_tile : 0, p.c_tile = p.a_tile;
  p.step_flops = ops * m * n;
  p.a_unique = p.a_sweep = M * N * c.b * inputs;
  p.out_bytes = M * N * c.b;
  p.ub = c.k.depth * p.a_tile * (inputs + 1) + (binary ? 0 : p.a_tile / c.b * 4);
  return p;
}

// Re-reads of operand panels served by L2, by walk order (the reuse distance).
double l2_hit_fraction(const Target& t, double distance) {
  const double l2 = double(t.l2_bytes);
  if (l2 <= 0) return 0;
  if (distance <= l2) return 1;
  return std::clamp(2.0 - distance / l2, 0.0, 1.0);
}

struct Reuse {
  double l2_reads = 0, hbm_reads = 0;
};

Reuse operand_reuse(const Target& t, const Plan& p, int order) {
  const double a_panel = p.a_unique / std::max(1.0, p.grid_m);
  const double b_panel = p.b_unique / std::max(1.0, p.grid_n);
  double a_miss = p.a_unique, b_miss = p.b_unique;
  const double a_re = std::max(0.0, p.grid_n - 1), b_re = std::max(0.0, p.grid_m - 1);
  if (order == 0) {
    b_miss += p.b_unique * b_re * (1 - l2_hit_fraction(t, p.b_unique + a_panel));
  } else if (order == 1) {
    a_miss += p.a_unique * a_re * (1 - l2_hit_fraction(t, p.a_unique + b_panel));
  } else {
    const double g = std::min(4.0, std::max(1.0, p.grid_m));
    a_miss += p.a_unique * a_re * (1 - l2_hit_fraction(t, g * a_panel + 2 * b_panel));
    const double groups = std::ceil(std::max(1.0, p.grid_m) / g);
    b_miss += p.b_unique * (groups - 1) * (1 - l2_hit_fraction(t, p.b_unique + g * a_panel));
  }
  Reuse r;
  r.l2_reads = p.batch * (p.a_sweep * std::max(1.0, p.grid_n) + p.b_sweep * std::max(1.0, p.grid_m));
  r.hbm_reads = std::min(r.l2_reads, p.batch * (a_miss + b_miss));
  r.l2_reads += p.other_reads;
  r.hbm_reads += p.other_reads;
  return r;
}

double load_cycles(const Target& t, const Plan& p, double cycles_per_byte) {
  double total = 0, previous = -1;
  for (const Copy& c : p.copies) {
    if (c.bytes <= 0) continue;
    const double transfer = c.bytes * cycles_per_byte / copy_efficiency(c);
    total += (previous < 0 ? t.mte2_copy_start_cycles
                           : std::max(0.0, t.mte2_copy_start_cycles - previous)) + transfer;
    previous = transfer;
  }
  return total;
}

double epilogue_cycles(const Target& t, const Fusion& f, double out_bytes) {
  double total = 0;
  for (const auto& op : f.unfused_ops) {
    double reads = out_bytes * (op == "add" ? 2 : 1);
    if (op == "layernorm") reads *= 2;
    const bool in_l2 = 2 * out_bytes <= double(t.l2_bytes) && t.l2_bytes_per_cycle > 0;
    const double read_bw = in_l2 ? t.l2_bytes_per_cycle : t.hbm_bytes_per_cycle;
    const double mem = std::max(reads / safe(read_bw),
                                (out_bytes + (in_l2 ? 0 : reads)) / safe(t.hbm_bytes_per_cycle));
    const double per_core = reads / safe(t.vector_cores * t.mte2_bytes_per_cycle);
    const double vec = out_bytes * ops_per_element(op) / safe(t.vector_cores * t.vector_bytes_per_cycle);
    total += std::max({mem, per_core, vec});
  }
  return total;
}

double us(const Target& t, double cycles) { return cycles / (std::max(0.01, t.clock_ghz) * 1e3); }

void fill_geometry(TileAnalysis& a, const Plan& p, const Target& t) {
  a.a_tile_bytes = p.a_tile, a.b_tile_bytes = p.b_tile, a.c_tile_bytes = p.c_tile;
  a.intensity = p.step_flops / std::max(1.0, p.a_tile + p.b_tile);
  a.tiles = p.tiles;
  a.waves = p.tiles / p.cores;
  a.tail_efficiency = p.tiles / (std::ceil(a.waves) * p.cores);
  a.padding_waste = 1 - p.useful / std::max(p.useful, p.padded);
  a.fractal_waste = p.fractal_waste;
  a.k_iters = p.k_iters, a.gm_loads = p.loads, a.steps_per_load = p.spl;
  a.halo = p.halo;
  auto occ = [](double need, std::int64_t cap) { return need / std::max(1.0, double(cap)); };
  a.l0a = occ(p.l0a, t.l0a_bytes), a.l0b = occ(p.l0b, t.l0b_bytes), a.l0c = occ(p.l0c, t.l0c_bytes);
  a.l1 = occ(p.l1, t.l1_bytes), a.ub = occ(p.ub, t.ub_bytes);
  a.copy_bytes = std::max(p.copies[0].bytes, p.copies[1].bytes);
  a.copy_efficiency = std::min(copy_efficiency(p.copies[0]),
                               p.copies[1].bytes > 0 ? copy_efficiency(p.copies[1]) : 1.0);
  a.fused_ops = p.fusion.fused, a.unfused_ops = p.fusion.unfused, a.kernels = 1 + p.fusion.unfused;
  a.row_fits = p.row_fits;
}

TileAnalysis analyse(const Ctx& c, const Plan& p) {
  TileAnalysis a;
  const Target& t = c.t;
  fill_geometry(a, p, t);
  a.on_chip = c.k.fusion >= 3;
  a.overlap = c.k.depth >= 2;
  const Reuse r = operand_reuse(t, p, c.k.order);
  const double active = std::min(p.cores, p.tiles);
  const double miss = r.l2_reads > 0 ? r.hbm_reads / r.l2_reads : 1;
  double in_cpb = std::max(1.0 / safe(t.mte2_bytes_per_cycle), active * miss / safe(t.hbm_bytes_per_cycle));
  if (t.l2_bytes_per_cycle > 0) in_cpb = std::max(in_cpb, active / t.l2_bytes_per_cycle);
  const double out_cpb = std::max(1.0 / safe(t.mte3_bytes_per_cycle), active / safe(t.hbm_bytes_per_cycle));
  a.in_cycles_per_byte = in_cpb;
  a.l2_read_bytes = r.l2_reads, a.hbm_read_bytes = r.hbm_reads;
  a.l2_hit = r.l2_reads > 0 ? 1 - r.hbm_reads / r.l2_reads : 0;
  a.gm_write_bytes = p.out_bytes * (1 + 2 * p.fusion.unfused);
  a.l1_l0_bytes = p.tiles * p.loads * p.spl * (p.a_tile + p.b_tile);
  // Busy cycles per tile on each pipe.
  const double steps = p.loads * p.spl;
  const double mte2 = p.loads * load_cycles(t, p, in_cpb), mte1 = steps * p.mte1_step;
  const double compute = steps * (p.cube_step + p.vec_step);
  const double out = std::max(p.fix_tile, p.fix_store_bytes * active / safe(t.hbm_bytes_per_cycle)) +
                     p.epi_tile + p.store_bytes * out_cpb;
  // Depth 1 serialises transfer and compute; deeper queues overlap them.
  const double period = a.overlap ? std::max({mte2, mte1, compute, out}) : mte2 + mte1 + compute + out;
  const double fill = a.overlap ? (mte2 + mte1) / p.loads + out : 0;
  const double per_core = std::ceil(p.tiles / p.cores);
  // The pipeline fills once per kernel, after the first byte arrives from L2 or HBM.
  const double first_byte = miss * t.hbm_latency_cycles + (1 - miss) * t.l2_latency_cycles;
  const double core = per_core * period + fill + first_byte;
  const double hbm = (r.hbm_reads + p.out_bytes) / safe(t.hbm_bytes_per_cycle);
  const double l2 = t.l2_bytes_per_cycle > 0 ? r.l2_reads / t.l2_bytes_per_cycle : 0;
  const double peak = p.uses_cube ? c.d.flops / (2 * safe(c.macs) * std::max(1, t.ai_cores)) : 0;
  const double epi = epilogue_cycles(t, p.fusion, p.out_bytes);
  a.mte2_us = us(t, per_core * mte2), a.mte1_us = us(t, per_core * mte1);
  a.compute_us = us(t, per_core * compute), a.out_us = us(t, per_core * out);
  a.core_us = us(t, core), a.hbm_us = us(t, hbm), a.l2_us = us(t, l2), a.peak_us = us(t, peak);
  a.epilogue_us = us(t, epi);
  a.est_us = us(t, std::max({core, hbm, l2, peak}) + epi) + a.kernels * t.launch_us;
  a.traffic_ratio = (r.l2_reads + a.gm_write_bytes) / std::max(1.0, c.d.compulsory);
  return a;
}

}  // namespace

KnobSet KnobSet::from(const Schedule& s) {
  KnobSet k;
  for (const auto& [name, v] : s.values()) {
    if (name == "tile_m") k.tile_m = v, k.present |= 1u << 0;
    else if (name == "tile_n") k.tile_n = v, k.present |= 1u << 1;
    else if (name == "tile_k") k.tile_k = v, k.present |= 1u << 2;
    else if (name == "tile_h") k.tile_h = v, k.present |= 1u << 3;
    else if (name == "tile_w") k.tile_w = v, k.present |= 1u << 4;
    else if (name == "tile_c") k.tile_c = v, k.present |= 1u << 5;
    else if (name == "k_steps") k.k_steps = v, k.present |= 1u << 6;
    else if (name == "async_copy_depth") k.async_copy_depth = v, k.present |= 1u << 7;
    else if (name == "tile_order") k.tile_order = v, k.present |= 1u << 8;
    else if (name == "fusion_level") k.fusion_level = v, k.present |= 1u << 9;
  }
  return k;
}

std::int64_t KnobSet::value(std::size_t i) const {
  const std::int64_t v[kNamedKnobCount] = {tile_m, tile_n, tile_k, tile_h, tile_w,
                                           tile_c, k_steps, async_copy_depth, tile_order, fusion_level};
  return v[i];
}

TilingContext::TilingContext(const Workload& w, const Target& t)
    : target_(t), dims_(std::make_unique<Dims>()) {
  auto get = [&](const char* n, double dflt) { return w.dims().count(n) ? double(w.dim(n)) : dflt; };
  Dims& d = *dims_;
  d.M = get("M", 1), d.N = get("N", 1), d.K = get("K", 1), d.B = get("B", 1), d.C = get("C", 1);
  d.H = get("H", 1), d.W = get("W", 1), d.R = get("R", 1), d.S = get("S", 1);
  d.stride = get("stride", 1), d.pad = get("pad", 0);
  if (w.is_conv()) {
    d.Ho = double(w.out_h()), d.Wo = double(w.out_w());
    d.B = d.N;  // conv batch is the N dim; N of the implicit GEMM is K
  }
  d.flops = w.flops(), d.compulsory = w.compulsory_bytes();
  if (w.op() == "batch_matmul") op_ = int(Op::batch_matmul);
  else if (w.op() == "matmul") op_ = int(Op::matmul);
  else if (w.op() == "conv2d") op_ = int(Op::conv);
  else if (w.op() == "depthwise_conv2d") op_ = int(Op::depthwise);
  else if (w.op() == "elementwise") op_ = int(Op::elementwise);
  else op_ = int(Op::row_norm);
  for (int level = 0; level < 4; ++level) fusion_[level] = std::make_shared<Fusion>(split_fusion(w, level));
  bytes_ = dtype_bytes(w.dtype());
  macs_ = t.macs_per_cycle(w.dtype());
}

TilingContext::~TilingContext() = default;
TilingContext::TilingContext(TilingContext&&) noexcept = default;

TileAnalysis TilingContext::analyse(const KnobSet& knobs) const {
  const Knobs k = read_knobs(knobs);
  const Op op = Op(op_);
  const Ctx c{*dims_, target_, *fusion_[std::size_t(k.fusion)], op, k, bytes_, 32 / bytes_, macs_};
  switch (op) {
    case Op::matmul:
    case Op::batch_matmul: return atvoss::costmodel::analyse(c, plan_matmul(c));
    case Op::conv: return atvoss::costmodel::analyse(c, plan_conv(c));
    case Op::depthwise: return atvoss::costmodel::analyse(c, plan_depthwise(c));
    default: return atvoss::costmodel::analyse(c, plan_rows(c));
  }
}

TileAnalysis analyse_tiling(const Workload& w, const Target& t, const Schedule& s) {
  return TilingContext(w, t).analyse(KnobSet::from(s));
}

}  // namespace atvoss::costmodel
