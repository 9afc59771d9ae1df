// Map of this file: ATVOSS_FIXED_FEATURES lists every fixed feature (name, meaning, unit);
// Featurizer::write lowers the schedule to its KernelPlan (lowering/) and fills the
// row: write_geometry (the interior tile: copies, steps, occupancies), write_traffic
// (tiles, waves, GM bytes, reuse distances against L2, fusion), write_roofline (the
// prior: each resource's work at the Target's published rate). No hardware behaviour
// is modelled here: the learned model finds it in the measurements.
#include "costmodel/features.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "core/error.hpp"
#include "core/roofline.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/knob_names.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::costmodel {
namespace {

// clang-format off
#define ATVOSS_FIXED_FEATURES(X) \
  X(tmpl_matmul, "row comes from the matmul/batch_matmul template", "flag") \
  X(tmpl_conv, "row comes from the conv2d (implicit GEMM) template", "flag") \
  X(tmpl_depthwise, "row comes from the depthwise_conv2d template", "flag") \
  X(tmpl_row, "row comes from the row-op template (elementwise, layernorm, softmax)", "flag") \
  X(tmpl_generic, "row comes from a measured table (generic knobs only)", "flag") \
  X(load_bytes, "bytes one GM load of the interior tile copies", "bytes(log2)") \
  X(copy_a_bytes, "bytes of the first GM copy of a load (A / input)", "bytes(log2)") \
  X(copy_b_bytes, "bytes of the second GM copy of a load (B / weights)", "bytes(log2)") \
  X(copy_a_segment, "contiguous row length of the first copy", "bytes(log2)") \
  X(copy_b_segment, "contiguous row length of the second copy", "bytes(log2)") \
  X(segments_512_aligned, "every copy's rows are whole multiples of 512 B", "flag") \
  X(segments_32_aligned, "every copy's rows are whole multiples of 32 B", "flag") \
  X(l0_step_bytes, "L1 -> L0 bytes of one reduction step", "bytes(log2)") \
  X(step_macs, "matrix-unit MACs of one step, padded to the fractal", "count(log2)") \
  X(step_vector_bytes, "vector-unit work of one step (ops x bytes)", "bytes(log2)") \
  X(tile_out_elems, "output elements of the interior tile", "count(log2)") \
  X(level0_occupancy, "bytes held at the compute unit's level 0 (nearest the compute) / its capacity", "fraction") \
  X(level1_occupancy, "bytes held at the compute unit's level 1 / its capacity", "fraction") \
  X(level2_occupancy, "bytes held at the compute unit's level 2 / its capacity", "fraction") \
  X(level3_occupancy, "bytes held at the compute unit's level 3 / its capacity", "fraction") \
  X(level4_occupancy, "bytes held at the compute unit's level 4 / its capacity", "fraction") \
  X(level5_occupancy, "bytes held at the compute unit's level 5 / its capacity", "fraction") \
  X(max_occupancy, "largest level occupancy; > 1 on a buffer cannot fit, on a cache spills", "fraction") \
  X(tile_intensity, "FLOPs per GM byte of one load of the interior tile", "flop/byte(log2)") \
  X(tiles, "output tiles of the whole op", "count(log2)") \
  X(waves, "tiles / cores that run them", "count") \
  X(log_waves, "log2 of waves", "count(log2)") \
  X(tail_efficiency, "tiles / (ceil(waves) * cores): core use averaged over waves", "fraction") \
  X(padding_waste, "1 - useful MACs / MACs issued including edge and fractal padding", "fraction") \
  X(k_iters, "reduction steps per interior tile", "count(log2)") \
  X(gm_loads, "GM loads per interior tile", "count(log2)") \
  X(steps_per_load, "reduction steps fed by one GM load", "count(log2)") \
  X(operand_read_bytes, "operand bytes the kernel fetches from GM, re-reads included", "bytes(log2)") \
  X(unique_read_bytes, "distinct operand bytes plus other reads (residuals, spills, passes)", "bytes(log2)") \
  X(gm_write_bytes, "bytes written to GM, unfused epilogue kernels included", "bytes(log2)") \
  X(separate_kernel_bytes, "GM bytes read and written by unfused epilogue kernels", "bytes(log2)") \
  X(l1_l0_bytes, "L1 -> L0 bytes of the whole op", "bytes(log2)") \
  X(traffic_ratio, "GM bytes (re-reads included) / compulsory bytes", "ratio(log2)") \
  X(a_rereads, "times operand A is fetched again after its first sweep", "count(log2)") \
  X(b_rereads, "times operand B is fetched again after its first sweep", "count(log2)") \
  X(a_reuse_distance_llc, "bytes touched between two uses of A / the last level's capacity", "ratio(log2)") \
  X(b_reuse_distance_llc, "bytes touched between two uses of B / the last level's capacity", "ratio(log2)") \
  X(kernels, "kernels launched (1 + unfused epilogue ops)", "count") \
  X(fused_ops, "epilogue ops fused into the tile at this fusion_level (chain order)", "count") \
  X(unfused_ops, "epilogue ops left as separate GM round trips", "count") \
  X(output_on_chip, "fusion_level 3: output tile handed to the next op on chip", "flag") \
  X(halo_overhead, "bytes one sweep loads of A / distinct bytes of A (conv halo)", "ratio") \
  X(copy_depth_hides, "1 when async_copy_depth >= 2 (transfer can overlap compute)", "flag") \
  X(buffers_in_flight, "async_copy_depth of the plan", "count") \
  X(reg_accumulators, "CPU register block: vector accumulators (independent FMA chains)", "count") \
  X(reg_loads_per_fma, "CPU register block: vector loads and broadcasts per FMA", "ratio") \
  X(reg_issue_efficiency, "CPU register block: FMA issue share of a reduction step (1 without one)", "fraction") \
  X(est_compute_us, "roofline: busiest core's matrix/vector work at peak rate", "us(log2)") \
  X(est_gm_us, "roofline: busiest core's GM load bytes at its GM bandwidth", "us(log2)") \
  X(est_l1_l0_us, "roofline: busiest core's L1 -> L0 bytes at the published rates", "us(log2)") \
  X(est_store_us, "roofline: busiest core's stored bytes at its store bandwidth", "us(log2)") \
  X(est_hbm_us, "roofline: distinct GM bytes at chip DRAM bandwidth", "us(log2)") \
  X(est_l2_us, "roofline: all operand GM bytes at chip L2 bandwidth", "us(log2)") \
  X(est_epilogue_us, "roofline: unfused epilogue kernels' GM bytes at DRAM bandwidth", "us(log2)") \
  X(est_time_us, "roofline total: the largest term + epilogue kernels + launches", "us(log2)") \
  X(est_roofline_fraction, "physics floor (FLOPs/peak, bytes/HBM, 1 launch) / est_time_us", "fraction") \
  X(compute_transfer_ratio, "est_compute_us / largest transfer term", "ratio(log2)") \
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
  X(tg_level0_bytes, "capacity of the compute unit's level 0 (nearest the compute)", "bytes(log2)") \
  X(tg_level1_bytes, "capacity of the compute unit's level 1", "bytes(log2)") \
  X(tg_level2_bytes, "capacity of the compute unit's level 2", "bytes(log2)") \
  X(tg_level3_bytes, "capacity of the compute unit's level 3", "bytes(log2)") \
  X(tg_level4_bytes, "capacity of the compute unit's level 4", "bytes(log2)") \
  X(tg_level5_bytes, "capacity of the compute unit's level 5", "bytes(log2)") \
  X(tg_launch_us, "launch overhead per kernel", "us")
// clang-format on

enum Fixed : std::size_t {
#define ATVOSS_ENUM(id, meaning, unit) f_##id,
  ATVOSS_FIXED_FEATURES(ATVOSS_ENUM)
#undef ATVOSS_ENUM
      kFixedCount
};

// The named knobs, each as value and log2: the NPU templates' (lowering/knob_names.hpp),
// then the host-only ones. The plan does not describe the host's register block or thread
// count, so without them a model cannot tell apart schedules that differ only there.
constexpr std::array<std::string_view, knobs::all.size() + knobs::host_only.size()> kFeatureKnobs = [] {
  std::array<std::string_view, knobs::all.size() + knobs::host_only.size()> k{};
  std::copy(knobs::host_only.begin(), knobs::host_only.end(),
            std::copy(knobs::all.begin(), knobs::all.end(), k.begin()));
  return k;
}();
constexpr std::size_t kNamedBase = kFixedCount;
constexpr std::size_t kGenericBase = kNamedBase + 2 * kFeatureKnobs.size();
constexpr std::size_t kTotal = kGenericBase + 2 * kGenericKnobSlots;

std::vector<FeatureInfo> build_infos() {
  std::vector<FeatureInfo> infos;
#define ATVOSS_INFO(id, meaning, unit) infos.push_back({#id, meaning, unit});
  ATVOSS_FIXED_FEATURES(ATVOSS_INFO)
#undef ATVOSS_INFO
  for (std::string_view kv : kFeatureKnobs) {
    const std::string k(kv);
    infos.push_back({"knob_" + k, "knob " + k + " value (0 if absent)", "knob value"});
    infos.push_back({"log2_" + k, "log2 of knob " + k, "log2"});
  }
  for (std::size_t i = 0; i < kGenericKnobSlots; ++i) {
    const std::string n = std::to_string(i);
    infos.push_back({"gen_knob_" + n, "recorded space: value of knob #" + n + " in sorted-name order", "knob value"});
    infos.push_back({"gen_log2_" + n, "recorded space: sign(v)*log2(1+|v|) of knob #" + n, "log2"});
  }
  return infos;
}

double lg(double x) { return std::log2(std::max(x, 0.0) + 1.0); }
double signed_lg(double x) { return x < 0 ? -lg(-x) : lg(x); }

std::size_t template_slot(const Workload& w) {
  switch (w.family()) {
    case OpFamily::matmul:
      return 0;
    case OpFamily::conv:
      return 1;
    case OpFamily::depthwise:
      return 2;
    case OpFamily::rows:
      return 3;
    case OpFamily::attention:
      return 0;  // two matmuls on the cube, like the matmul template
    case OpFamily::table:
    case OpFamily::custom:
      return 4;
  }
  return 4;
}

double safe(double x) { return std::max(x, 1e-9); }

// Whole-kernel sums over the tile shapes of a plan.
struct PlanTotals {
  double tiles = 0, issued_macs = 0, vector_bytes = 0, l1_l0 = 0, stores = 0, loads = 0;
};

PlanTotals totals(const lowering::KernelPlan& p) {
  PlanTotals t;
  for (const auto& tw : p.tiles) {
    t.tiles += tw.count;
    t.issued_macs += tw.count * tw.steps() * tw.cube_macs;
    t.vector_bytes += tw.count * (tw.steps() * tw.vector_bytes + tw.epilogue_bytes);
    t.l1_l0 += tw.count * tw.steps() * (tw.l0a_bytes + tw.l0b_bytes);
    t.stores += tw.count * (tw.store_bytes + tw.fix_store_bytes);
    t.loads += tw.count * tw.loads * tw.load_bytes();
  }
  return t;
}

// Issue model of a CPU micro-kernel's reduction step, as BLIS's analytical model has it: the
// step lasts the longest of its FMAs over the FMA pipes, one FMA latency (each accumulator
// waits for its own previous FMA) and its loads over the load ports. With as many load ports
// as FMA pipes (two on x86-64 since Haswell and Zen 2, and on Neoverse N1), that is
// accumulators / max(accumulators, chains, loads), where chains = pipes x latency is the
// target's measured fma_chains (8, two pipes of latency 4, where not given);
// docs/host-backend.md. 1 for a plan without a register block.
double issue_efficiency(const lowering::RegisterBlock& r, const Target& t) {
  constexpr int kCommonChains = 8;
  if (r.accumulators <= 0) return 1.0;
  const double chains = t.fma_chains > 0 ? t.fma_chains : kCommonChains;
  return r.accumulators / std::max({r.accumulators, chains, r.loads});
}

// The roofline prior: each resource's share of the plan's work at the rate the
// Target publishes, for the busiest core (tiles spread in waves) or the whole chip.
// It knows no efficiency curve, cache-hit model or pipeline overlap (a CPU register
// block's issue rate aside): those the learned model has to find in the measurements.
struct Roofline {
  double compute = 0, gm = 0, l1_l0 = 0, store = 0, hbm = 0, l2 = 0, epilogue = 0, total = 0;
};

Roofline roofline(const lowering::KernelPlan& p, const PlanTotals& sum, const Target& t, DType dtype) {
  const double cycle_us = 1.0 / (safe(t.clock_ghz) * 1e3);
  const double share = std::ceil(sum.tiles / std::max(1, p.cores)) / safe(sum.tiles);
  Roofline r;
  const double compute_cycles = sum.issued_macs / safe(t.macs_per_cycle(dtype) * issue_efficiency(p.registers, t)) +
                                sum.vector_bytes / safe(t.vector_bytes_per_cycle);
  r.compute = share * compute_cycles * cycle_us;
  r.gm = share * sum.loads / safe(t.mte2_bytes_per_cycle) * cycle_us;
  r.l1_l0 = share * sum.l1_l0 / safe(std::min(t.mte1_a_bytes_per_cycle, t.mte1_b_bytes_per_cycle)) * cycle_us;
  r.store = share * sum.stores / safe(t.mte3_bytes_per_cycle) * cycle_us;
  const double unique = p.batch * (p.a.unique_bytes + p.b.unique_bytes) + p.other_reads + p.out_bytes;
  r.hbm = unique / safe(t.hbm_bytes_per_cycle) * cycle_us;
  r.l2 = t.l2_bytes_per_cycle > 0 ? p.batch * p.operand_read_bytes / t.l2_bytes_per_cycle * cycle_us : 0;
  double separate = 0;
  for (const auto& k : p.separate) separate += k.read_bytes + k.write_bytes;
  r.epilogue = separate / safe(t.hbm_bytes_per_cycle) * cycle_us;
  r.total = std::max({r.compute, r.gm, r.l1_l0, r.store, r.hbm, r.l2}) + r.epilogue + p.kernels() * t.launch_us;
  return r;
}

// The memory levels that get features of their own: the nearest kLevelSlots of a unit's list
// (the NPU's L0A, L0B, L0C, L1, UB and L2; a CPU's registers, L1d, L2 and L3). A level past
// them counts only in max_occupancy.
constexpr int kLevelSlots = 6;

double occupancy(double need, double capacity) { return need / std::max(1.0, capacity); }

void write_geometry(const lowering::KernelPlan& p, const lowering::MemoryLevels& levels, std::span<float> out) {
  auto put = [&](Fixed f, double v) { out[f] = float(v); };
  auto put_lg = [&](Fixed f, double v) { out[f] = float(lg(v)); };
  const lowering::TileWork& tw = p.tiles.front();  // the interior tile
  put_lg(f_load_bytes, tw.load_bytes());
  put_lg(f_copy_a_bytes, tw.copies[0].bytes);
  put_lg(f_copy_b_bytes, tw.copies[1].bytes);
  put_lg(f_copy_a_segment, tw.copies[0].segment_bytes);
  put_lg(f_copy_b_segment, tw.copies[1].segment_bytes);
  bool a512 = true, a32 = true;
  for (const auto& c : tw.copies) {
    if (c.bytes <= 0) continue;
    a512 = a512 && std::fmod(c.segment_bytes, 512.0) == 0;
    a32 = a32 && std::fmod(c.segment_bytes, 32.0) == 0;
  }
  put(f_segments_512_aligned, a512 ? 1 : 0);
  put(f_segments_32_aligned, a32 ? 1 : 0);
  put_lg(f_l0_step_bytes, tw.l0a_bytes + tw.l0b_bytes);
  put_lg(f_step_macs, tw.cube_macs);
  put_lg(f_step_vector_bytes, tw.vector_bytes);
  put_lg(f_tile_out_elems, tw.out_elems);
  double max_occ = 0;
  for (int i = 0; i < levels.count; ++i) {
    const double occ = occupancy(p.footprint.bytes[std::size_t(i)], levels.at[std::size_t(i)].bytes);
    if (i < kLevelSlots) put(Fixed(f_level0_occupancy + i), occ);
    max_occ = std::max(max_occ, occ);
  }
  put(f_max_occupancy, max_occ);
  const double load_flops = 2 * tw.steps_per_load * (tw.cube_macs + tw.vector_bytes / p.elem_bytes);
  put_lg(f_tile_intensity, load_flops / std::max(1.0, tw.load_bytes()));
  put_lg(f_k_iters, tw.steps());
  put_lg(f_gm_loads, tw.loads);
  put_lg(f_steps_per_load, tw.steps_per_load);
}

void write_traffic(const lowering::KernelPlan& p, const PlanTotals& sum, const Target& t,
                   const lowering::MemoryLevels& levels, double compulsory, std::span<float> out) {
  auto put = [&](Fixed f, double v) { out[f] = float(v); };
  auto put_lg = [&](Fixed f, double v) { out[f] = float(lg(v)); };
  const double cores = std::max(1, p.cores);
  const double waves = sum.tiles / cores;
  put_lg(f_tiles, sum.tiles);
  put(f_waves, waves);
  put_lg(f_log_waves, waves);
  put(f_tail_efficiency, sum.tiles / (std::ceil(waves) * cores));
  put(f_padding_waste, sum.issued_macs > 0 ? 1 - (p.flops / 2) / std::max(p.flops / 2, sum.issued_macs) : 0);
  const double reads = p.batch * p.operand_read_bytes + p.other_reads;
  double separate = 0, separate_writes = 0;
  for (const auto& k : p.separate) separate += k.read_bytes + k.write_bytes, separate_writes += k.write_bytes;
  put_lg(f_operand_read_bytes, p.batch * p.operand_read_bytes);
  put_lg(f_unique_read_bytes, p.batch * (p.a.unique_bytes + p.b.unique_bytes) + p.other_reads);
  put_lg(f_gm_write_bytes, p.out_bytes + separate_writes);
  put_lg(f_separate_kernel_bytes, separate);
  put_lg(f_l1_l0_bytes, sum.l1_l0);
  put_lg(f_traffic_ratio, (reads + p.out_bytes + separate) / std::max(1.0, compulsory));
  put_lg(f_a_rereads, p.a.rereads);
  put_lg(f_b_rereads, p.b.rereads);
  const double llc = std::max(1.0, levels.count > 0 ? levels.at[std::size_t(levels.count - 1)].bytes : 0.0);
  put(f_a_reuse_distance_llc, p.a.rereads > 0 ? std::log2(safe(p.a.distance_bytes) / llc) : 0);
  put(f_b_reuse_distance_llc, p.b.rereads > 0 ? std::log2(safe(p.b.distance_bytes) / llc) : 0);
  put(f_kernels, p.kernels());
  put(f_fused_ops, double(p.fusion.fused.size()));
  put(f_unfused_ops, double(p.fusion.unfused.size()));
  put(f_output_on_chip, p.tiles.front().handover ? 1 : 0);
  put(f_halo_overhead, p.a.unique_bytes > 0 ? p.a_sweep_bytes / p.a.unique_bytes : 1);
  put(f_copy_depth_hides, p.depth >= 2 ? 1 : 0);
  put(f_buffers_in_flight, p.depth);
  const lowering::RegisterBlock& r = p.registers;
  put(f_reg_accumulators, r.accumulators);
  put(f_reg_loads_per_fma, r.accumulators > 0 ? r.loads / r.accumulators : 0);
  put(f_reg_issue_efficiency, issue_efficiency(r, t));
}

void write_roofline(const Roofline& r, double floor, std::span<float> out) {
  auto put_lg = [&](Fixed f, double v) { out[f] = float(lg(v)); };
  put_lg(f_est_compute_us, r.compute);
  put_lg(f_est_gm_us, r.gm);
  put_lg(f_est_l1_l0_us, r.l1_l0);
  put_lg(f_est_store_us, r.store);
  put_lg(f_est_hbm_us, r.hbm);
  put_lg(f_est_l2_us, r.l2);
  put_lg(f_est_epilogue_us, r.epilogue);
  put_lg(f_est_time_us, r.total);
  out[f_est_roofline_fraction] = float(floor / std::max(r.total, 1e-9));
  const double transfer = std::max({r.gm, r.l1_l0, r.store, r.hbm, r.l2, 1e-9});
  out[f_compute_transfer_ratio] = float(std::log2((r.compute + 1e-9) / transfer));
}

struct GemmDims {
  double m = 0, n = 0, k = 0, batch = 1;
};

GemmDims gemm_dims(const Workload& w) {
  auto d = [&](const char* n) { return double(w.dim(n)); };
  switch (w.family()) {
    case OpFamily::matmul:
      return {d("M"), d("N"), d("K"), w.batch()};
    case OpFamily::conv:
      return {double(w.out_h() * w.out_w()), d("K"), d("C") * d("R") * d("S"), d("N")};
    case OpFamily::depthwise:
      return {double(w.out_h() * w.out_w()), d("C"), d("R") * d("S"), d("N")};
    case OpFamily::rows:
      return {d("M"), d("N"), 1, 1};
    case OpFamily::attention:
      return {d("S"), d("L"), d("D"), d("B")};
    case OpFamily::table:
    case OpFamily::custom:
      return {};
  }
  return {};
}

std::vector<float> context_block(const Workload& w, const Target& t, const lowering::MemoryLevels& levels) {
  std::vector<float> c(kTotal, 0.0f);
  c[f_tmpl_matmul + template_slot(w)] = 1.0f;
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
  for (int i = 0; i < std::min(levels.count, kLevelSlots); ++i) {
    c[f_tg_level0_bytes + std::size_t(i)] = float(lg(levels.at[std::size_t(i)].bytes));
  }
  c[f_tg_launch_us] = float(t.launch_us);
  return c;
}

void write_named_knobs(const Schedule& s, std::span<float> out) {
  for (std::size_t i = 0; i < kFeatureKnobs.size(); ++i) {
    const auto it = s.values().find(std::string(kFeatureKnobs[i]));
    if (it == s.values().end()) continue;
    out[kNamedBase + 2 * i] = float(it->second);
    out[kNamedBase + 2 * i + 1] = float(signed_lg(double(it->second)));
  }
}

void write_generic_knobs(const Schedule& s, std::span<float> out) {
  if (s.values().size() > kGenericKnobSlots) {
    throw_bad_input("cost model features: recorded schedule has " + std::to_string(s.values().size()) +
                    " knobs; at most " + std::to_string(kGenericKnobSlots) + " are supported");
  }
  std::size_t i = 0;
  for (const auto& [name, value] : s.values()) {
    out[kGenericBase + 2 * i] = float(value);
    out[kGenericBase + 2 * i + 1] = float(signed_lg(double(value)));
    ++i;
  }
}

// A schedule the plan can be built from: missing knobs take the first value of
// their list, and values that would make no tiling (< 1, or beyond the order and
// fusion ranges) are clamped, so a partial or hand-written schedule still ranks.
// The host-only knobs (register block, threads) are kept when given, at least 1.
Schedule lowerable(const Schedule& s, const std::vector<Knob>& space_knobs) {
  Schedule out;
  for (const auto& k : space_knobs) {
    std::int64_t v = s.get_or(k.name, k.values.front());
    if (k.name == knobs::tile_order)
      v = std::clamp<std::int64_t>(v, 0, 2);
    else if (k.name == knobs::fusion_level)
      v = std::clamp<std::int64_t>(v, 0, 3);
    else
      v = std::max<std::int64_t>(v, 1);
    out.set(k.name, v);
  }
  for (std::string_view kv : knobs::host_only) {
    const std::string k(kv);
    if (s.has(k)) out.set(k, std::max<std::int64_t>(s.at(k), 1));
  }
  return out;
}

}  // namespace

int feature_version() { return kFeatureVersion; }

bool has_plan_features(const Workload& w) { return lowering::can_lower(w); }

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
    : workload_(workload),
      target_(target),
      generic_(!lowering::can_lower(workload)),
      levels_(lowering::compute_unit(target).levels(target)),
      context_(context_block(workload, target, levels_)),
      floor_us_(generic_ ? 0.0 : roofline_floor_us(workload, target)) {
  if (generic_) return;
  compulsory_bytes_ = workload.compulsory_bytes();
  knobs_ = lowering::knobs_for(workload, target);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (const auto& k : knobs_) {
    const std::int64_t hi = k.name == knobs::tile_order ? 2 : k.name == knobs::fusion_level ? 3 : kMax;
    ranges_.push_back({k.name, hi == kMax ? 1 : 0, hi, true});
  }
  for (std::string_view k : knobs::host_only) {
    if (std::none_of(knobs_.begin(), knobs_.end(), [&](const Knob& x) { return x.name == k; })) {
      ranges_.push_back({std::string(k), 1, kMax, false});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const KnobRange& a, const KnobRange& b) { return a.name < b.name; });
}

// Whether lowerable(s, knobs_) is s itself: every space knob given and in its range, and no
// other knob but host-only ones >= 1. Walks both name-sorted lists once.
bool Featurizer::lowerable_as_is(const Schedule& s) const {
  auto r = ranges_.begin();
  for (const auto& [name, value] : s.values()) {
    while (r != ranges_.end() && r->name < name) {
      if (r->required) return false;  // a space knob the schedule lacks
      ++r;
    }
    if (r == ranges_.end() || r->name != name || value < r->lo || value > r->hi) return false;
    ++r;
  }
  for (; r != ranges_.end(); ++r) {
    if (r->required) return false;
  }
  return true;
}

void Featurizer::write(const Schedule& schedule, std::span<float> out) const {
  std::copy(context_.begin(), context_.end(), out.begin());
  if (generic_) {
    write_generic_knobs(schedule, out);
    return;
  }
  write_named_knobs(schedule, out);
  Schedule completed;
  const bool as_is = lowerable_as_is(schedule);
  if (!as_is) completed = lowerable(schedule, knobs_);
  const lowering::KernelPlan plan = lowering::plan_kernel(workload_, target_, as_is ? schedule : completed);
  if (plan.tiles.empty()) return;  // a registered op whose plan has no tiles: knobs only
  const PlanTotals sum = totals(plan);
  write_geometry(plan, levels_, out);
  write_traffic(plan, sum, target_, levels_, compulsory_bytes_, out);
  write_roofline(roofline(plan, sum, target_, workload_.dtype()), floor_us_, out);
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

FeatureMatrix featurize(const Workload& workload, const Target& target, std::span<const Schedule> schedules) {
  return Featurizer(workload, target).featurize(schedules);
}

std::vector<float> features(const Workload& workload, const Target& target, const Schedule& schedule) {
  std::vector<float> row(kTotal);
  Featurizer(workload, target).write(schedule, row);
  return row;
}

}  // namespace atvoss::costmodel
