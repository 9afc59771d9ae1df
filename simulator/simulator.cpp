// Map: simulate() = lowering::plan_kernel() (tile shapes, bytes, footprints, the
// fusion split) -> chip_traffic() (transfer.hpp: L2 reuse, per-core share of
// the GM path) -> stage_costs() turns each tile shape's bytes and work into pipe
// cycles -> simulate_stream() per tile shape (pipeline.hpp: the event model of one
// core) -> compose_waves() (tiles over cores, last wave idle cores, chip-level
// bandwidth and FLOP roofline) -> unfused epilogue kernels -> noise (noise.hpp) ->
// Measurement with Profile.
#include "simulator/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/roofline.hpp"
#include "lowering/lowering.hpp"
#include "simulator/internal/noise.hpp"
#include "simulator/internal/pipeline.hpp"
#include "simulator/internal/transfer.hpp"

namespace atvoss::simulator {
namespace {

using lowering::KernelPlan;
using lowering::TileWork;

// Handing a kept tile over to the next op: one set/wait flag pair and a
// descriptor write on the scalar unit.
constexpr double kHandoverCycles = 64;

struct Traffic {
  double l2_reads = 0;             // bytes MTE2 fetches from GM (L2 hits included)
  double hbm_reads = 0;            // bytes that come from DRAM
  double writes = 0;               // bytes written to GM
  double in_cycles_per_byte = 0;   // a core's share of the read path
  double out_cycles_per_byte = 0;  // a core's share of the write path
  double first_byte_cycles = 0;    // latency before the first load's data arrives
};

Traffic chip_traffic(const Target& t, const KernelPlan& p, double active) {
  Traffic tr;
  const ReuseResult r = operand_reuse(t, p);
  tr.l2_reads = r.l2_read_bytes + p.other_reads;
  tr.hbm_reads = r.hbm_read_bytes + p.other_reads;
  tr.writes = p.out_bytes;
  const double miss = tr.l2_reads > 0 ? tr.hbm_reads / tr.l2_reads : 1;
  tr.in_cycles_per_byte = std::max(1.0 / t.mte2_bytes_per_cycle, active * miss / t.hbm_bytes_per_cycle);
  if (t.l2_bytes_per_cycle > 0) {
    tr.in_cycles_per_byte = std::max(tr.in_cycles_per_byte, active / t.l2_bytes_per_cycle);
  }
  tr.out_cycles_per_byte = std::max(1.0 / t.mte3_bytes_per_cycle, active / t.hbm_bytes_per_cycle);
  tr.first_byte_cycles = miss * t.hbm_latency_cycles + (1 - miss) * t.l2_latency_cycles;
  return tr;
}

struct ShapeRun {
  double count = 0;
  StreamResult stream;
};

// Vector units that serve one cube core (two AIV per AIC on split parts).
double vector_per_cube(const Target& t) { return std::max(1.0, double(t.vector_cores) / std::max(1, t.ai_cores)); }

// MTE3 cycles of a tile's store. Rows shorter than the output's (a transpose's tile_m
// elements) lose what a GM copy of such rows loses, and one under a 32 B block still
// moves the whole block.
double store_cycles(const TileWork& tw, const Traffic& tr) {
  double cycles = tw.store_bytes * tr.out_cycles_per_byte;
  if (tw.store_segment_bytes > 0 && tw.store_bytes > 0) {
    const double block = std::min(1.0, tw.store_segment_bytes / 32.0);
    cycles /= copy_efficiency(tw.store_bytes, tw.store_segment_bytes) * block;
  }
  return cycles;
}

// Pipe cycles of one tile shape: the plan's bytes and work at the target's rates.
StageCosts stage_costs(const Target& t, const KernelPlan& p, const TileWork& tw, const Traffic& tr, double active,
                       DType dtype) {
  StageCosts c;
  c.loads = tw.loads;
  c.steps_per_load = tw.steps_per_load;
  c.mte2_per_load = load_cycles(t, tw.copies, tr.in_cycles_per_byte);
  c.mte1_per_step = tw.l0a_bytes / t.mte1_a_bytes_per_cycle + tw.l0b_bytes / t.mte1_b_bytes_per_cycle +
                    tw.l0_transfers * t.mte1_start_cycles;
  c.cube_per_step = tw.cube_macs / t.macs_per_cycle(dtype);
  c.vec_per_step = tw.vector_bytes / t.vector_bytes_per_cycle;
  const double vpc = p.uses_cube ? vector_per_cube(t) : 1.0;
  double fix = 0;
  if (p.uses_cube) {
    fix = t.fixpipe_bytes_per_cycle > 0 ? tw.out_elems * p.elem_bytes / t.fixpipe_bytes_per_cycle
                                        : tw.out_elems * 4 / t.vector_bytes_per_cycle;
  }
  c.fix_per_tile = std::max(fix, tw.fix_store_bytes * active / t.hbm_bytes_per_cycle);
  c.epi_per_tile = tw.epilogue_bytes / (t.vector_bytes_per_cycle * vpc) +
                   tw.workspace_bytes / (t.mte2_bytes_per_cycle * vpc) + (tw.handover ? kHandoverCycles : 0);
  c.mte3_per_tile = store_cycles(tw, tr);
  return c;
}

std::vector<ShapeRun> run_shapes(const Target& t, const KernelPlan& p, const Traffic& tr, double active, DType dtype) {
  std::vector<ShapeRun> runs;
  for (const TileWork& tw : p.tiles) {
    runs.push_back({tw.count, simulate_stream(stage_costs(t, p, tw, tr, active, dtype), p.depth)});
  }
  return runs;
}

// Busiest core: ceil(tiles / cores) tiles of the average mix, or the slowest
// single tile when there are fewer tiles than cores, plus one pipeline fill.
struct CoreTime {
  double cycles = 0, compute = 0, dma = 0, mte2 = 0;
};

CoreTime compose_waves(const KernelPlan& p, const std::vector<ShapeRun>& runs) {
  const double tiles = p.tile_count();
  const double waves = std::ceil(tiles / p.cores);
  double work = 0, compute = 0, dma = 0, mte2 = 0, slowest = 0, fill = 0, most = 0;
  for (const auto& r : runs) {
    const auto& s = r.stream;
    work += r.count * s.period;
    compute += r.count * (s.cube_busy + s.vec_busy);
    dma += r.count * (s.mte2_busy + s.mte1_busy + s.out_busy);
    mte2 += r.count * s.mte2_busy;
    slowest = std::max(slowest, s.period);
    if (r.count > most) {
      most = r.count;
      fill = std::max(0.0, s.first_tile - s.period);
    }
  }
  const double per_tile = waves / tiles;  // share of the total work the busiest core does
  CoreTime ct;
  ct.cycles = std::max(work * per_tile, slowest) + fill;
  ct.compute = compute * per_tile;
  ct.dma = dma * per_tile;
  ct.mte2 = mte2 * per_tile;
  return ct;
}

// An epilogue op run as its own kernel: the output tensor goes GM -> UB -> GM.
double separate_kernel_cycles(const Target& t, const lowering::SeparateKernel& k) {
  const bool in_l2 = 2 * k.write_bytes <= double(t.l2_bytes) && t.l2_bytes_per_cycle > 0;
  const double read_bw = in_l2 ? t.l2_bytes_per_cycle : t.hbm_bytes_per_cycle;
  const double mem =
      std::max(k.read_bytes / read_bw, (k.write_bytes + (in_l2 ? 0 : k.read_bytes)) / t.hbm_bytes_per_cycle);
  const double per_core = k.read_bytes / (t.vector_cores * t.mte2_bytes_per_cycle);
  const double vec = k.vector_bytes / (t.vector_cores * t.vector_bytes_per_cycle);
  return std::max({mem, per_core, vec});
}

Measurement simulate_valid(const Target& t, const Workload& w, const KernelPlan& p) {
  const double tiles = p.tile_count();
  const double active = std::min<double>(p.cores, tiles);
  const Traffic tr = chip_traffic(t, p, active);
  const auto runs = run_shapes(t, p, tr, active, w.dtype());
  CoreTime core = compose_waves(p, runs);
  core.cycles += tr.first_byte_cycles;  // the pipeline fills once per kernel

  // Chip-level limits every schedule obeys, whatever its per-core pipeline.
  const double peak_cycles = p.flops / (2 * t.macs_per_cycle(w.dtype()) * t.ai_cores);
  const double hbm_cycles = (tr.hbm_reads + tr.writes) / t.hbm_bytes_per_cycle;
  const double l2_cycles = t.l2_bytes_per_cycle > 0 ? tr.l2_reads / t.l2_bytes_per_cycle : 0;
  const double kernel = std::max({core.cycles, hbm_cycles, l2_cycles, p.uses_cube ? peak_cycles : 0});

  double epilogue_cycles = 0, epilogue_bytes = 0;
  for (const auto& k : p.separate) {
    epilogue_cycles += separate_kernel_cycles(t, k);
    epilogue_bytes += k.tensor_bytes + k.write_bytes;
  }
  const int kernels = p.kernels();

  Measurement m;
  Profile& pr = m.profile;
  pr.kernels = kernels;
  pr.launch_us = kernels * t.launch_us;
  // Cube and vector may overlap (a fused epilogue under the next tile's MMADs),
  // so their busy time is capped at the core's time; the parts then add up.
  const double compute = std::min(core.compute, core.cycles);
  pr.compute_us = t.cycles_to_us(compute);
  const double exposed = core.cycles - compute;
  const double dma_core = std::min(exposed, core.dma);
  pr.sync_wait_us = t.cycles_to_us(exposed - dma_core);
  pr.dma_us = t.cycles_to_us(dma_core + (kernel - core.cycles) + epilogue_cycles);
  m.time_us = pr.compute_us + pr.dma_us + pr.sync_wait_us + pr.launch_us;
  double loaded = 0, consumed = 0;
  for (const auto& tw : p.tiles) {
    loaded += tw.count * tw.load_bytes() * tw.loads;
    consumed += tw.count * tw.consumed_bytes;
  }
  pr.l1_hit_rate = consumed > 0 ? std::clamp(1 - loaded / consumed, 0.0, 1.0) : 0;
  pr.dma_utilisation = std::clamp(core.mte2 / kernel, 0.0, 1.0);
  pr.cube_utilisation = p.uses_cube ? std::clamp(p.flops / (t.peak_flops(w.dtype()) * m.time_us * 1e-6), 0.0, 1.0) : 0;
  pr.gm_bytes = tr.l2_reads + tr.writes + epilogue_bytes;
  pr.peak_workspace_bytes = p.footprint.peak();
  return m;
}

// The model itself never beats physics (the chip-level roofline terms of
// simulate_valid); a downward jitter could, so jittered repeats are clamped to
// the floor. Noise 0 returns the model's own time, which the tests check.
// The workload key joins the schedule key so that two ops measured with the
// same schedule and seed do not share their jitter.
void add_noise(Measurement& m, const Workload& w, const Schedule& s, const SimOptions& o, double floor_us) {
  const int repeat = std::max(1, o.repeat);
  const std::string key = o.noise > 0 ? w.key() + s.key() : std::string();
  m.repeats.clear();
  for (int r = 0; r < repeat; ++r) {
    const double t = m.time_us * noise_factor(o.seed, key, r, o.noise);
    m.repeats.push_back(o.noise > 0 ? std::max(floor_us, t) : t);
  }
  m.time_us = median(m.repeats);
}

}  // namespace

double physics_floor(const Target& target, const Workload& workload) { return roofline_floor_us(workload, target); }

ScheduleSpace space_for(const Workload& workload, const Target& target) {
  return lowering::space_for(workload, target);
}

Schedule default_schedule(const Workload& workload, const Target& target) {
  return lowering::default_schedule(workload, target);
}

Measurement simulate(const Target& target, const Workload& workload, const Schedule& schedule,
                     const SimOptions& options) {
  if (options.noise < 0 || !std::isfinite(options.noise)) {
    throw_bad_input("simulate: noise must be >= 0, got " + std::to_string(options.noise));
  }
  if (options.repeat < 1) {
    throw_bad_input("simulate: repeat must be >= 1, got " + std::to_string(options.repeat));
  }
  const std::vector<Knob> knobs = lowering::knobs_for(workload, target);
  const Verdict member = ScheduleSpace(knobs, nullptr).check(schedule);
  if (!member.ok) throw_bad_input("schedule: " + member.reason);
  const KernelPlan plan = lowering::plan_kernel(workload, target, schedule);
  if (plan.verdict.ok && plan.tiles.empty()) {
    return Measurement::failed(Status::invalid, "lowering: the plan has no tiles");
  }
  if (!plan.verdict.ok) {
    Measurement m = Measurement::failed(Status::invalid, plan.verdict.reason);
    m.profile.peak_workspace_bytes = plan.footprint.peak();
    return m;
  }
  Measurement m = simulate_valid(target, workload, plan);
  add_noise(m, workload, schedule, options, roofline_floor_us(workload, target));
  return m;
}

}  // namespace atvoss::simulator
