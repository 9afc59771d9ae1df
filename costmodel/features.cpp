// Map of this file: ATVOSS_FIXED_FEATURES lists every fixed feature (name, meaning, unit);
// TileModel holds the analytic quantities of one tiling; matmul_tile / conv_tile /
// depthwise_tile / row_tile fill it per op template; write_derived turns it into row
// values (occupancies, waves, roofline estimates). Knob semantics follow
// shared/CALIBRATION.md section 2; the estimates are deliberately crude — they only have
// to order schedules, and the learned model corrects them.
#include "costmodel/features.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "core/error.hpp"

namespace atvoss::costmodel {
namespace {

// clang-format off
#define ATVOSS_FIXED_FEATURES(X) \
  X(tmpl_matmul, "row comes from the matmul/batch_matmul template", "flag") \
  X(tmpl_conv, "row comes from the conv2d (implicit GEMM) template", "flag") \
  X(tmpl_depthwise, "row comes from the depthwise_conv2d template", "flag") \
  X(tmpl_row, "row comes from the elementwise/layernorm/softmax template", "flag") \
  X(tmpl_generic, "row comes from a recorded space (generic knobs only)", "flag") \
  X(a_tile_bytes, "bytes of the A/input operand tile per reduction step", "bytes(log2)") \
  X(b_tile_bytes, "bytes of the B/weight operand tile per reduction step", "bytes(log2)") \
  X(c_tile_bytes, "bytes of the output/accumulator tile", "bytes(log2)") \
  X(l0a_occupancy, "L0A bytes needed (ping-pong when depth>1) / L0A capacity", "fraction") \
  X(l0b_occupancy, "L0B bytes needed (ping-pong when depth>1) / L0B capacity", "fraction") \
  X(l0c_occupancy, "L0C accumulator bytes / L0C capacity", "fraction") \
  X(l1_occupancy, "L1 bytes with async_copy_depth GM copies in flight / L1 capacity", "fraction") \
  X(ub_occupancy, "UB bytes (output + fused epilogue, depth copies) / UB capacity", "fraction") \
  X(max_occupancy, "largest of the occupancies; > 1 means the schedule cannot fit", "fraction") \
  X(tile_intensity, "FLOPs per operand byte moved for one tile step", "flop/byte(log2)") \
  X(tiles, "output tiles of the whole op", "count(log2)") \
  X(waves, "tiles / cores that run them", "count") \
  X(log_waves, "log2 of waves", "count(log2)") \
  X(tail_efficiency, "tiles / (ceil(waves) * cores): core use in the last wave averaged", "fraction") \
  X(padding_waste, "1 - useful work / work done including edge and fractal padding", "fraction") \
  X(fractal_waste, "1 - tile elements / tile elements padded to the 16-wide fractal", "fraction") \
  X(k_iters, "reduction steps per tile (ceil(K / tile_k))", "count(log2)") \
  X(gm_loads, "GM copies per tile and operand (ceil(K / (tile_k * k_steps)))", "count(log2)") \
  X(gm_read_bytes, "estimated GM -> L1/UB bytes of the whole op, with re-reads", "bytes(log2)") \
  X(gm_write_bytes, "estimated on-chip -> GM bytes, unfused epilogue passes included", "bytes(log2)") \
  X(l1_l0_bytes, "estimated L1 -> L0 bytes of the whole op", "bytes(log2)") \
  X(traffic_ratio, "estimated GM bytes / compulsory bytes", "ratio(log2)") \
  X(copy_bytes, "bytes of one GM copy (one operand block of k_steps steps)", "bytes(log2)") \
  X(copy_efficiency, "min(1, copy bytes / 16 KB knee): share of full MTE2 bandwidth", "fraction") \
  X(kernels, "kernels launched (1 + unfused epilogue ops)", "count") \
  X(fused_ops, "epilogue ops fused into the tile at this fusion_level", "count") \
  X(unfused_ops, "epilogue ops left as separate GM round trips", "count") \
  X(output_on_chip, "fusion_level 3: output tile kept on chip for the next op", "flag") \
  X(row_fits, "tile holds a whole row (required to fuse/compute layernorm, softmax)", "flag") \
  X(halo_overhead, "input elements read per tile / input elements it owns (conv halo)", "ratio") \
  X(copy_depth_hides, "1 when async_copy_depth >= 2 (transfer can overlap compute)", "flag") \
  X(est_compute_us, "estimated compute time, cube or vector, critical core", "us(log2)") \
  X(est_mte2_us, "estimated GM -> on-chip transfer time, critical core", "us(log2)") \
  X(est_mte1_us, "estimated L1 -> L0 transfer time, critical core", "us(log2)") \
  X(est_hbm_us, "estimated GM traffic / chip DRAM bandwidth", "us(log2)") \
  X(est_time_us, "roofline-style total estimate incl. launches", "us(log2)") \
  X(compute_transfer_ratio, "estimated compute time / transfer time", "ratio(log2)") \
  X(wl_log_flops, "workload FLOPs of the main op", "flop(log2)") \
  X(wl_log_bytes, "workload compulsory GM bytes", "bytes(log2)") \
  X(wl_gemm_m, "implicit-GEMM M (rows of output)", "count(log2)") \
  X(wl_gemm_n, "implicit-GEMM N (columns of output)", "count(log2)") \
  X(wl_gemm_k, "implicit-GEMM K (reduction length)", "count(log2)") \
  X(wl_batch, "batch (B of batch_matmul, N of conv)", "count(log2)") \
  X(wl_dtype_bytes, "bytes per element", "bytes") \
  X(wl_epilogue_ops, "epilogue ops of the workload", "count") \
  X(tg_peak_flops, "target peak FLOP/s for this dtype, whole chip", "flop/s(log2)") \
  X(tg_hbm_bw, "target DRAM bandwidth, chip-wide", "bytes/s(log2)") \
  X(tg_l2_bw, "target L2 bandwidth, chip-wide", "bytes/s(log2)") \
  X(tg_mte2_bw, "target GM -> L1 bandwidth per core", "bytes/cycle(log2)") \
  X(tg_cores, "cores with a cube unit", "count") \
  X(tg_vector_cores, "cores with a vector unit", "count") \
  X(tg_clock_ghz, "core clock", "GHz") \
  X(tg_l0a_bytes, "L0A capacity", "bytes(log2)") \
  X(tg_l0c_bytes, "L0C capacity", "bytes(log2)") \
  X(tg_l1_bytes, "L1 capacity", "bytes(log2)") \
  X(tg_ub_bytes, "UB capacity", "bytes(log2)") \
  X(tg_l2_bytes, "L2 capacity", "bytes(log2)") \
  X(tg_launch_us, "launch overhead per kernel", "us")
// clang-format on

enum Fixed : std::size_t {
#define ATVOSS_ENUM(id, meaning, unit) f_##id,
  ATVOSS_FIXED_FEATURES(ATVOSS_ENUM)
#undef ATVOSS_ENUM
  kFixedCount
};

// Knobs of the fixed contract (common.md), each as value and log2.
constexpr std::array<const char*, 10> kNamedKnobs = {
    "tile_m", "tile_n", "tile_k", "tile_h", "tile_w", "tile_c",
    "k_steps", "async_copy_depth", "tile_order", "fusion_level"};
constexpr std::size_t kNamedBase = kFixedCount;
constexpr std::size_t kGenericBase = kNamedBase + 2 * kNamedKnobs.size();
constexpr std::size_t kTotal = kGenericBase + 2 * kGenericKnobSlots;

std::vector<FeatureInfo> build_infos() {
  std::vector<FeatureInfo> infos;
#define ATVOSS_INFO(id, meaning, unit) infos.push_back({#id, meaning, unit});
  ATVOSS_FIXED_FEATURES(ATVOSS_INFO)
#undef ATVOSS_INFO
  for (const char* k : kNamedKnobs) {
    infos.push_back({std::string("knob_") + k, std::string("knob ") + k + " value (0 if absent)",
                     "knob value"});
    infos.push_back({std::string("log2_") + k, std::string("log2 of knob ") + k, "log2"});
  }
  for (std::size_t i = 0; i < kGenericKnobSlots; ++i) {
    const std::string n = std::to_string(i);
    infos.push_back({"gen_knob_" + n, "recorded space: value of knob #" + n + " in sorted-name order",
                     "knob value"});
    infos.push_back({"gen_log2_" + n, "recorded space: sign(v)*log2(1+|v|) of knob #" + n, "log2"});
  }
  return infos;
}

double lg(double x) { return std::log2(std::max(x, 0.0) + 1.0); }
double signed_lg(double x) { return x < 0 ? -lg(-x) : lg(x); }
double ceil_div(double a, double b) { return std::ceil(a / std::max(b, 1.0)); }
double round_up(double a, double m) { return ceil_div(a, m) * m; }

// What the op templates agree on: one output tile streams k_iters reduction steps;
// every byte figure is for the whole op unless it says per tile.
struct TileModel {
  double tiles = 1;
  double useful_work = 1, padded_work = 1;  // elements or MACs, for padding waste
  double fractal_waste = 0;
  double a_bytes = 0, b_bytes = 0, c_bytes = 0;
  double l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;
  double intensity = 0;
  double k_iters = 1, gm_loads = 1;
  double gm_read = 0, gm_write = 0, l1_l0 = 0;
  double copy_bytes = 0;
  double halo = 1;
  double compute_cycles = 0;  // per tile
  double mte2_cycles = 0;     // per tile
  double mte1_cycles = 0;     // per tile
  double cores = 1;
  bool row_fits = true;
};

struct Knobs {
  double tm, tn, tk, th, tw, tc, ks, depth, order, fusion;
};

Knobs read_knobs(const Schedule& s) {
  auto g = [&](const char* n, double dflt) {
    return std::max(1.0, double(s.get_or(n, std::int64_t(dflt))));
  };
  Knobs k{};
  k.tm = g("tile_m", 16);
  k.tn = g("tile_n", 16);
  k.tk = g("tile_k", 16);
  k.th = g("tile_h", 16);
  k.tw = g("tile_w", 16);
  k.tc = g("tile_c", 16);
  k.ks = g("k_steps", 1);
  k.depth = g("async_copy_depth", 1);
  k.order = std::max<double>(0, double(s.get_or("tile_order", 0)));
  k.fusion = std::max<double>(0, double(s.get_or("fusion_level", 0)));
  return k;
}

// Fusion class of an epilogue op: the lowest fusion_level that fuses it.
int fusion_class(const std::string& op) {
  if (op == "bias" || op == "relu" || op == "gelu") return 1;
  return 2;  // batchnorm, add, layernorm
}

struct Epilogue {
  double fused = 0, unfused = 0;
  bool on_chip = false;
};

Epilogue epilogue_split(const Workload& w, double fusion, bool row_fits) {
  Epilogue e;
  for (const auto& op : w.epilogue()) {
    const bool fusable = fusion_class(op) <= fusion && (op != "layernorm" || row_fits);
    (fusable ? e.fused : e.unfused) += 1;
  }
  e.on_chip = fusion >= 3;
  return e;
}

double out_bytes_per_elem(DType d) { return dtype_bytes(d); }
// Cube accumulators are fp32 (int32 for int8): 4 bytes per output element in L0C.
double acc_bytes(DType) { return 4.0; }

// Shared GEMM core for matmul-like and conv: gm/gn/gk are the implicit-GEMM dims,
// batch repeats the grid, a_halo scales A traffic (conv input re-read by halos).
TileModel gemm_tile(const Target& t, DType dt, double batch, double gm, double gn, double gk,
                    double tile_m, const Knobs& k, double a_halo) {
  TileModel m;
  const double db = dtype_bytes(dt);
  const double c0 = std::max(16.0, 32.0 / db);
  const double tm = std::min(tile_m, round_up(gm, 16)), tn = std::min(k.tn, round_up(gn, 16));
  const double tk = std::min(k.tk, round_up(gk, c0));
  const double tm_p = round_up(tm, 16), tn_p = round_up(tn, 16), tk_p = round_up(tk, c0);
  const double grid_m = ceil_div(gm, tm), grid_n = ceil_div(gn, tn);
  m.tiles = batch * grid_m * grid_n;
  m.k_iters = ceil_div(gk, tk);
  m.gm_loads = ceil_div(m.k_iters, k.ks);
  m.useful_work = batch * gm * gn * gk;
  m.padded_work = m.tiles * tm_p * tn_p * m.k_iters * tk_p;
  m.fractal_waste = 1.0 - (tm * tn * tk) / (tm_p * tn_p * tk_p);
  m.a_bytes = tm_p * tk_p * db * a_halo;
  m.b_bytes = tk_p * tn_p * db;
  m.c_bytes = tm_p * tn_p * acc_bytes(dt);
  const double pingpong = k.depth > 1 ? 2.0 : 1.0;
  m.l0a = tm_p * tk_p * db * pingpong;
  m.l0b = tk_p * tn_p * db * pingpong;
  m.l0c = m.c_bytes;
  m.l1 = (m.a_bytes + m.b_bytes) * k.ks * k.depth;
  m.intensity = 2.0 * tm * tn * tk / std::max(1.0, m.a_bytes + m.b_bytes);
  m.copy_bytes = std::min(m.a_bytes, m.b_bytes) * k.ks;
  const double a_total = batch * gm * gk * db * a_halo, b_total = batch * gk * gn * db;
  m.gm_read = a_total * grid_n + b_total * grid_m;
  m.l1_l0 = m.gm_read;
  m.gm_write = batch * gm * gn * db;
  m.cores = std::max(1, t.ai_cores);
  m.compute_cycles = m.k_iters * tm_p * tn_p * tk_p / std::max(1.0, t.macs_per_cycle(dt));
  const double eff = 0.7 + 0.3 * std::min(1.0, m.copy_bytes / kCopyKneeBytes);
  const double per_load = (m.a_bytes + m.b_bytes) * k.ks /
                              std::max(1.0, t.mte2_bytes_per_cycle * eff) +
                          2 * t.mte2_copy_start_cycles;
  m.mte2_cycles = m.gm_loads * per_load;
  m.mte1_cycles = m.k_iters * (m.a_bytes / std::max(1.0, t.mte1_a_bytes_per_cycle) +
                               m.b_bytes / std::max(1.0, t.mte1_b_bytes_per_cycle) +
                               2 * t.mte1_start_cycles);
  return m;
}

TileModel matmul_tile(const Workload& w, const Target& t, const Knobs& k) {
  const double batch = w.op() == "batch_matmul" ? double(w.dim("B")) : 1.0;
  return gemm_tile(t, w.dtype(), batch, double(w.dim("M")), double(w.dim("N")),
                   double(w.dim("K")), k.tm, k, 1.0);
}

double conv_halo(const Workload& w, double th, double tw) {
  const double s = double(w.dim("stride"));
  const double in_h = (th - 1) * s + double(w.dim("R")), in_w = (tw - 1) * s + double(w.dim("S"));
  return (in_h * in_w) / std::max(1.0, th * tw * s * s);
}

TileModel conv_tile(const Workload& w, const Target& t, const Knobs& k) {
  const double ho = double(w.out_h()), wo = double(w.out_w());
  const double th = std::min(k.th, ho), tw = std::min(k.tw, wo);
  const double halo = conv_halo(w, th, tw);
  const double gk = double(w.dim("C") * w.dim("R") * w.dim("S"));
  // Spatial tiles: the GEMM M tile is th*tw output pixels; edge tiles pad.
  const double gm = ceil_div(ho, th) * th * ceil_div(wo, tw) * tw;
  TileModel m = gemm_tile(t, w.dtype(), double(w.dim("N")), gm, double(w.dim("K")), gk, th * tw,
                          k, halo);
  m.useful_work = double(w.dim("N")) * ho * wo * double(w.dim("K")) * gk;
  m.halo = halo;
  return m;
}

TileModel depthwise_tile(const Workload& w, const Target& t, const Knobs& k) {
  TileModel m;
  const double db = dtype_bytes(w.dtype());
  const double ho = double(w.out_h()), wo = double(w.out_w()), c = double(w.dim("C"));
  const double th = std::min(k.th, ho), tw = std::min(k.tw, wo), tc = std::min(k.tc, c);
  const double rs = double(w.dim("R") * w.dim("S"));
  m.halo = conv_halo(w, th, tw);
  const double tc_p = round_up(tc, 32.0 / db);
  m.tiles = double(w.dim("N")) * ceil_div(ho, th) * ceil_div(wo, tw) * ceil_div(c, tc);
  m.useful_work = double(w.dim("N")) * ho * wo * c;
  m.padded_work = m.tiles * th * tw * tc_p;
  m.fractal_waste = 1.0 - tc / tc_p;
  m.a_bytes = th * tw * m.halo * tc_p * db;
  m.b_bytes = rs * tc_p * db;
  m.c_bytes = th * tw * tc_p * db;
  m.ub = (m.a_bytes + m.c_bytes) * k.depth + m.b_bytes;
  m.intensity = 2.0 * th * tw * tc * rs / std::max(1.0, m.a_bytes + m.c_bytes);
  m.copy_bytes = m.a_bytes;
  m.gm_read = m.tiles * (m.a_bytes + m.b_bytes);
  m.gm_write = m.useful_work * db;
  m.cores = std::max(1, t.vector_cores);
  m.compute_cycles = th * tw * tc_p * rs * db / std::max(1.0, t.vector_bytes_per_cycle);
  const double eff = 0.7 + 0.3 * std::min(1.0, m.copy_bytes / kCopyKneeBytes);
  m.mte2_cycles = (m.a_bytes + m.b_bytes) / std::max(1.0, t.mte2_bytes_per_cycle * eff) +
                  t.mte2_copy_start_cycles;
  return m;
}

TileModel row_tile(const Workload& w, const Target& t, const Knobs& k) {
  TileModel m;
  const double db = dtype_bytes(w.dtype());
  const double rows = double(w.dim("M")), cols = double(w.dim("N"));
  const double tm = std::min(k.tm, rows), tn = std::min(k.tn, cols);
  const double tn_p = round_up(tn, 32.0 / db);
  const bool binary = w.op() == "elementwise";
  m.row_fits = binary || tn >= cols;
  const double passes = m.row_fits ? 1.0 : 2.0;  // a split row is read once for stats, once to apply
  m.tiles = ceil_div(rows, tm) * ceil_div(cols, tn);
  m.useful_work = rows * cols;
  m.padded_work = m.tiles * tm * tn_p;
  m.fractal_waste = 1.0 - tn / tn_p;
  m.a_bytes = tm * tn_p * db;
  m.b_bytes = binary ? m.a_bytes : 0.0;
  m.c_bytes = m.a_bytes;
  m.ub = (m.a_bytes + m.b_bytes + m.c_bytes) * k.depth;
  m.intensity = (binary ? 1.0 : 5.0) * tm * tn / std::max(1.0, m.a_bytes + m.b_bytes + m.c_bytes);
  m.copy_bytes = m.a_bytes;
  m.gm_read = m.tiles * (m.a_bytes + m.b_bytes) * passes;
  m.gm_write = rows * cols * db;
  m.cores = std::max(1, t.vector_cores);
  m.compute_cycles = (binary ? 1.0 : 5.0) * m.a_bytes / std::max(1.0, t.vector_bytes_per_cycle);
  const double eff = 0.7 + 0.3 * std::min(1.0, m.copy_bytes / kCopyKneeBytes);
  m.mte2_cycles = passes * ((m.a_bytes + m.b_bytes) / std::max(1.0, t.mte2_bytes_per_cycle * eff) +
                            t.mte2_copy_start_cycles * (binary ? 2.0 : 1.0));
  return m;
}

enum class Template { matmul, conv, depthwise, row, generic };

Template template_of(const Workload& w) {
  if (w.is_matmul_like()) return Template::matmul;
  if (w.op() == "conv2d") return Template::conv;
  if (w.op() == "depthwise_conv2d") return Template::depthwise;
  if (w.op() == "elementwise" || w.op() == "layernorm" || w.op() == "softmax") return Template::row;
  if (w.op() == "recorded") return Template::generic;
  throw_bad_input("cost model features: op '" + w.op() + "' has no feature template");
}

TileModel tile_model(Template tp, const Workload& w, const Target& t, const Knobs& k) {
  switch (tp) {
    case Template::matmul: return matmul_tile(w, t, k);
    case Template::conv: return conv_tile(w, t, k);
    case Template::depthwise: return depthwise_tile(w, t, k);
    default: return row_tile(w, t, k);
  }
}

double cycles_us(const Target& t, double cycles) { return cycles / (std::max(0.01, t.clock_ghz) * 1e3); }

// Occupancy, waves, traffic and time estimates common to every template.
void write_derived(const Workload& w, const Target& t, const Knobs& k, TileModel m,
                   std::span<float> out) {
  const Epilogue ep = epilogue_split(w, k.fusion, m.row_fits);
  const double db = out_bytes_per_elem(w.dtype());
  if (w.is_matmul_like() || w.is_conv()) {
    // The output tile lands in UB for the fused epilogue (one extra buffer per fused op).
    m.ub = std::max(m.ub, m.c_bytes / acc_bytes(w.dtype()) * db * (1 + ep.fused) * k.depth);
    m.gm_write += ep.unfused * 2 * m.gm_write;  // each unfused op reads and writes the tensor
  }
  if (ep.on_chip) m.gm_write *= 0.5;
  auto occ = [](double need, double cap) { return need / std::max(1.0, cap); };
  const double occ_l0a = occ(m.l0a, double(t.l0a_bytes)), occ_l0b = occ(m.l0b, double(t.l0b_bytes));
  const double occ_l0c = occ(m.l0c, double(t.l0c_bytes)), occ_l1 = occ(m.l1, double(t.l1_bytes));
  const double occ_ub = occ(m.ub, double(t.ub_bytes));
  const double waves = m.tiles / m.cores;
  const double tail = m.tiles / (std::ceil(waves) * m.cores);
  const double core_tiles = std::ceil(waves);
  const bool overlap = k.depth >= 2;
  const double compute = cycles_us(t, core_tiles * m.compute_cycles);
  const double mte2 = cycles_us(t, core_tiles * m.mte2_cycles);
  const double mte1 = cycles_us(t, core_tiles * m.mte1_cycles);
  const double gm_total = m.gm_read + m.gm_write;
  // Re-reads are served by L2 when the operands fit there.
  const double hbm_bytes = w.compulsory_bytes() <= double(t.l2_bytes)
                               ? std::max(w.compulsory_bytes(), gm_total * 0.25) : gm_total;
  const double hbm = hbm_bytes / std::max(1.0, t.hbm_bytes_per_second()) * 1e6;
  const double pipe = overlap ? std::max({compute, mte2, mte1}) : compute + mte2 + mte1;
  const double launches = (1 + ep.unfused) * t.launch_us;
  const double est = std::max(pipe, hbm) + launches;
  const double transfer = std::max({mte2, mte1, hbm, 1e-9});

  out[f_a_tile_bytes] = float(lg(m.a_bytes));
  out[f_b_tile_bytes] = float(lg(m.b_bytes));
  out[f_c_tile_bytes] = float(lg(m.c_bytes));
  out[f_l0a_occupancy] = float(occ_l0a);
  out[f_l0b_occupancy] = float(occ_l0b);
  out[f_l0c_occupancy] = float(occ_l0c);
  out[f_l1_occupancy] = float(occ_l1);
  out[f_ub_occupancy] = float(occ_ub);
  out[f_max_occupancy] = float(std::max({occ_l0a, occ_l0b, occ_l0c, occ_l1, occ_ub}));
  out[f_tile_intensity] = float(lg(m.intensity));
  out[f_tiles] = float(lg(m.tiles));
  out[f_waves] = float(waves);
  out[f_log_waves] = float(lg(waves));
  out[f_tail_efficiency] = float(tail);
  out[f_padding_waste] = float(1.0 - m.useful_work / std::max(m.useful_work, m.padded_work));
  out[f_fractal_waste] = float(m.fractal_waste);
  out[f_k_iters] = float(lg(m.k_iters));
  out[f_gm_loads] = float(lg(m.gm_loads));
  out[f_gm_read_bytes] = float(lg(m.gm_read));
  out[f_gm_write_bytes] = float(lg(m.gm_write));
  out[f_l1_l0_bytes] = float(lg(m.l1_l0));
  out[f_traffic_ratio] = float(lg(gm_total / std::max(1.0, w.compulsory_bytes())));
  out[f_copy_bytes] = float(lg(m.copy_bytes));
  out[f_copy_efficiency] = float(std::min(1.0, m.copy_bytes / kCopyKneeBytes));
  out[f_kernels] = float(1 + ep.unfused);
  out[f_fused_ops] = float(ep.fused);
  out[f_unfused_ops] = float(ep.unfused);
  out[f_output_on_chip] = ep.on_chip ? 1.0f : 0.0f;
  out[f_row_fits] = m.row_fits ? 1.0f : 0.0f;
  out[f_halo_overhead] = float(m.halo);
  out[f_copy_depth_hides] = overlap ? 1.0f : 0.0f;
  out[f_est_compute_us] = float(lg(compute));
  out[f_est_mte2_us] = float(lg(mte2));
  out[f_est_mte1_us] = float(lg(mte1));
  out[f_est_hbm_us] = float(lg(hbm));
  out[f_est_time_us] = float(lg(est));
  out[f_compute_transfer_ratio] = float(std::log2((compute + 1e-9) / transfer));
}

struct GemmDims {
  double m = 0, n = 0, k = 0, batch = 1;
};

GemmDims gemm_dims(const Workload& w) {
  auto d = [&](const char* n) { return double(w.dim(n)); };
  if (w.op() == "matmul") return {d("M"), d("N"), d("K"), 1};
  if (w.op() == "batch_matmul") return {d("M"), d("N"), d("K"), d("B")};
  if (w.op() == "conv2d") {
    return {double(w.out_h() * w.out_w()), d("K"), d("C") * d("R") * d("S"), d("N")};
  }
  if (w.op() == "depthwise_conv2d") {
    return {double(w.out_h() * w.out_w()), d("C"), d("R") * d("S"), d("N")};
  }
  if (w.op() == "recorded") return {};
  return {d("M"), d("N"), 1, 1};
}

std::vector<float> context_block(const Workload& w, const Target& t) {
  std::vector<float> c(kTotal, 0.0f);
  const Template tp = template_of(w);
  c[f_tmpl_matmul + static_cast<std::size_t>(tp)] = 1.0f;
  const GemmDims g = gemm_dims(w);
  c[f_wl_log_flops] = float(lg(w.flops()));
  c[f_wl_log_bytes] = float(lg(w.compulsory_bytes()));
  c[f_wl_gemm_m] = float(lg(g.m));
  c[f_wl_gemm_n] = float(lg(g.n));
  c[f_wl_gemm_k] = float(lg(g.k));
  c[f_wl_batch] = float(lg(g.batch));
  c[f_wl_dtype_bytes] = float(dtype_bytes(w.dtype()));
  c[f_wl_epilogue_ops] = float(w.epilogue().size());
  c[f_tg_peak_flops] = float(lg(t.peak_flops(w.dtype())));
  c[f_tg_hbm_bw] = float(lg(t.hbm_bytes_per_second()));
  c[f_tg_l2_bw] = float(lg(t.l2_bytes_per_cycle * t.clock_ghz * 1e9));
  c[f_tg_mte2_bw] = float(lg(t.mte2_bytes_per_cycle));
  c[f_tg_cores] = float(t.ai_cores);
  c[f_tg_vector_cores] = float(t.vector_cores);
  c[f_tg_clock_ghz] = float(t.clock_ghz);
  c[f_tg_l0a_bytes] = float(lg(double(t.l0a_bytes)));
  c[f_tg_l0c_bytes] = float(lg(double(t.l0c_bytes)));
  c[f_tg_l1_bytes] = float(lg(double(t.l1_bytes)));
  c[f_tg_ub_bytes] = float(lg(double(t.ub_bytes)));
  c[f_tg_l2_bytes] = float(lg(double(t.l2_bytes)));
  c[f_tg_launch_us] = float(t.launch_us);
  return c;
}

void write_named_knobs(const Schedule& s, std::span<float> out) {
  for (std::size_t i = 0; i < kNamedKnobs.size(); ++i) {
    if (!s.has(kNamedKnobs[i])) continue;
    const double v = double(s.at(kNamedKnobs[i]));
    out[kNamedBase + 2 * i] = float(v);
    out[kNamedBase + 2 * i + 1] = float(signed_lg(v));
  }
}

void write_generic_knobs(const Schedule& s, std::span<float> out) {
  if (s.values().size() > kGenericKnobSlots) {
    throw_bad_input("cost model features: recorded schedule has " +
                    std::to_string(s.values().size()) + " knobs; at most " +
                    std::to_string(kGenericKnobSlots) + " are supported");
  }
  std::size_t i = 0;
  for (const auto& [name, value] : s.values()) {
    out[kGenericBase + 2 * i] = float(value);
    out[kGenericBase + 2 * i + 1] = float(signed_lg(double(value)));
    ++i;
  }
}

}  // namespace

int feature_version() { return kFeatureVersion; }

const std::vector<FeatureInfo>& feature_infos() {
  static const std::vector<FeatureInfo> infos = build_infos();
  return infos;
}

std::size_t feature_count() { return kTotal; }

std::size_t feature_index(const std::string& name) {
  static const auto index = [] {
    std::unordered_map<std::string, std::size_t> m;
    const auto& infos = feature_infos();
    for (std::size_t i = 0; i < infos.size(); ++i) m.emplace(infos[i].name, i);
    return m;
  }();
  const auto it = index.find(name);
  if (it == index.end()) throw Error(ErrorKind::internal, "unknown feature '" + name + "'");
  return it->second;
}

Featurizer::Featurizer(const Workload& workload, const Target& target)
    : workload_(workload), target_(target), context_(context_block(workload, target)) {}

void Featurizer::write(const Schedule& schedule, std::span<float> out) const {
  std::copy(context_.begin(), context_.end(), out.begin());
  const Template tp = template_of(workload_);
  if (tp == Template::generic) {
    write_generic_knobs(schedule, out);
    return;
  }
  write_named_knobs(schedule, out);
  const Knobs k = read_knobs(schedule);
  write_derived(workload_, target_, k, tile_model(tp, workload_, target_, k), out);
  for (float& v : out) {
    if (!std::isfinite(v)) v = 0.0f;  // a degenerate target must not poison training
  }
}

FeatureMatrix Featurizer::featurize(std::span<const Schedule> schedules) const {
  FeatureMatrix m;
  m.rows = schedules.size();
  m.cols = kTotal;
  m.data.resize(m.rows * m.cols);
  for (std::size_t i = 0; i < m.rows; ++i) write(schedules[i], m.row(i));
  return m;
}

FeatureMatrix featurize(const Workload& workload, const Target& target,
                        std::span<const Schedule> schedules) {
  return Featurizer(workload, target).featurize(schedules);
}

std::vector<float> features(const Workload& workload, const Target& target,
                            const Schedule& schedule) {
  std::vector<float> row(kTotal);
  Featurizer(workload, target).write(schedule, row);
  return row;
}

}  // namespace atvoss::costmodel
