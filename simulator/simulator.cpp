// Map: simulate() = plan_kernel() (tiling.hpp: tile shapes, footprints, the
// fusion split) -> chip_traffic() (transfer.hpp: L2 reuse, per-core share of
// the GM path) -> simulate_stream() per tile shape (pipeline.hpp: the event
// model of one core) -> compose_waves() (tiles over cores, last wave idle
// cores, chip-level bandwidth and FLOP roofline) -> unfused epilogue kernels ->
// noise (noise.hpp) -> Measurement with Profile.
#include "simulator/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/recorded_space.hpp"
#include "simulator/fusion.hpp"
#include "simulator/noise.hpp"
#include "simulator/pipeline.hpp"
#include "simulator/tiling.hpp"
#include "simulator/transfer.hpp"

namespace atvoss::simulator {
namespace {

struct Traffic {
  double l2_reads = 0;    // bytes MTE2 fetches from GM (L2 hits included)
  double hbm_reads = 0;   // bytes that come from DRAM
  double writes = 0;      // bytes written to GM
  double in_cycles_per_byte = 0;   // a core's share of the read path
  double out_cycles_per_byte = 0;  // a core's share of the write path
  double first_byte_cycles = 0;    // latency before the first load's data arrives
};

Traffic chip_traffic(const Target& t, const KernelPlan& p, double active) {
  Traffic tr;
  const ReuseResult r = operand_reuse(t, p.reuse);
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

std::vector<ShapeRun> run_shapes(const Target& t, const KernelPlan& p, const Traffic& tr,
                                 double active) {
  std::vector<ShapeRun> runs;
  for (const TileWork& tw : p.tiles) {
    StageCosts c;
    c.loads = tw.loads;
    c.steps_per_load = tw.steps_per_load;
    c.mte2_per_load = load_cycles(t, tw.copies, tr.in_cycles_per_byte);
    c.mte1_per_step = tw.mte1_cycles;
    c.cube_per_step = tw.cube_cycles;
    c.vec_per_step = tw.vec_cycles;
    c.fix_per_tile = std::max(tw.fix_cycles, tw.fix_store_bytes * active / t.hbm_bytes_per_cycle);
    c.epi_per_tile = tw.epi_cycles;
    c.mte3_per_tile = tw.store_bytes * tr.out_cycles_per_byte;
    runs.push_back({tw.count, simulate_stream(c, p.depth)});
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
double epilogue_kernel_cycles(const Target& t, const std::string& op, double out_bytes, double b) {
  double reads = out_bytes * (1 + epilogue_extra_inputs(op));
  if (op == "layernorm") reads *= 2;  // statistics pass, then normalise pass
  const bool in_l2 = 2 * out_bytes <= double(t.l2_bytes) && t.l2_bytes_per_cycle > 0;
  const double read_bw = in_l2 ? t.l2_bytes_per_cycle : t.hbm_bytes_per_cycle;
  const double mem = std::max(reads / read_bw, (out_bytes + (in_l2 ? 0 : reads)) / t.hbm_bytes_per_cycle);
  const double per_core = reads / (t.vector_cores * t.mte2_bytes_per_cycle);
  const double vec = out_bytes / b * epilogue_ops_per_element(op) /
                     (t.vector_cores * t.vector_bytes_per_cycle / b);
  return std::max({mem, per_core, vec});
}

Measurement simulate_valid(const Target& t, const Workload& w, const KernelPlan& p) {
  const double tiles = p.tile_count();
  const double active = std::min<double>(p.cores, tiles);
  const Traffic tr = chip_traffic(t, p, active);
  const auto runs = run_shapes(t, p, tr, active);
  CoreTime core = compose_waves(p, runs);
  core.cycles += tr.first_byte_cycles;  // the pipeline fills once per kernel

  // Chip-level limits every schedule obeys, whatever its per-core pipeline.
  const double peak_cycles = p.flops / (2 * t.macs_per_cycle(w.dtype()) * t.ai_cores);
  const double hbm_cycles = (tr.hbm_reads + tr.writes) / t.hbm_bytes_per_cycle;
  const double l2_cycles = t.l2_bytes_per_cycle > 0 ? tr.l2_reads / t.l2_bytes_per_cycle : 0;
  const double kernel = std::max({core.cycles, hbm_cycles, l2_cycles, p.uses_cube ? peak_cycles : 0});

  double epilogue_cycles = 0, epilogue_bytes = 0;
  const double b = dtype_bytes(w.dtype());
  for (const auto& op : p.fusion.unfused) {
    epilogue_cycles += epilogue_kernel_cycles(t, op, p.out_bytes, b);
    epilogue_bytes += p.out_bytes * (2 + epilogue_extra_inputs(op));
  }
  const int kernels = 1 + int(p.fusion.unfused.size());

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
  pr.cube_utilisation =
      p.uses_cube ? std::clamp(p.flops / (t.peak_flops(w.dtype()) * m.time_us * 1e-6), 0.0, 1.0) : 0;
  pr.gm_bytes = tr.l2_reads + tr.writes + epilogue_bytes;
  pr.peak_workspace_bytes = p.footprint.peak();
  return m;
}

// Lower bound no schedule may beat (DESIGN.md): max(FLOPs / peak, compulsory
// bytes / HBM bandwidth) + one launch.
double physics_floor_us(const Target& t, const Workload& w) {
  const double flops_s = w.flops() / t.peak_flops(w.dtype());
  const double bytes_s = w.compulsory_bytes() / t.hbm_bytes_per_second();
  return std::max(flops_s, bytes_s) * 1e6 + t.launch_us;
}

// The model itself never beats physics (the chip-level roofline terms of
// simulate_valid); a downward jitter could, so jittered repeats are clamped to
// the floor. Noise 0 returns the model's own time, which the tests check.
// The workload key joins the schedule key so that two ops measured with the
// same schedule and seed do not share their jitter.
void add_noise(Measurement& m, const Workload& w, const Schedule& s, const SimOptions& o,
               double floor_us) {
  const int repeat = std::max(1, o.repeat);
  const std::string key = o.noise > 0 ? w.key() + s.key() : std::string();
  m.repeats.clear();
  for (int r = 0; r < repeat; ++r) {
    const double t = m.time_us * noise_factor(o.seed, key, r, o.noise);
    m.repeats.push_back(o.noise > 0 ? std::max(floor_us, t) : t);
  }
  m.time_us = median(m.repeats);
}

Measurement simulate_recorded(const Workload& w, const Schedule& s) {
  return RecordedSpace::load(w.table())->measure(s);
}

// Preferred value of a knob in a vendor-style default tiling.
std::int64_t preferred(const std::string& knob, const Workload& w) {
  if (knob == "tile_m") return w.is_matmul_like() ? 128 : 8;
  if (knob == "tile_n") return w.is_matmul_like() || w.is_conv() ? 128 : 1024;
  if (knob == "tile_k") return 64;
  if (knob == "k_steps") return 2;
  if (knob == "async_copy_depth") return 2;
  if (knob == "fusion_level") return 1;
  if (knob == "tile_h" || knob == "tile_w") return 16;
  if (knob == "tile_c") return 64;
  return 0;  // tile_order: row-major
}

}  // namespace

double physics_floor(const Target& target, const Workload& workload) {
  return physics_floor_us(target, workload);
}

ScheduleSpace space_for(const Workload& workload, const Target& target) {
  if (workload.op() == "recorded") return RecordedSpace::load(workload.table())->space();
  return ScheduleSpace(knobs_for(workload, target), [workload, target](const Schedule& s) {
    return plan_kernel(workload, target, s).verdict;
  });
}

Schedule default_schedule(const Workload& workload, const Target& target) {
  const ScheduleSpace space = space_for(workload, target);
  // Walk the space with each knob's values ordered by closeness to the vendor
  // preference, first knob outermost; the first valid point is the default.
  std::vector<std::vector<int>> order;
  for (const auto& k : space.knobs()) {
    std::vector<int> idx(k.values.size());
    std::iota(idx.begin(), idx.end(), 0);
    const bool size_knob = k.name.rfind("tile_", 0) == 0 && k.name != "tile_order";
    const double want = double(preferred(k.name, workload));
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
  throw Error(ErrorKind::bad_input, "simulator: no valid schedule for " + workload.label() +
                                        " on " + target.name);
}

Measurement simulate(const Target& target, const Workload& workload, const Schedule& schedule,
                     const SimOptions& options) {
  if (workload.op() == "recorded") return simulate_recorded(workload, schedule);
  if (options.noise < 0 || !std::isfinite(options.noise)) {
    throw_bad_input("simulate: noise must be >= 0, got " + std::to_string(options.noise));
  }
  if (options.repeat < 1) {
    throw_bad_input("simulate: repeat must be >= 1, got " + std::to_string(options.repeat));
  }
  const std::vector<Knob> knobs = knobs_for(workload, target);
  const Verdict member = ScheduleSpace(knobs, nullptr).check(schedule);
  if (!member.ok) throw_bad_input("schedule: " + member.reason);
  const KernelPlan plan = plan_kernel(workload, target, schedule);
  if (!plan.verdict.ok) {
    Measurement m = Measurement::failed(Status::invalid, plan.verdict.reason);
    m.profile.peak_workspace_bytes = plan.footprint.peak();
    return m;
  }
  Measurement m = simulate_valid(target, workload, plan);
  add_noise(m, workload, schedule, options, physics_floor_us(target, workload));
  return m;
}

}  // namespace atvoss::simulator
