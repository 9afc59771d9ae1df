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
#include "costmodel/tile_analysis.hpp"

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
  X(l0a_occupancy, "L0A bytes with async_copy_depth buffers / L0A capacity", "fraction") \
  X(l0b_occupancy, "L0B bytes with async_copy_depth buffers / L0B capacity", "fraction") \
  X(l0c_occupancy, "L0C accumulator bytes / L0C capacity", "fraction") \
  X(l1_occupancy, "L1 bytes with async_copy_depth GM loads in flight / L1 capacity", "fraction") \
  X(ub_occupancy, "UB bytes (fused epilogue or vector tiles, in flight) / UB capacity", "fraction") \
  X(max_occupancy, "largest of the occupancies; > 1 means the schedule cannot fit", "fraction") \
  X(tile_intensity, "FLOPs per operand byte moved for one tile step", "flop/byte(log2)") \
  X(tiles, "output tiles of the whole op", "count(log2)") \
  X(waves, "tiles / cores that run them", "count") \
  X(log_waves, "log2 of waves", "count(log2)") \
  X(tail_efficiency, "tiles / (ceil(waves) * cores): core use averaged over waves", "fraction") \
  X(padding_waste, "1 - useful work / work done including edge and fractal padding", "fraction") \
  X(fractal_waste, "1 - tile elements / tile elements padded to the fractal", "fraction") \
  X(k_iters, "reduction steps per tile (ceil(K / tile_k))", "count(log2)") \
  X(gm_loads, "GM loads per tile (ceil(K steps / k_steps), times conv row groups)", "count(log2)") \
  X(steps_per_load, "reduction steps (times conv M sub-blocks) fed by one GM load", "count(log2)") \
  X(l2_read_bytes, "operand bytes fetched from GM, L2 hits included, re-reads included", "bytes(log2)") \
  X(hbm_read_bytes, "estimated bytes that miss L2 (tile_order decides the reuse distance)", "bytes(log2)") \
  X(gm_write_bytes, "bytes written to GM, unfused epilogue round trips included", "bytes(log2)") \
  X(l1_l0_bytes, "estimated L1 -> L0 bytes of the whole op", "bytes(log2)") \
  X(traffic_ratio, "estimated GM bytes / compulsory bytes", "ratio(log2)") \
  X(l2_hit_rate, "share of operand reads served by L2", "fraction") \
  X(copy_bytes, "bytes of the larger GM copy of one load", "bytes(log2)") \
  X(copy_efficiency, "share of full MTE2 bandwidth the copies reach (16 KB knee, alignment)", "fraction") \
  X(copy_knee_ratio, "min(1, copy bytes / 16 KB)", "fraction") \
  X(read_contention, "a core's GM read cost / its uncontended MTE2 cost (>= 1)", "ratio(log2)") \
  X(kernels, "kernels launched (1 + unfused epilogue ops)", "count") \
  X(fused_ops, "epilogue ops fused into the tile at this fusion_level (chain order)", "count") \
  X(unfused_ops, "epilogue ops left as separate GM round trips", "count") \
  X(output_on_chip, "fusion_level 3: output tile kept on chip for the next op", "flag") \
  X(row_fits, "tile holds a whole row (layernorm/softmax single pass, layernorm fusion)", "flag") \
  X(halo_overhead, "input elements read per tile / input elements it owns (conv halo)", "ratio") \
  X(copy_depth_hides, "1 when async_copy_depth >= 2 (transfer can overlap compute)", "flag") \
  X(est_mte2_us, "estimated GM -> L1/UB busy time of the busiest core", "us(log2)") \
  X(est_mte1_us, "estimated L1 -> L0 busy time of the busiest core", "us(log2)") \
  X(est_compute_us, "estimated cube + vector busy time of the busiest core", "us(log2)") \
  X(est_out_us, "estimated output path (fixpipe, fused epilogue, store) busy time", "us(log2)") \
  X(est_core_us, "estimated busiest-core time (pipes overlapped per async_copy_depth)", "us(log2)") \
  X(est_hbm_us, "estimated DRAM traffic / chip DRAM bandwidth", "us(log2)") \
  X(est_l2_us, "estimated L2 traffic / chip L2 bandwidth", "us(log2)") \
  X(est_peak_us, "FLOPs / chip peak (cube ops only)", "us(log2)") \
  X(est_epilogue_us, "estimated time of the unfused epilogue kernels", "us(log2)") \
  X(est_time_us, "roofline-style total estimate incl. launches", "us(log2)") \
  X(est_roofline_fraction, "physics floor (FLOPs/peak, bytes/HBM, 1 launch) / est_time_us", "fraction") \
  X(compute_transfer_ratio, "estimated compute time / largest transfer time", "ratio(log2)") \
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

enum class Template { matmul, conv, depthwise, row, generic };

Template template_of(const Workload& w) {
  if (w.is_matmul_like()) return Template::matmul;
  if (w.op() == "conv2d") return Template::conv;
  if (w.op() == "depthwise_conv2d") return Template::depthwise;
  if (w.op() == "elementwise" || w.op() == "layernorm" || w.op() == "softmax") return Template::row;
  if (w.op() == "recorded") return Template::generic;
  throw_bad_input("cost model features: op '" + w.op() + "' has no feature template");
}

// Lower bound of any schedule (DESIGN.md), so est_roofline_fraction is comparable
// across workloads: 1 means the estimate sits on the roofline.
double floor_us(const Workload& w, const Target& t) {
  const double compute = w.flops() / std::max(1.0, t.peak_flops(w.dtype()));
  const double bytes = w.compulsory_bytes() / std::max(1.0, t.hbm_bytes_per_second());
  return std::max(compute, bytes) * 1e6 + t.launch_us;
}

void write_derived(double floor, double mte2_bytes_per_cycle, const TileAnalysis& a,
                   std::span<float> out) {
  auto put = [&](Fixed f, double v) { out[f] = float(v); };
  auto put_lg = [&](Fixed f, double v) { out[f] = float(lg(v)); };
  put_lg(f_a_tile_bytes, a.a_tile_bytes);
  put_lg(f_b_tile_bytes, a.b_tile_bytes);
  put_lg(f_c_tile_bytes, a.c_tile_bytes);
  put(f_l0a_occupancy, a.l0a);
  put(f_l0b_occupancy, a.l0b);
  put(f_l0c_occupancy, a.l0c);
  put(f_l1_occupancy, a.l1);
  put(f_ub_occupancy, a.ub);
  put(f_max_occupancy, std::max({a.l0a, a.l0b, a.l0c, a.l1, a.ub}));
  put_lg(f_tile_intensity, a.intensity);
  put_lg(f_tiles, a.tiles);
  put(f_waves, a.waves);
  put_lg(f_log_waves, a.waves);
  put(f_tail_efficiency, a.tail_efficiency);
  put(f_padding_waste, a.padding_waste);
  put(f_fractal_waste, a.fractal_waste);
  put_lg(f_k_iters, a.k_iters);
  put_lg(f_gm_loads, a.gm_loads);
  put_lg(f_steps_per_load, a.steps_per_load);
  put_lg(f_l2_read_bytes, a.l2_read_bytes);
  put_lg(f_hbm_read_bytes, a.hbm_read_bytes);
  put_lg(f_gm_write_bytes, a.gm_write_bytes);
  put_lg(f_l1_l0_bytes, a.l1_l0_bytes);
  put_lg(f_traffic_ratio, a.traffic_ratio);
  put(f_l2_hit_rate, a.l2_hit);
  put_lg(f_copy_bytes, a.copy_bytes);
  put(f_copy_efficiency, a.copy_efficiency);
  put(f_copy_knee_ratio, std::min(1.0, a.copy_bytes / kCopyKneeBytes));
  put_lg(f_read_contention, a.in_cycles_per_byte * mte2_bytes_per_cycle);
  put(f_kernels, a.kernels);
  put(f_fused_ops, a.fused_ops);
  put(f_unfused_ops, a.unfused_ops);
  put(f_output_on_chip, a.on_chip ? 1 : 0);
  put(f_row_fits, a.row_fits ? 1 : 0);
  put(f_halo_overhead, a.halo);
  put(f_copy_depth_hides, a.overlap ? 1 : 0);
  put_lg(f_est_mte2_us, a.mte2_us);
  put_lg(f_est_mte1_us, a.mte1_us);
  put_lg(f_est_compute_us, a.compute_us);
  put_lg(f_est_out_us, a.out_us);
  put_lg(f_est_core_us, a.core_us);
  put_lg(f_est_hbm_us, a.hbm_us);
  put_lg(f_est_l2_us, a.l2_us);
  put_lg(f_est_peak_us, a.peak_us);
  put_lg(f_est_epilogue_us, a.epilogue_us);
  put_lg(f_est_time_us, a.est_us);
  put(f_est_roofline_fraction, floor / std::max(a.est_us, 1e-9));
  put(f_compute_transfer_ratio,
      std::log2((a.compute_us + 1e-9) / std::max({a.mte2_us, a.mte1_us, a.hbm_us, 1e-9})));
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

void write_named_knobs(const KnobSet& k, std::span<float> out) {
  static_assert(kNamedKnobs.size() == kNamedKnobCount);
  for (std::size_t i = 0; i < kNamedKnobCount; ++i) {
    if (!k.has(i)) continue;
    const double v = double(k.value(i));
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
    : generic_(template_of(workload) == Template::generic),
      tiling_(generic_ ? nullptr : std::make_shared<const TilingContext>(workload, target)),
      context_(context_block(workload, target)),
      floor_us_(generic_ ? 0.0 : floor_us(workload, target)),
      mte2_bytes_per_cycle_(target.mte2_bytes_per_cycle) {}

void Featurizer::write(const Schedule& schedule, std::span<float> out) const {
  std::copy(context_.begin(), context_.end(), out.begin());
  if (generic_) {
    write_generic_knobs(schedule, out);
    return;
  }
  const KnobSet knobs = KnobSet::from(schedule);
  write_named_knobs(knobs, out);
  write_derived(floor_us_, mte2_bytes_per_cycle_, tiling_->analyse(knobs), out);
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
