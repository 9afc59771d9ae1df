// Map: knobs_for() builds the value lists; plan_kernel() dispatches to one plan_*
// function per op family (matmul, conv, depthwise, rows). Each fills the TileWork of
// every distinct tile shape, the operand reuse and the footprint, and checks the
// footprint against the target with check_fit(), whose messages name the buffer, the
// sizes and the async_copy_depth. space_for() and default_schedule() sit on top.
#include "lowering/lowering.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>

#include "core/error.hpp"
#include "lowering/knob_names.hpp"
#include "lowering/layout.hpp"

namespace atvoss::lowering {
namespace {

using Values = std::vector<std::int64_t>;

const Values kTileSizes = {16, 32, 48, 64, 96, 128, 192, 256};
const Values kSpatialSizes = {8, 16, 32, 48, 64, 96, 128, 192, 256};
const Values kReductionSizes = {16, 32, 64, 128, 256};
const Values kKSteps = {1, 2, 4, 8};
const Values kChannelSizes = {16, 32, 64, 128, 256};
const Values kRowSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
const Values kColumnSizes = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
const Values kSequenceTiles = {16, 32, 64, 128, 256, 512, 1024};
// Bytes of one contiguous GM row of a fractal-layout operand (weights, NC1HWC0 blocks).
constexpr double kFractalRowBytes = 512;
// A UB row is stored in whole 32-byte blocks (the vector unit's access granule).
constexpr double kGranuleBytes = 32;

double ceil_to(double x, double m) { return std::ceil(x / m) * m; }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Dims reach 2^40 each, so products of three overflow int64; they saturate.
std::int64_t saturating_product(std::initializer_list<std::int64_t> v) {
  double p = 1;
  for (auto x : v) p *= double(x);
  return p >= 9.0e18 ? std::int64_t{9'000'000'000'000'000'000} : std::int64_t(p);
}

// The list's values that fit in the dim, plus the dim itself when it is small
// enough to be a tile: a tile never exceeds its dim. Spatial and row dims below
// 16 (7x7, 14x14 maps) also get 1, 2, 4 so that their spaces still offer a choice
// of row blocks.
Values tile_values(std::int64_t dim, const Values& base, bool small_blocks = false) {
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
Values inner_multiples(std::int64_t n, std::int64_t inner) {
  const std::int64_t lo = kColumnSizes.front(), hi = std::max(kColumnSizes.back(), inner);
  Values v;
  for (std::int64_t t = inner; t <= std::min(n, hi); t *= 2) {
    if (t >= lo || t * 2 > std::min(n, hi)) v.push_back(t);
  }
  if (n <= hi && (v.empty() || v.back() != n)) v.push_back(n);
  if (v.empty()) v.push_back(inner);
  return v;
}

// A CPU target's cube fields describe SIMD lanes (host/machine.hpp), not a fractal.
bool has_matrix_unit(const Target& t) { return t.organisation != "cpu"; }

// The K granule in bytes: cube_k fp16 values of the matrix unit (32 B on a 16x16x16 unit).
double k_granule_bytes(const Target& t) { return has_matrix_unit(t) ? 2.0 * std::max(1, t.cube_k) : kGranuleBytes; }

// A matrix unit smaller than the list's first size (an 8x8 unit against 16, 32, ...)
// also gets tiles of one and two units: on such a part they waste no padding.
Values from_unit(const Values& base, const Target& t, int unit) {
  Values v = base;
  if (!has_matrix_unit(t)) return v;
  for (std::int64_t u = std::max(1, unit) * 2; u >= 1 && u >= unit; u /= 2) {
    if (u < base.front()) v.insert(v.begin(), u);
  }
  return v;
}

Values depth_values(const Target& t) {
  Values v;
  for (int d = 1; d <= std::min(4, t.max_buffers_per_queue); ++d) v.push_back(d);
  return v;
}

Values fusion_values(const Workload& w) { return w.epilogue().empty() ? Values{0} : Values{0, 1, 2, 3}; }

Knob knob(std::string_view name, Values values) { return {std::string(name), std::move(values)}; }

// what() gives the reason's tail; it is called only when the buffer does not fit: a
// featuriser lowers thousands of valid schedules, and building each message for nothing
// cost it time.
template <typename What>
void check_fit(KernelPlan& p, const char* level, double need, double capacity, const What& what) {
  if (!p.verdict.ok || need <= capacity) return;
  p.verdict =
      Verdict::invalid(std::string(level) + ": " + format_bytes(need) + " > " + format_bytes(capacity) + " " + what());
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

double fused_extra_inputs(const FusionSplit& f) {
  double n = 0;
  for (const auto& op : f.fused) n += epilogue_extra_inputs(op);
  return n;
}

double fused_ops(const FusionSplit& f) {
  double n = 0;
  for (const auto& op : f.fused) n += epilogue_ops_per_element(op);
  return n;
}

bool fuses(const FusionSplit& f, const char* op) {
  return std::find(f.fused.begin(), f.fused.end(), op) != f.fused.end();
}

struct Common {
  const Workload& w;
  const Target& t;
  const Schedule& s;
  double b;       // bytes per element
  double c0;      // the K granule of a fractal in elements: cube_k fp16 values' bytes
  double frac_m;  // the matrix unit's fractal, from the target
  double frac_n;
  int depth;
  int fusion_level;
  bool register_block = false;  // frac_m x frac_n is a CPU micro-kernel's register block

  double pad_m(double x) const { return ceil_to(x, frac_m); }
  double pad_n(double x) const { return ceil_to(x, frac_n); }
  std::int64_t knob(std::string_view name) const { return s.at(std::string(name)); }
};

KernelPlan start_plan(const Common& c, OpFamily family, bool uses_cube) {
  KernelPlan p;
  p.family = family;
  p.uses_cube = uses_cube;
  p.cores = uses_cube ? c.t.ai_cores : c.t.vector_cores;
  // A CPU kernel runs on as many cores as its threads knob asks for.
  const std::string threads(knobs::threads);
  if (!has_matrix_unit(c.t) && c.s.has(threads)) {
    p.cores = int(std::clamp<std::int64_t>(c.s.at(threads), 1, p.cores));
  }
  p.depth = c.depth;
  p.elem_bytes = c.b;
  p.flops = c.w.flops();
  p.fusion = split_epilogue(c.w.op(), c.w.epilogue(), c.fusion_level);
  return p;
}

// Output path of a cube tile: the accumulator leaves L0C, the fused epilogue runs
// on the vector unit, the tile is stored.
void cube_output(TileWork& tw, const Common& c, double out_elems, const FusionSplit& f) {
  tw.out_elems = out_elems;
  tw.epilogue_bytes = out_elems * c.b * fused_ops(f);
  // On split parts the cube core has no UB: the tile is parked in a GM workspace
  // (L2-resident) and the vector cores read it back before the epilogue.
  if (c.t.organisation == "split" && !f.fused.empty()) tw.workspace_bytes = out_elems * c.b;
  tw.handover = c.fusion_level >= 3;
  // Without a fixpipe, or with an epilogue to run, the tile goes through UB.
  if (c.t.fixpipe_bytes_per_cycle <= 0 || !f.fused.empty()) {
    tw.store_bytes = out_elems * c.b;
  } else {
    tw.fix_store_bytes = out_elems * c.b;
  }
}

// Every unfused epilogue op runs as a kernel of its own over the output tensor.
void add_separate_kernels(KernelPlan& p) {
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
void set_reuse(KernelPlan& p, double a_unique, double a_sweep, double b_unique, double b_sweep, TileOrder order) {
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

void check_depth(KernelPlan& p, const Common& c) {
  if (c.depth > c.t.max_buffers_per_queue) {
    p.verdict = Verdict::invalid("async_copy_depth " + std::to_string(c.depth) + " > max_buffers_per_queue " +
                                 std::to_string(c.t.max_buffers_per_queue) + " of the target");
  }
}

void check_row_fusion(KernelPlan& p, std::int64_t tile_n, std::int64_t row, const char* knob) {
  if (p.verdict.ok && fuses(p.fusion, "layernorm") && tile_n < row) {
    p.verdict = Verdict::invalid("fusion: layernorm epilogue needs the whole row on chip, but " + std::string(knob) +
                                 " " + std::to_string(tile_n) + " < row " + std::to_string(row));
  }
}

// Level 3 keeps every output tile a core produces in L1 for the next op.
double kept_bytes(const KernelPlan& p, const Common& c, double tile_out_elems) {
  if (c.fusion_level < 3) return 0;
  return std::ceil(p.tile_count() / p.cores) * tile_out_elems * c.b;
}

// UB bytes of a fused epilogue: the output tile (accumulator precision without a
// fixpipe) and its extra inputs, double-buffered at most.
double epilogue_ub(const Common& c, double rows, double cols, double extra_in) {
  const double out_b = c.t.fixpipe_bytes_per_cycle > 0 ? c.b : 4;
  return std::min(2, c.depth) * rows * cols * (out_b + extra_in * c.b);
}

void check_cube_buffers(KernelPlan& p, const Common& c) {
  const Footprint& f = p.footprint;
  check_fit(p, "L0B", f.l0b, double(c.t.l0b_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, "L1", f.l1, double(c.t.l1_bytes), [&] {
    return std::string(with_depth(c.depth) + (c.fusion_level >= 3 ? " and fusion_level 3 output kept" : ""));
  });
  check_fit(p, "UB", f.ub, double(c.t.ub_bytes),
            [&] { return std::string("for the fused epilogue " + with_depth(c.depth)); });
  // A fusion rule may bound what its fused epilogue holds on chip (fusion_rules.hpp).
  if (p.fusion.memory_budget_bytes > 0 && !p.fusion.fused.empty()) {
    check_fit(p, "UB", f.ub, p.fusion.memory_budget_bytes, [&] {
      return std::string("memory budget of fusion rule '" + p.fusion.rule + "' " + with_depth(c.depth));
    });
  }
}

// The register block micro_m x micro_n of a CPU GEMM-like micro-kernel (matmul, conv2d):
// each reduction step loads a row of micro_n / lanes vectors and broadcasts one value per
// row. None on an NPU or without the knobs. (Depthwise runs on the vector term, which has
// no issue model.)
RegisterBlock register_block(const Common& c) {
  const std::string mk(knobs::micro_m), nk(knobs::micro_n);
  if (has_matrix_unit(c.t) || !c.s.has(mk) || !c.s.has(nk)) return {};
  const double rows = double(std::max<std::int64_t>(1, c.s.at(mk)));
  const double cols = double(std::max<std::int64_t>(1, c.s.at(nk)));
  const double vectors = std::ceil(cols / std::max(1, c.t.cube_m));
  return {rows, cols, rows * vectors, vectors + rows};
}

// A CPU micro-kernel (host/host_space.hpp) keeps its register block in vector registers
// (L0C), streams a micro-panel of A and of B through L1d (L0A, L0B: async_copy_depth is a
// prefetch distance there, not a buffer count) and packs the mc x kc block of A into L2
// (L1); the epilogue runs on the register block as it is written back (UB).
void cpu_matmul_footprint(KernelPlan& p, const Common& c, double tm, double tk_p, double extra_in) {
  Footprint& f = p.footprint;
  f.l0a = c.frac_m * tk_p * c.b;
  f.l0b = tk_p * c.frac_n * c.b;
  f.l0c = c.frac_m * c.frac_n * 4;
  f.l1 = c.pad_m(tm) * tk_p * c.b;
  if (!p.fusion.fused.empty()) f.ub = c.frac_m * c.frac_n * (4 + extra_in * c.b);
  p.registers = register_block(c);
}

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
  Footprint& f = p.footprint;
  if (c.register_block) {
    cpu_matmul_footprint(p, c, double(tm), tk_p, extra_in);
  } else {
    f.l0a = c.pad_m(tm) * tk_p * c.b * d;
    f.l0b = tk_p * c.pad_n(tn) * c.b * d;
    f.l0c = c.pad_m(tm) * c.pad_n(tn) * 4;
    f.l1 = d * (c.pad_m(tm) + c.pad_n(tn)) * tk_p * spl * c.b + kept_bytes(p, c, double(tm * tn));
    if (!p.fusion.fused.empty()) f.ub = epilogue_ub(c, c.pad_m(tm), c.pad_n(tn), extra_in);
  }
  check_depth(p, c);
  check_fit(p, "L0A", f.l0a, double(c.t.l0a_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, "L0B", f.l0b, double(c.t.l0b_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, "L0C", f.l0c, double(c.t.l0c_bytes),
            [&] { return std::string("for one fp32 accumulator of tile_m x tile_n"); });
  check_cube_buffers(p, c);
  check_row_fusion(p, tn, N, "tile_n");
  return p;
}

// Input rows (axis 'h') or columns ('w') of a window op's tile halo: the output extent
// `out` with the (dilated) window over the padded input.
double conv_halo(const Workload& w, double out, char axis) {
  if (axis == 'h') return std::min(double(w.padded_h()), (out - 1) * double(w.stride_h()) + double(w.window_h()));
  return std::min(double(w.padded_w()), (out - 1) * double(w.stride_w()) + double(w.window_w()));
}

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
  const double base_m_cap = std::floor(double(t.l0a_bytes) / (tk_p * c.b * d) / c.frac_m) * c.frac_m;
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
        const double groups = std::ceil(acc / double(t.l0c_bytes));
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
        cube_output(tile, c, h * wd * n, p.fusion);
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

  Footprint& f = p.footprint;
  f.l0a = std::max(c.frac_m, base_m) * tk_p * c.b * d;
  f.l0b = tk_p * c.pad_n(tn) * c.b * d;
  f.l0c = std::min(max_acc, double(t.l0c_bytes));
  f.l1 = d * (max_l1_input + c.pad_n(tn) * kk * spl * c.b) + kept_bytes(p, c, double(th * tw_ * tn));
  if (!p.fusion.fused.empty()) f.ub = epilogue_ub(c, base_m, c.pad_n(tn), extra_in);
  p.registers = register_block(c);
  check_depth(p, c);
  if (p.verdict.ok && base_m_cap < c.frac_m) {
    p.verdict = Verdict::invalid("L0A: " + format_bytes(c.frac_m * tk_p * c.b * d) + " > " +
                                 format_bytes(double(t.l0a_bytes)) + " " + with_depth(c.depth));
  }
  check_cube_buffers(p, c);
  check_row_fusion(p, tn, K, "tile_n");
  return p;
}

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
  p.footprint.ub = d * (in_h * in_w * ct_p * c.b + out_tile * (1 + extra_in)) + weights * ct_p * double(R * S) * c.b;
  check_depth(p, c);
  check_fit(p, "UB", p.footprint.ub, double(c.t.ub_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_row_fusion(p, tc, C, "tile_c");
  return p;
}

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
  p.footprint.ub = double(c.depth) * (tile_p * (inputs + extra_in) + std::max(out_tile_max, tile_p)) +
                   (op.row_reduction ? tile_p / c.b * 4 : 0);
  check_depth(p, c);
  check_fit(p, "UB", p.footprint.ub, double(c.t.ub_bytes), [&] { return std::string(with_depth(c.depth)); });
  if (op.row_output == RowOutput::transposed && (N % w.dim("inner") != 0 || tn % w.dim("inner") != 0)) {
    p.verdict =
        Verdict::invalid("transpose: N and tile_n must be multiples of inner " + std::to_string(w.dim("inner")));
  }
  return p;
}

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
    cube_output(tw, c, m * double(D), p.fusion);
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
  Footprint& f = p.footprint;
  f.l0a = d * c.pad_m(tm) * std::max(d_p, ceil_to(double(tn), c.c0)) * c.b;
  f.l0b = d * std::max(d_p * c.pad_n(double(tn)), ceil_to(double(tn), c.c0) * c.pad_n(double(D))) * c.b;
  f.l0c = c.pad_m(tm) * (c.pad_n(double(tn)) + c.pad_n(double(D))) * 4;
  f.l1 = double(tm) * double(D) * c.b + d * 2 * double(tn) * double(D) * c.b;
  f.ub = d * double(tm) * double(tn) * 4 + double(tm) * double(D) * 4 + 2 * double(tm) * 4;
  check_depth(p, c);
  check_fit(p, "L0A", f.l0a, double(c.t.l0a_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, "L0B", f.l0b, double(c.t.l0b_bytes), [&] { return std::string(with_depth(c.depth)); });
  check_fit(p, "L0C", f.l0c, double(c.t.l0c_bytes),
            [&] { return std::string("for the fp32 scores and output of tile_m queries"); });
  check_fit(p, "L1", f.l1, double(c.t.l1_bytes),
            [&] { return std::string("for Q and the K/V tiles " + with_depth(c.depth)); });
  check_fit(p, "UB", f.ub, double(c.t.ub_bytes),
            [&] { return std::string("for the online softmax " + with_depth(c.depth)); });
  return p;
}

// Schedules stored before the knob existed ran in the fractal layout.
Knob layout_knob() {
  return {std::string(knobs::layout),
          {std::int64_t(Layout::fractal), std::int64_t(Layout::nhwc), std::int64_t(Layout::nchw)},
          std::int64_t(kDefaultLayout)};
}

std::vector<Knob> family_knobs(const Workload& w, const Target& t) {
  const Values depth = depth_values(t), order = {0, 1, 2}, fusion = fusion_values(w);
  switch (w.family()) {
    case OpFamily::matmul:
      return {knob(knobs::tile_m, tile_values(w.dim("M"), from_unit(kTileSizes, t, t.cube_m))),
              knob(knobs::tile_n, tile_values(w.dim("N"), from_unit(kTileSizes, t, t.cube_n))),
              knob(knobs::tile_k, tile_values(w.dim("K"), from_unit(kReductionSizes, t, t.cube_k))),
              knob(knobs::k_steps, kKSteps),
              knob(knobs::async_copy_depth, depth),
              knob(knobs::tile_order, order),
              knob(knobs::fusion_level, fusion)};
    case OpFamily::conv:
      return {knob(knobs::tile_h, tile_values(w.out_h(), kSpatialSizes, true)),
              knob(knobs::tile_w, tile_values(w.out_w(), kSpatialSizes, true)),
              knob(knobs::tile_n, tile_values(w.dim("K") / conv_groups(w), from_unit(kTileSizes, t, t.cube_n))),
              knob(knobs::tile_k, tile_values(saturating_product({w.dim("C") / conv_groups(w), w.dim("R"), w.dim("S")}),
                                              from_unit(kReductionSizes, t, t.cube_k))),
              knob(knobs::k_steps, kKSteps),
              knob(knobs::async_copy_depth, depth),
              knob(knobs::tile_order, order),
              knob(knobs::fusion_level, fusion),
              layout_knob()};
    case OpFamily::depthwise:
      return {knob(knobs::tile_h, tile_values(w.out_h(), kSpatialSizes, true)),
              knob(knobs::tile_w, tile_values(w.out_w(), kSpatialSizes, true)),
              knob(knobs::tile_c, tile_values(w.dim("C"), kChannelSizes)), knob(knobs::async_copy_depth, depth),
              knob(knobs::fusion_level, fusion)};
    case OpFamily::rows:
      return {
          knob(knobs::tile_m, tile_values(w.dim("M"), kRowSizes, true)),
          knob(knobs::tile_n, w.info().row_output == RowOutput::transposed ? inner_multiples(w.dim("N"), w.dim("inner"))
                                                                           : tile_values(w.dim("N"), kColumnSizes)),
          knob(knobs::async_copy_depth, depth)};
    case OpFamily::attention:
      return {knob(knobs::tile_m, tile_values(w.dim("S"), from_unit(kTileSizes, t, t.cube_m))),
              knob(knobs::tile_n, tile_values(w.dim("L"), kSequenceTiles)), knob(knobs::async_copy_depth, depth)};
    case OpFamily::table:
    case OpFamily::custom:
      break;
  }
  throw_bad_input("lowering: op '" + w.op() + "' has no tiling template");
}

KernelPlan family_plan(const Workload& w, const Target& t, const Schedule& s) {
  const double b = dtype_bytes(w.dtype());
  // On a CPU the micro-kernel's register block is the unit a tile is padded to: an edge
  // micro-tile costs a whole one.
  const bool block = !has_matrix_unit(t) && w.family() == OpFamily::matmul && s.has(std::string(knobs::micro_m)) &&
                     s.has(std::string(knobs::micro_n));
  const auto unit = [&](std::string_view knob, int fractal) {
    return double(std::max<std::int64_t>(1, block ? s.at(std::string(knob)) : fractal));
  };
  Common c{w,
           t,
           s,
           b,
           k_granule_bytes(t) / b,
           unit(knobs::micro_m, t.cube_m),
           unit(knobs::micro_n, t.cube_n),
           int(s.get_or(std::string(knobs::async_copy_depth), 1)),
           int(s.get_or(std::string(knobs::fusion_level), 0))};
  c.register_block = block;
  switch (w.family()) {
    case OpFamily::matmul:
      return plan_matmul(c);
    case OpFamily::conv:
      return plan_conv(c);
    case OpFamily::depthwise:
      return plan_depthwise(c);
    case OpFamily::rows:
      return plan_rows(c);
    case OpFamily::attention:
      return plan_attention(c);
    case OpFamily::table:
    case OpFamily::custom:
      break;
  }
  throw_bad_input("lowering: op '" + w.op() + "' has no tiling template");
}

struct Registered {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const OpLowering>> by_op;
};

Registered& registered() {
  static Registered* r = new Registered;  // never destroyed: see core/op_registry.cpp
  return *r;
}

// Only ops of the custom family consult the registry: the built-in families, which every
// plan_kernel call of the search and the simulator takes, never pay for its lock.
std::shared_ptr<const OpLowering> custom_lowering(const Workload& w) {
  if (w.family() != OpFamily::custom) return nullptr;
  Registered& r = registered();
  std::lock_guard lock(r.mu);
  const auto it = r.by_op.find(w.op());
  return it == r.by_op.end() ? nullptr : it->second;
}

// Preferred value of a knob in a vendor-style default tiling.
std::int64_t preferred(const std::string& knob, const Workload& w) {
  const bool cube = w.is_matmul_like() || w.family() == OpFamily::attention;
  if (knob == knobs::tile_m) return cube ? 128 : 8;
  if (knob == knobs::tile_n) return cube || w.is_conv() ? 128 : 1024;
  if (knob == knobs::tile_k) return 64;
  if (knob == knobs::k_steps) return 2;
  if (knob == knobs::async_copy_depth) return 2;
  // What a vendor stack fuses by default (CANN's UB fusion, TensorRT): bias and
  // activations, and the residual add and normalisation after a matmul or conv
  // (docs/job-spec.md, "Fusion and the vendor default").
  if (knob == knobs::fusion_level) return 2;
  if (knob == knobs::tile_h || knob == knobs::tile_w) return 16;
  if (knob == knobs::tile_c) return 64;
  return 0;  // tile_order: row-major
}

bool is_size_knob(const std::string& name) { return name.rfind("tile_", 0) == 0 && name != knobs::tile_order; }

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

void register_lowering(const std::string& op, std::shared_ptr<const OpLowering> lowering) {
  if (!lowering) throw_bad_input("register_lowering: op '" + op + "' needs a lowering");
  Registered& r = registered();
  std::lock_guard lock(r.mu);
  if (!r.by_op.emplace(op, std::move(lowering)).second) {
    throw_bad_input("register_lowering: op '" + op + "' already has a lowering");
  }
}

bool can_lower(const Workload& w) {
  if (w.op().empty()) return false;  // a default-constructed Workload names no op
  if (w.family() == OpFamily::table) return false;
  return w.family() != OpFamily::custom || custom_lowering(w) != nullptr;
}

std::vector<Knob> knobs_for(const Workload& w, const Target& t) {
  if (auto custom = custom_lowering(w)) return custom->knobs(w, t);
  return family_knobs(w, t);
}

KernelPlan plan_kernel(const Workload& w, const Target& t, const Schedule& s) {
  if (auto custom = custom_lowering(w)) return custom->plan(w, t, s);
  return family_plan(w, t, s);
}

ScheduleSpace space_for(const Workload& w, const Target& t) {
  auto custom = custom_lowering(w);
  auto knobs = custom ? custom->knobs(w, t) : family_knobs(w, t);
  return ScheduleSpace(std::move(knobs), [w, t, custom](const Schedule& s) {
    return (custom ? custom->plan(w, t, s) : family_plan(w, t, s)).verdict;
  });
}

Schedule default_schedule(const Workload& w, const Target& t) {
  const ScheduleSpace space = space_for(w, t);
  // Walk the space with each knob's values ordered by closeness to the vendor
  // preference, first knob outermost; the first valid point is the default.
  std::vector<std::vector<int>> order;
  for (const auto& k : space.knobs()) {
    std::vector<int> idx(k.values.size());
    std::iota(idx.begin(), idx.end(), 0);
    const bool size_knob = is_size_knob(k.name);
    const double want = double(preferred(k.name, w));
    auto dist = [&](int i) {
      const double v = double(k.values[i]);
      return size_knob ? std::abs(std::log2(v) - std::log2(want)) : std::abs(v - want);
    };
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return dist(a) < dist(b); });
    order.push_back(std::move(idx));
  }
  Point digits(space.dimensions(), 0);
  for (std::uint64_t n = 0; n < space.size(); ++n) {
    Point p(space.dimensions());
    for (std::size_t d = 0; d < p.size(); ++d) p[d] = order[d][digits[d]];
    const Schedule s = space.schedule_at(p);
    if (space.check(s).ok) return s;
    for (std::size_t d = digits.size(); d-- > 0;) {
      if (++digits[d] < int(order[d].size())) break;
      digits[d] = 0;
    }
  }
  throw Error(ErrorKind::bad_input, "lowering: no valid schedule for " + w.label() + " on " + t.name);
}

}  // namespace atvoss::lowering
