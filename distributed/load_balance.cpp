#include "distributed/load_balance.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace atvoss::distributed {
namespace {

// The slowest replica's step: `work` of each kernel's batch at `speed`.
execution::ExecGraph scaled(const execution::ExecGraph& g, double work, double speed) {
  execution::ExecGraph out;
  for (const auto& b : g.buffers()) out.add_buffer(b.name, b.bytes, b.output);
  for (const auto& n : g.nodes()) out.add_node(n.name, n.op, n.cost.share(work, speed), n.reads, n.writes, n.training);
  return out;
}

void check(const DataParallelOptions& o, int units, const std::vector<SpeedChange>& changes) {
  if (units < 1) throw_bad_input("load balance: field 'units_per_device' must be >= 1");
  for (const auto& c : changes) {
    if (!(c.speed > 0)) throw_bad_input("load balance: field 'speed' must be > 0");
    if (c.device < 0 || c.device >= o.devices) {
      throw_bad_input("load balance: field 'device' must be in 0.." + std::to_string(o.devices - 1));
    }
  }
}

}  // namespace

std::vector<int> deal_units(const std::vector<double>& speeds, int units_per_device) {
  std::vector<int> units(speeds.size(), 0);
  const int total = units_per_device * int(speeds.size());
  for (int u = 0; u < total; ++u) {
    int best = 0;
    for (int d = 1; d < int(speeds.size()); ++d) {
      if ((units[d] + 1) / speeds[d] < (units[best] + 1) / speeds[best]) best = d;
    }
    ++units[best];
  }
  return units;
}

BalancedRun run_balanced(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                         const DataParallelOptions& options, int steps, int units_per_device,
                         const std::vector<SpeedChange>& changes, bool balance) {
  check(options, units_per_device, changes);
  std::vector<double> speeds(options.devices, 1.0), measured = speeds;
  std::map<double, double> cache;  // slowest factor -> step time (the factor repeats)
  BalancedRun out;
  for (int k = 0; k < steps; ++k) {
    for (const auto& c : changes) {
      if (c.step == k) speeds[c.device] = c.speed;
    }
    const std::vector<int> units =
        balance ? deal_units(measured, units_per_device) : std::vector<int>(options.devices, units_per_device);
    int slowest = 0;
    for (int d = 1; d < options.devices; ++d) {
      if (units[d] / speeds[d] > units[slowest] / speeds[slowest]) slowest = d;
    }
    const double work = double(units[slowest]) / units_per_device, factor = work / speeds[slowest];
    if (!cache.count(factor)) {
      const execution::ExecGraph g = with_data_parallel(scaled(step, work, speeds[slowest]), topology, options).graph;
      cache[factor] = execution::simulate(g, device).makespan_us;
    }
    out.step_us.push_back(cache[factor]);
    out.units.push_back(units);
    out.total_us += cache[factor];
    measured = speeds;  // what this step's timings show the runtime
  }
  return out;
}

}  // namespace atvoss::distributed
